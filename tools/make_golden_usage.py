"""Write tests/golden/usage-v1: a small store with an access log (format 1: `access/access-*.arrow`),
an ELO update log (`access/elo-*.arrow`), saved ratings (`index/elo-ratings.arrow`, format 1) and a
tier state (`index/lifecycle-tiers.arrow`, format 1), so tests/test_golden_usage.py can prove later
versions read them. Run only when adding a new format; older folders are never rewritten.
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import engramdb

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)


def main() -> None:
    out = ROOT / "tests" / "golden" / "usage-v1"
    shutil.rmtree(out, ignore_errors=True)
    with engramdb.open(out, dedup="off") as db:
        db.add_many([{"id": f"m{i}", "content": f"violin lessons on {d}", "namespace": "n", "valid_from": T0}
                     for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday"])])
        for used in ("m1", "m1", "m2"):
            hits = db.search("violin lessons", namespace="n", k=3)
            db.feedback(hits.query_id or "", used=[used])
        db.update_importance()
        last = db.search("violin lessons on friday", namespace="n", k=2)  # logged, feedback still to come
        db.consolidate(dry_run=False, protect_days=0)  # within the grace: every memory kept, the run recorded
    (out.parent / "usage-v1-pending-query.txt").write_text(last.query_id or "")
    (out / "LOCK").unlink(missing_ok=True)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
