"""tests/golden/usage-v1 (tools/make_golden_usage.py): the access log, the ELO update log and the
tier state of format 1 are read by this version, and its ratings (format 1: started at 1200, on
another scale) are replayed from the log; damaged ones are refused, never served, and never crash
the interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import engramdb
import pytest
from store_helpers import flipped_copies

GOLDEN = Path(__file__).parent / "golden" / "usage-v1"
PENDING = (Path(__file__).parent / "golden" / "usage-v1-pending-query.txt").read_text().strip()
IDS = ["m0", "m1", "m2", "m3"]


def test_a_v1_usage_folder_is_read_as_it_was() -> None:
    with engramdb.open(GOLDEN, read_only=True) as db:
        usage = db.stats()["usage"]
        # format 1's ratings are not adopted: the log they came from is replayed, to the same counts
        assert usage["ratings_file"] == "format 1" and usage["ratings"] == 4 and usage["watermark"] == 14
        assert usage["log"]["files"] == 2 and usage["log"]["damaged"] == {}
        assert [(r["memory_id"], r["outcome"]) for r in db.importance.log("m1")] == [("m1", 1.0), ("m1", 1.0),
                                                                                    ("m1", 0.0)]
        assert len(db.importance.log()) == 10
        assert db.importance("m1").used == 2 and db.importance("m0").used == 0
        assert db.importance("m1").elo > db.importance("m0").elo
        runs = db.importance.tiers().runs
        assert len(runs) == 1 and runs[0]["counts"] == {"keep": 4}
        assert db.search("violin", namespace="n", k=2)[0].elo is not None


def test_a_v1_folder_takes_late_feedback_and_replays_to_the_same_ratings(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    with engramdb.open(tmp_path / "s") as db:
        assert db.feedback(PENDING, used=["m3"]) == 1  # a search logged by the old version: settled at once
        assert db.importance("m3").used == 1
        assert db.importance.refresh().updates == 0
        before = {i: db.importance(i) for i in IDS}
    for f in (tmp_path / "s" / "index").glob("elo-ratings.*"):
        f.unlink()
    with engramdb.open(tmp_path / "s") as db:
        db.importance.refresh()  # replayed from the whole log, old rows and new
        again = {i: db.importance(i) for i in IDS}
    for i in IDS:
        assert (again[i].updates, again[i].used) == (before[i].updates, before[i].used)
        assert again[i].elo == pytest.approx(before[i].elo, abs=0.05)


@pytest.mark.parametrize("name", ["index/elo-ratings.arrow", "index/lifecycle-tiers.arrow", "index/elo-ratings.json",
                                  "index/lifecycle-tiers.json"])
def test_flipped_bytes_in_the_ratings_or_tiers_never_crash(tmp_path: Path, name: str) -> None:
    """Bytes of the file flipped (a sample of positions), each copy opened in a child process that
    searches, reads importance and the tiers: it exits cleanly, and a damaged ratings file is named
    and never served: the ratings are replayed from the log instead (the same counts)."""
    src = tmp_path / "src"  # the golden folder with its ratings saved again in the current format
    shutil.copytree(GOLDEN, src)
    with engramdb.open(src) as db:
        assert db.importance("m1").used == 2
    folders = flipped_copies(src, name, tmp_path, 12)
    script = textwrap.dedent("""
        import sys
        import engramdb
        for folder in sys.argv[1:]:
            with engramdb.open(folder, read_only=True) as db:
                db.search("violin", namespace="n", k=2)
                imp = db.importance("m1")
                state = db.stats()["usage"]["ratings_file"]
                print(state == "adopted", imp.used, len(db.importance.tiers().runs))
    """)
    out = subprocess.run([sys.executable, "-c", script, *folders], check=False, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for line in out.stdout.splitlines():
        adopted, used, _runs = line.split()
        # adopted: the bytes read were the saved ones (a flip the CRC caught reads nothing, and the
        # log is replayed)
        assert (adopted, used) in {("True", "2"), ("False", "2")}, line
