"""A writer that opens a new folder lets pyarrow import pandas on its worker (issue 26's replay: a
new process's first `add` paid that import, ~260 ms, inside the call). Checked in a new process:
after open and the worker's jobs, pandas is imported (when installed) and the first add is not the
one that imports it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import json, sys
import engramdb
db = engramdb.open(sys.argv[1])
db.admin.settle()
before = "pandas" in sys.modules
db.add("the first turn of a new store", namespace="n")
print(json.dumps({"before_add": before, "after_add": "pandas" in sys.modules}))
db.close()
"""


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pyarrow imports pandas only when installed")
def test_a_new_folders_writer_imports_pyarrows_pandas_on_its_worker(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "s")], capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout)
    assert got == {"before_add": True, "after_add": True}, got


def test_a_store_without_a_worker_imports_nothing_at_open(tmp_path: Path) -> None:
    child = CHILD.replace("engramdb.open(sys.argv[1])",
                          "engramdb.open(sys.argv[1], tuning=engramdb.Tuning(background=False))")
    out = subprocess.run([sys.executable, "-c", child, str(tmp_path / "s")], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout)["before_add"] is False
