"""The committed `_core.pyi` must equal what pybind11-stubgen makes of the built module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import engramdb
import pytest


def test_core_stub_is_in_sync(tmp_path: Path) -> None:
    pytest.importorskip("pybind11_stubgen")
    subprocess.run(
        [sys.executable, "-m", "pybind11_stubgen", "engramdb._core", "-o", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    generated = (tmp_path / "engramdb" / "_core.pyi").read_text()
    committed = Path(engramdb.__file__).with_name("_core.pyi")
    if not committed.exists():  # an installed wheel carries it next to the module
        pytest.fail(f"{committed} is missing from the package")
    assert committed.read_text() == generated, "run tools/gen_stubs.sh to refresh python/engramdb/_core.pyi"
