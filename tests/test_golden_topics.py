"""tests/golden/topics-v1 (tools/make_golden_topics.py): a saved topic history (format 1, one merge)
is adopted: ids, runs and the merge carry on; flipped bytes in it never crash and are never served."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import engramdb
import pytest
from store_helpers import flipped_copies

GOLDEN = Path(__file__).parent / "golden" / "topics-v1"


def test_a_v1_topic_history_carries_on(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    with engramdb.open(tmp_path / "s") as db:
        topics = db.topics("n")
        assert db.topics.state == "adopted"
        assert all(t.runs == 3 and t.stability == 1.0 for t in topics)  # saved after two runs; the same topics
        violin = next(t for t in topics if "violin0" in t.members)
        merged = next(t for t in topics if "bread0" in t.members)
        assert {f"cat{i}" for i in range(5)} <= set(merged.members)  # the merge still holds
        assert len(topics) == 2 and violin.id != merged.id


@pytest.mark.parametrize("name", ["index/topics-state.arrow", "index/topics-state.json"])
def test_flipped_bytes_in_the_topic_history_never_crash(tmp_path: Path, name: str) -> None:
    folders = flipped_copies(GOLDEN, name, tmp_path, 10)
    script = textwrap.dedent("""
        import sys
        import engramdb
        for folder in sys.argv[1:]:
            with engramdb.open(folder, read_only=True, access_log=False) as db:
                topics = db.topics("n")
                print(db.topics.state == "adopted", len(topics), max(t.runs for t in topics))
    """)
    out = subprocess.run([sys.executable, "-c", script, *folders], check=False, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for line in out.stdout.splitlines():
        adopted, _topics, runs = line.split()
        assert (adopted, runs) in {("True", "3"), ("False", "1")}, line  # adopted whole, or started over
