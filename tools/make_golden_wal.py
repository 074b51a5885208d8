"""Write tests/golden/wal-v2.log: a format-6 write-ahead log (committed; never rewritten).

Its header names a store, the log's number and the generation it was made in; its first frame
holds the golden memories of tests/test_wal.py, its second a supersede's two new versions and its
SUPERSEDES edge as two Arrow streams in one frame. tests/test_wal.py reads it back.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from engramdb.model import Edge
from engramdb.storage.columns import memories_to_table
from engramdb.storage.edge_files import edges_to_table
from engramdb.storage.wal import WriteAheadLog
from test_wal import golden_memories

T1 = datetime(2024, 6, 1, tzinfo=timezone.utc)


def main() -> None:
    out = ROOT / "tests" / "golden" / "wal-v2.log"
    out.unlink(missing_ok=True)
    wal = WriteAheadLog(out, {"store": "0123456789abcdef0123456789abcdef", "seq": 1, "generation": 1}, create=True)
    first, second = golden_memories()
    wal.append(memories_to_table([first]))
    old = first.with_changes(version=2, learned_at=T1, valid_until=T1, superseded_by="m2")
    new = second.with_changes(version=3, learned_at=T1, supersedes="m1")
    edge = Edge("m2", "m1", "SUPERSEDES", "alice", 1.0, "supersede", created_at=T1)
    wal.append(memories_to_table([old, new]), edges_to_table([edge]))
    wal.close()
    print(out, out.stat().st_size)


if __name__ == "__main__":
    main()
