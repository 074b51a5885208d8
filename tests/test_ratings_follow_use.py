"""Ratings that follow use (E2-E5, issue 26): feedback moves `elo` and `tier` at once, with no
maintenance call, counted once whatever runs after; an unrated memory sits inside MEDIUM, so
neither time alone nor one lost match moves it to LOW."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import engramdb
import pytest
from engramdb.importance import elo
from engramdb.model.memory import utc_now

TOPICS = ["violin lessons on monday", "the bakery opens at six", "a cat called biscuit", "rain in lisbon",
          "green tea every morning", "the ring road traffic"]


def make(path: Path | None) -> engramdb.Store:
    db = engramdb.open(path)
    db.add_many([{"id": f"a{i}", "content": f"{t} note {i}", "namespace": "a"} for i, t in enumerate(TOPICS * 2)])
    return db


def snapshot(db: engramdb.Store, ids: list[str]) -> dict[str, tuple[float, int, int, int]]:
    out = {}
    for i in ids:
        imp = db.importance(i)
        out[i] = (round(imp.elo, 3), imp.updates, imp.shown, imp.used)
    return out


def test_feedback_shows_in_importance_and_hits_at_once(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    hits = db.search("violin lessons", namespace="a", k=4)
    used, lost = hits[0].id, hits[1].id
    assert db.feedback(hits.query_id or "", used=[used]) == 1
    # no update_importance(): the rating moved with the feedback
    assert db.importance(used).elo > elo.INITIAL_ELO > db.importance(lost).elo
    assert (db.importance(used).used, db.importance(used).updates, db.importance(lost).shown) == (1, 1, 1)
    again = {h.id: h for h in db.search("violin lessons", namespace="a", k=4, log=False)}
    assert again[used].elo == pytest.approx(db.importance(used).elo, abs=1e-3)
    assert again[lost].elo == pytest.approx(db.importance(lost).elo, abs=1e-3)
    log = db.importance.log(used)
    assert len(log) == 1 and log[0]["outcome"] == 1.0  # the change is logged as the batch logs it
    before = snapshot(db, [h.id for h in hits])
    rep = db.importance.refresh()  # never counted twice
    assert (rep.matches, rep.updates, rep.late_feedback) == (0, 0, 0)
    assert snapshot(db, [h.id for h in hits]) == before
    assert len(db.importance.log(used)) == 1
    db.close()
    with engramdb.open(tmp_path / "s") as db2:  # a reopen gives the same ratings
        assert snapshot(db2, [h.id for h in hits]) == before
        assert db2.importance.refresh().updates == 0


def test_feedback_that_none_was_used_lowers_every_hit_at_once() -> None:
    db = make(None)
    hits = db.search("rain in lisbon", namespace="a", k=3)
    db.feedback(hits.query_id or "", used=[])
    assert all(db.importance(h.id).elo < elo.INITIAL_ELO for h in hits)
    assert all(h.tier == "MEDIUM" for h in db.search("rain in lisbon", namespace="a", k=3))  # one loss: still MEDIUM


def test_a_second_feedback_for_a_settled_search_is_late() -> None:
    db = make(None)
    hits = db.search("the bakery", namespace="a", k=3)
    db.feedback(hits.query_id or "", used=[hits[0].id])
    db.feedback(hits.query_id or "", used=[hits[1].id])  # the search was settled by the first
    assert db.importance(hits[1].id).used == 0 and db.importance(hits[0].id).used == 1
    assert db.importance.refresh().updates == 0


def test_feedback_on_a_contexts_search_counts_with_what_it_injected() -> None:
    """A context logs what it injected (E1) under its search's id; the agent's own feedback for that
    search settles it with the injected ones: one match, nothing late."""
    db = make(None)
    ctx = db.context("violin lessons", namespace="a", max_tokens=200)
    injected = [i.id for i in ctx.items if i.id is not None]
    assert injected
    qid = ctx.stats["query_id"]
    db.feedback(qid, used=[injected[0]])
    assert db.importance(injected[0]).used == 1
    assert all(db.importance(i).used == 1 for i in injected)  # injected: used (E2)
    assert db.importance.refresh().updates == 0


def test_a_lost_or_old_ratings_file_is_replayed_to_the_same_ratings(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    for q in ("violin", "bakery", "cat", "violin lessons", "tea"):
        hits = db.search(q, namespace="a", k=5)
        db.feedback(hits.query_id or "", used=[hits[0].id])
    ids = [f"a{i}" for i in range(12)]
    before = {i: round(db.importance(i).elo, 6) for i in ids}
    db.close()
    for f in (tmp_path / "s" / "index").glob("elo-ratings.*"):
        f.unlink()
    shutil.copytree(tmp_path / "s", tmp_path / "ro")
    (tmp_path / "ro" / "LOCK").unlink(missing_ok=True)
    with engramdb.open(tmp_path / "ro", read_only=True) as ro:  # a reader rebuilds them in memory
        assert {i: ro.importance(i).elo for i in ids} == pytest.approx(before, abs=0.01)
    assert not list((tmp_path / "ro" / "index").glob("elo-ratings.*"))  # and writes nothing
    with engramdb.open(tmp_path / "s") as db2:  # no update call needed
        assert {i: db2.importance(i).elo for i in ids} == pytest.approx(before, abs=0.01)
        assert db2.importance.refresh().updates == 0
    assert list((tmp_path / "s" / "index").glob("elo-ratings.*"))  # the writer saved what it rebuilt


# ------------------------------------------------------------------------------------ tiers
def test_an_unrated_memory_sits_inside_medium() -> None:
    assert elo.tier(elo.INITIAL_ELO) == "MEDIUM"
    assert elo.tier(elo.INITIAL_ELO - 8 * elo.K_NEW) == "MEDIUM"  # a few lost matches: still MEDIUM
    db = make(None)
    imp = db.importance("a0")
    assert imp.tier == "MEDIUM" and 1200 < imp.elo < 1600
    assert all(h.tier == "MEDIUM" and 1200 < (h.elo or 0) < 1600 for h in db.search("cat", namespace="a", k=3))


def test_time_alone_does_not_flip_a_shown_memory_to_low() -> None:
    """Shown by searches, never judged: a day later it is still MEDIUM (it used to fall to LOW at
    the first microsecond of decay); unused for a month it does reach LOW (E3 still applies)."""
    db = make(None)
    shown = [h.id for h in db.search("green tea", namespace="a", k=3)]
    tomorrow = db.lifecycle.consolidate(namespace="a", now=utc_now() + timedelta(days=1))
    tiers = {d.id: d.elo_tier for d in tomorrow.decisions}
    assert all(tiers[i] == "MEDIUM" for i in shown)
    later = db.lifecycle.consolidate(namespace="a", now=utc_now() + timedelta(days=30))
    assert all(d.elo_tier == "LOW" for d in later.decisions if d.id in shown)
    assert all(d.elo_tier == "MEDIUM" for d in later.decisions if d.id not in shown)  # never shown: no decay
