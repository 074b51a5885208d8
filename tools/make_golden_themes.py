"""Write tests/golden/themes-v1: a small store whose themes (`index/themes.arrow`, format 1) were
stored by this engramdb, so tests/test_golden_themes.py can prove later versions list them. Run
only when adding a new format; older folders are never rewritten.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import engramdb

ROOT = Path(__file__).resolve().parents[1]
# near-repeats of three statements: themes are dense clusters (cosine eps 0.15)
STATEMENTS = {"cat": "the cat purrs and sleeps on the warm sofa", "build": "the python code compiles with the cmake build",
              "rain": "rain falls on the grey city streets at night"}


def main() -> None:
    out = ROOT / "tests" / "golden" / "themes-v1"
    shutil.rmtree(out, ignore_errors=True)
    with engramdb.open(out, dedup="off", access_log=False) as db:
        db.add_many([{"id": f"{k}{i}", "content": f"{t} ({i})", "namespace": "n"} for k, t in STATEMENTS.items()
                     for i in range(4)])
        db.checkpoint()
        themes = db.themes("n")
    (out / "LOCK").unlink(missing_ok=True)
    print(f"wrote {out}: {[(t.label, len(t.members)) for t in themes]}", file=sys.stderr)


if __name__ == "__main__":
    main()
