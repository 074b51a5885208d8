"""The command line and the demo the README's first command runs."""

from __future__ import annotations

import json

import pytest
from engramdb import cli
from engramdb.demo import run_demo


def test_demo_runs_every_kernel_family_and_checks_itself() -> None:
    lines: list[str] = []
    results = run_demo(rows=3000, dim=48, repeat=1, echo=lines.append)
    text = "\n".join(lines)
    for name in ("dense top-10, 1 query", "int8 + f32 rescore", "hamming", "jaccard", "maxsim", "k-means", "centroid"):
        assert name in text
    assert results["int8_recall_at_10"] >= 0.95
    assert all(v > 0 for k, v in results.items() if k != "int8_recall_at_10")


def test_capabilities_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["capabilities"]) == 0
    caps = json.loads(capsys.readouterr().out)
    assert caps["isa"] in caps["available"]


def test_demo_refuses_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--rows", "10"]) == 2
    assert "--rows must be >= 1000" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["no-such-command"])
