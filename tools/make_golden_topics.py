"""Write tests/golden/topics-v1: a small store whose topic history (`index/topics-state.arrow`,
format 1, with one merge) was saved by this engramdb, so tests/test_golden_topics.py can prove later
versions carry its ids on. Run only when adding a new format; older folders are never rewritten.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import engramdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_topics import SUBJECTS


def main() -> None:
    out = ROOT / "tests" / "golden" / "topics-v1"
    shutil.rmtree(out, ignore_errors=True)
    with engramdb.open(out, dedup="off", access_log=False) as db:
        db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                     for i, t in enumerate(v)])
        topics = db.topics("n")
        cat = next(t for t in topics if "cat0" in t.members)
        bread = next(t for t in topics if "bread0" in t.members)
        db.merge_concepts(bread.id, cat.id)
    (out / "LOCK").unlink(missing_ok=True)
    print(f"wrote {out}: {[(t.id, t.members[0]) for t in topics]}", file=sys.stderr)


if __name__ == "__main__":
    main()
