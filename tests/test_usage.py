"""What a store learns from use, through the public API: logged searches, feedback, the batch ELO
update, annotation, the opt-in re-ranking and exploration, and the ratings as derived data."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import engramdb
import pytest
from engramdb.importance import batch, elo
from engramdb.importance.ratings import Ratings
from engramdb.storage.access_log import access_log
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import bit_flipped_copies

TOPICS = ["violin lessons on monday", "the bakery opens at six", "a cat called biscuit", "rain in lisbon",
          "green tea every morning", "the ring road traffic"]


def make(path: Path | None) -> engramdb.Store:
    db = engramdb.open(path)
    db.add_many([{"id": f"{ns}{i}", "content": f"{t} note {i}", "namespace": ns}
                 for ns in ("a", "b") for i, t in enumerate(TOPICS * 2)])
    return db


def test_a_search_is_logged_and_feedback_moves_the_ratings(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    hits = db.search("violin lessons", namespace="a", k=4)
    assert hits.query_id is not None and all(h.elo == elo.INITIAL_ELO and h.tier == "MEDIUM" for h in hits)
    used, shown = hits[1].id, [h.id for h in hits if h.id != hits[1].id]
    assert db.feedback(hits.query_id, used=[used]) == 1  # settled at once: one match of len(hits) updates
    assert db.importance(used).elo > elo.INITIAL_ELO > db.importance(shown[0]).elo
    assert db.importance(used).used == 1 and db.importance(shown[0]).shown == 1
    assert sum(db.importance(h.id).updates for h in hits) == len(hits)
    again = db.importance.refresh()
    assert (again.entries, again.updates) == (0, 0)  # idempotent: the feedback is never counted twice
    log = db.importance.log(used)
    assert len(log) == 1 and log[0]["outcome"] == 1.0 and log[0]["k"] == 16 and not log[0]["gated"]
    assert log[0]["after"] == pytest.approx(log[0]["before"] + 16 * (1 - log[0]["expected"]))
    after = db.search("violin lessons", namespace="a", k=4)
    assert [h.id for h in after] == [h.id for h in hits]  # annotation only: the order is relevance's
    assert {h.id: h.elo for h in after}[used] > elo.INITIAL_ELO
    db.close()


def test_feedback_names_a_logged_search(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    with pytest.raises(ValueError, match="no logged search with query_id 'nope'"):
        db.feedback("nope", used=["a1"])
    hits = db.search("cat", namespace="a")
    with pytest.raises(ValueError, match="used must hold memory ids"):
        db.feedback(hits.query_id or "", used=[""])  # type: ignore[list-item]
    db.close()
    with engramdb.open(tmp_path / "s") as db2:  # a query id from before a reopen is found in the log
        assert db2.feedback(hits.query_id or "", used=[hits[0].id]) == 1


def test_feedback_that_none_was_used_lowers_every_hit() -> None:
    db = make(None)
    hits = db.search("rain in lisbon", namespace="a", k=3)
    assert db.feedback(hits.query_id or "", used=[]) == 0  # one match, settled at once
    assert all(db.importance(h.id).elo < elo.INITIAL_ELO and db.importance(h.id).updates == 1 for h in hits)
    assert db.importance.refresh().matches == 0


def test_late_feedback_changes_nothing_and_namespaces_stay_apart(tmp_path: Path) -> None:
    db = make(None)
    a = db.search("the bakery", namespace="a", k=3)
    b = db.search("the bakery", namespace="b", k=3)
    db.feedback(a.query_id or "", used=[a[0].id])  # settles the query
    before = db.importance.log()
    db.feedback(a.query_id or "", used=[a[1].id])  # after the query was settled: late, changes nothing
    assert db.importance.log() == before
    rep = db.importance.refresh()
    assert rep.updates == 0 and rep.late_feedback == 0  # the late row was read (and passed over) already
    assert db.importance(a[1].id).used == 0
    assert all(db.importance(h.id).updates == 0 for h in b)  # only the shown and used of "a" played
    db.close()


def test_a_weak_match_moves_a_quarter() -> None:
    db = make(None)
    hits = db.search("violin lessons", namespace="a", k=12)
    weak = [h for h in hits if h.score < elo.RELEVANCE_THRESHOLD]
    strong = [h for h in hits if h.score >= elo.RELEVANCE_THRESHOLD]
    assert weak and strong
    db.feedback(hits.query_id or "", used=[strong[0].id, weak[0].id])
    db.importance.refresh()
    changes = {r["memory_id"]: r for r in db.importance.log()}
    assert changes[weak[0].id]["gated"] and not changes[strong[0].id]["gated"]
    w, s = changes[weak[0].id], changes[strong[0].id]
    assert w["after"] - w["before"] == pytest.approx(0.25 * 16 * (1 - w["expected"]))
    assert s["after"] - s["before"] == pytest.approx(16 * (1 - s["expected"]))


def test_ratings_are_derived_a_lost_file_is_replayed_to_the_same(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    for q in ("violin", "bakery", "cat", "violin lessons", "tea"):
        hits = db.search(q, namespace="a", k=5)
        db.feedback(hits.query_id or "", used=[hits[0].id])
    db.importance.refresh()
    ids = [f"a{i}" for i in range(12)]
    before = {i: round(db.importance(i).elo, 6) for i in ids}
    db.close()
    for f in (tmp_path / "s" / "index").glob("elo-ratings.*"):
        f.unlink()
    with engramdb.open(tmp_path / "s") as db2:
        assert db2.stats()["usage"]["ratings_file"] == "missing"  # replayed from the log's start when first read
        assert {i: db2.importance(i).elo for i in ids} == pytest.approx(before, abs=0.01)  # decayed to now
        assert db2.importance.refresh().updates == 0
    shutil.copytree(tmp_path / "s", tmp_path / "ro")
    (tmp_path / "ro" / "LOCK").unlink(missing_ok=True)
    with engramdb.open(tmp_path / "ro", read_only=True) as ro:  # annotates from the saved ratings, logs nothing
        hits = ro.search("violin", namespace="a", k=3)
        assert hits.query_id is None and any(h.elo != elo.INITIAL_ELO for h in hits)
        with pytest.raises(PermissionError):
            ro.importance.refresh()
    assert not (tmp_path / "ro" / "spool").exists()  # read-only touches nothing unless access_log="spool"


def test_a_readers_searches_and_injections_reach_the_writers_ratings(tmp_path: Path) -> None:
    """A hook beside an MCP server reads a store another process writes: what it searched and
    injected is spooled at close, the writer adds it to its log once, and the ratings learn."""
    db = make(tmp_path / "s")
    db.importance.refresh()
    with engramdb.open(tmp_path / "s", read_only=True, access_log="spool") as ro:
        for _ in range(6):
            hits = ro.search("violin lessons", namespace="a", k=3)
            ro.feedback(hits.query_id or "", used=[hits[0].id])
        ctx = ro.context("violin lessons", namespace="a", max_tokens=200)
        assert ctx.items
        assert list((tmp_path / "s" / "spool").glob("*.access")) == []  # not before close: one file, not one a call
    spooled = list((tmp_path / "s" / "spool").glob("*.access"))
    assert len(spooled) == 1
    saved = spooled[0].read_bytes()
    used = hits[0].id
    before = db.importance(used).elo
    report = db.importance.refresh()  # the writer takes the spool in first
    assert report.entries >= 6 and db.importance(used).elo > before
    log = access_log(tmp_path / "s", writable=False)  # the storage layer's seam: the log as written
    kinds = log.read().column("kind").to_pylist()
    assert kinds.count("feedback") == 6 and "inject" in kinds
    spooled[0].with_suffix(".taking").write_bytes(saved)  # as if the writer died after logging, before unlinking
    n = log.read().num_rows
    db.importance.refresh()
    assert access_log(tmp_path / "s", writable=False).read().num_rows == n  # replayed: nothing added twice
    assert list((tmp_path / "s" / "spool").iterdir()) == []
    db.close()


def test_elo_weight_reranks_and_explore_surfaces_rarely_seen_memories() -> None:
    db = make(None)
    for _ in range(12):  # "a3" (cat) is used every time it is asked about
        hits = db.search("cat biscuit", namespace="a", k=3)
        db.feedback(hits.query_id or "", used=["a2"])
    db.importance.refresh()
    plain = db.search("note", namespace="a", k=5)
    weighted = db.search("note", namespace="a", k=5, elo_weight=1.0)
    assert weighted[0].id == "a2" and [h.id for h in plain] != [h.id for h in weighted]
    seen: dict[str, int] = {}
    for _ in range(40):
        got = db.search("violin lessons", namespace="a", k=4, explore=0.5)
        assert len(got) == 4 and sum(h.explored for h in got) == 2
        for h in got:
            if h.explored:
                seen[h.id] = seen.get(h.id, 0) + 1
    relevant = [h.id for h in db.search("violin lessons", namespace="a", k=2)]
    assert not set(seen) & set(relevant)  # explored places come from below the cut
    assert len(seen) >= 3  # and vary: sampled, not a fixed pick
    with pytest.raises(ValueError, match="explore must be a number in"):
        db.search("x", namespace="a", explore=1.0)
    with pytest.raises(ValueError, match="elo_weight must be a number in"):
        db.search("x", namespace="a", elo_weight=-0.1)


def _calls(events: list[tuple[int, list[int], int]]) -> list[list[dict[str, object]]]:
    """The log rows of a run of calls: per event a search showing `shown` memories, and one
    feedback call for it (the used among them) `delay` calls later; one list of rows per call."""
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    timeline: list[tuple[int, int, list[dict[str, object]]]] = []  # (position, order, rows)
    for q, (shown, used, delay) in enumerate(events):
        at = t0 + timedelta(hours=q)
        mids = [f"m{(q + r) % 7}" for r in range(shown)]
        timeline.append((2 * q, 0, [{"kind": "search", "query_id": f"q{q}", "namespace": "n", "session_id": None,
                                     "at": at, "query": "x", "strategy": "hybrid", "memory_id": m, "rank": r + 1,
                                     "score": 0.1 + 0.2 * r, "used": False} for r, m in enumerate(mids)]))
        fb: list[str | None] = [*sorted({mids[u % shown] for u in used})] or [None]  # None: none was used
        timeline.append((2 * (q + delay) + 1, q, [{
            "kind": "feedback", "query_id": f"q{q}", "namespace": "n", "session_id": None,
            "at": at + timedelta(minutes=30 * (delay + 1)), "query": None, "strategy": None, "memory_id": m,
            "rank": None, "score": None, "used": m is not None} for m in fb]))
    return [rows for _, _, rows in sorted(timeline, key=lambda t: (t[0], t[1]))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.lists(st.integers(0, 20), max_size=3), st.integers(0, 3)),
                min_size=1, max_size=12), st.data())
def test_the_update_resumes_anywhere_to_the_same_ratings(events: list[tuple[int, list[int], int]],
                                                         data: st.DataObject) -> None:
    """Batch updates run between any calls give the ratings of one update at the end (each
    search's feedback is one call, as `Store.feedback` writes it)."""
    calls = _calls(events)
    log = access_log(None, writable=True, flush_rows=1 << 20)
    ends = []
    for rows in calls:
        log.append(rows)
        ends.append(log.next_seq - 1)
    table = log.read()
    whole = Ratings()
    batch.apply(whole, table)
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(ends), max_size=4))))
    parts = Ratings()
    for cut in [*cuts, ends[-1]]:
        batch.apply(parts, table.slice(0, cut))  # what was logged by then
    assert parts.watermark == whole.watermark == table.num_rows
    assert {i: (round(r.elo, 9), r.updates, r.shown, r.used) for i, r in parts.by_id.items()} == \
        {i: (round(r.elo, 9), r.updates, r.shown, r.used) for i, r in whole.by_id.items()}


_FUZZ_ACCESS = r"""
import json, sys
from pathlib import Path
import engramdb
from engramdb.storage.access_log import access_log
out = []
for store in map(Path, sys.argv[1:]):
    with engramdb.open(store) as db:
        db.importance.refresh()
    rows = access_log(store, writable=False).read().num_rows
    out.append({"rows": rows, "left": sorted(p.suffix for p in (store / "spool").iterdir())})
print(json.dumps(out))
"""


def test_flipped_bytes_in_spooled_access_rows_never_crash_nor_reach_the_log(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    base = tmp_path / "base"
    make(base).close()
    with engramdb.open(base, read_only=True, access_log="spool") as ro:
        ro.search("violin lessons", namespace="a", k=3)
    spooled = next((base / "spool").glob("*.access"))
    clean = spooled.read_bytes()
    spooled.unlink()
    folders = bit_flipped_copies(base, "spool/00000000000000000001-1-fuzz.access", clean, tmp_path, 12, seed=11)
    got = subprocess.run([sys.executable, "-c", _FUZZ_ACCESS, *folders], check=False,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    for trial in json.loads(got.stdout):
        if trial["left"] == [".damaged"]:  # refused whole: the log holds none of it
            assert trial["rows"] == 0, trial
        else:  # a flip JSON tolerates: the three hits' rows, once
            assert trial["left"] == [] and trial["rows"] == 3, trial


def test_a_long_lived_reader_spools_as_it_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only MCP server may run for days: its rows go to the spool once they have waited
    SPOOL_SECONDS (here 0), not only at close."""
    from engramdb.store import usage

    make(tmp_path / "s").close()
    monkeypatch.setattr(usage, "SPOOL_SECONDS", 0.0)
    with engramdb.open(tmp_path / "s", read_only=True, access_log="spool") as ro:
        ro.search("violin lessons", namespace="a", k=3)
        ro.search("cat biscuit", namespace="a", k=3)  # the first search's rows are due by now
        assert len(list((tmp_path / "s" / "spool").glob("*.access"))) >= 1


# ------------------------------------------------------------------------------ purge (issue 24 item 8)
def test_a_namespace_purge_takes_its_searches_that_found_nothing_too(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    empty = db.search("plovdivquasar", namespace="a", min_score=0.99)  # matched nothing: no memory id
    assert len(empty) == 0 and empty.query_id is not None
    hits = db.search("violin lessons", namespace="a", k=3)
    db.feedback(hits.query_id or "", used=[hits[0].id])
    kept = db.search("violin lessons", namespace="b", k=3)
    db.feedback(kept.query_id or "", used=[kept[0].id])
    db.importance.refresh()
    db.admin.checkpoint()
    db.purge(namespace="a")
    rows = access_log(tmp_path / "s", writable=False).read()  # the storage layer's seam: the log as written
    assert set(rows.column("namespace").to_pylist()) == {"b"}
    assert "plovdivquasar" not in rows.column("query").to_pylist()
    assert {r["namespace"] for r in db.importance.log()} == {"b"}
    assert db.stats()["usage"]["ratings"] == len(kept)  # bob's ratings only
    assert db.importance(kept[0].id).used == 1
    with pytest.raises(ValueError, match="no logged search"):  # not even from memory
        db.feedback(empty.query_id, used=[])
    db.close()
    for p in (tmp_path / "s").rglob("*"):
        assert not p.is_file() or b"plovdivquasar" not in p.read_bytes(), p


def test_a_store_that_logs_nothing_still_purges_the_log_it_kept_before(tmp_path: Path) -> None:
    with make(tmp_path / "s") as db:
        db.search("the bakery opens", namespace="a", k=2)
        db.search("plovdivquasar", namespace="a", min_score=0.99)
    with engramdb.open(tmp_path / "s", access_log=False) as db:
        db.purge(namespace="a")
    assert access_log(tmp_path / "s", writable=False).read().num_rows == 0
    for p in (tmp_path / "s").rglob("*"):
        assert not p.is_file() or b"plovdivquasar" not in p.read_bytes(), p


def test_the_batch_update_never_rates_a_memory_of_another_namespace() -> None:
    """Feedback rows written before feedback checked namespaces (or spooled by an older reader)
    naming another namespace's rated memory are ignored by the update."""
    log = access_log(None, writable=True, flush_rows=1 << 20)
    at = datetime(2026, 1, 2, tzinfo=timezone.utc)

    def row(q: str, ns: str, mid: str, kind: str) -> dict[str, object]:
        return {"kind": kind, "query_id": q, "namespace": ns, "session_id": None, "at": at, "query": None,
                "strategy": None, "memory_id": mid, "rank": 1, "score": 0.9, "used": kind != "search"}

    log.append([row("qa", "a", "a1", "search"), row("qa", "a", "a1", "feedback")])
    ratings = Ratings()
    batch.apply(ratings, log.read())
    a1 = ratings.by_id["a1"].elo
    log.append([row("qb", "b", "b1", "search"), row("qb", "b", "a1", "feedback")])  # b's search, a's memory
    rep = batch.apply(ratings, log.read())
    assert rep.foreign == 1 and ratings.by_id["a1"].elo == a1 and ratings.by_id["a1"].namespace == "a"
    assert ratings.by_id["b1"].updates == 1  # b's own match still counts


def test_a_damaged_ratings_file_is_written_again_by_a_purge(tmp_path: Path) -> None:
    with make(tmp_path / "s") as db:
        hits = db.search("violin lessons", namespace="a", k=3)
        db.feedback(hits.query_id or "", used=[hits[0].id])
        db.importance.refresh()
    path = tmp_path / "s" / "index" / "elo-ratings.arrow"
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0xFF  # unreadable now; the ids are still in its bytes
    path.write_bytes(bytes(raw))
    assert hits[0].id.encode() in raw
    with engramdb.open(tmp_path / "s") as db:
        db.purge([h.id for h in hits])
        assert db.stats()["usage"]["ratings_file"] == "adopted"
    assert not any(h.id.encode() in path.read_bytes() for h in hits)
