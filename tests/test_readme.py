"""The README's Python examples run as written and do what their comments say."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks() -> list[str]:
    found = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(found) >= 2, "README lost its store and kernel examples"
    return found


def test_store_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # it writes ./memory
    code = next(b for b in blocks() if "engramdb.open" in b)
    exec(compile(code, str(README), "exec"), {})  # noqa: S102 - the README's own example
    now, past = capsys.readouterr().out.strip().split(" | ")
    assert now == "Maya runs a sourdough stall at the market"  # the superseded job is not current
    assert past == "Maya works at the bakery"  # but it was true on April 1st
    assert (tmp_path / "memory" / "manifest.json").exists()


def test_kernel_example() -> None:
    code = next(b for b in blocks() if "kernels.topk" in b)
    scope: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), scope)  # noqa: S102 - the README's own example
    idx, scores, x = scope["idx"], scope["scores"], scope["x"]
    assert isinstance(x, np.ndarray) and isinstance(idx, np.ndarray)
    exact = np.argsort(-(x @ x[0]))[:10]  # the last line: int8 shortlist rescored == exact float32
    assert set(idx.tolist()) == set(exact.tolist())
    np.testing.assert_allclose(scores, (x @ x[0])[idx], atol=1e-5)
