"""Consolidation (H7) and ELO pruning (E7): the priority and decays against their formulas, every
decision explained, dry run first, no current memory deleted, the tier state as derived data, and
forgotten memories purged once their 30-day restore window has passed (S7)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pytest
from engramdb.lifecycle import consolidation as cons

NOW = datetime.now(timezone.utc)


def test_the_decays_follow_their_formulas() -> None:
    assert cons.recency(43.3, 0) == pytest.approx(0.5)  # half-life 43.3 days without use
    assert cons.recency(43.3 * (1 + math.log(3)), 2) == pytest.approx(0.5)  # adaptive: longer with use
    assert cons.recency(10, 0, "ebbinghaus") == pytest.approx((1 + 18.4) ** -1.25)
    assert cons.recency(10, 4, "ebbinghaus") == pytest.approx((1 + 1.84 * 10 / (1 + math.log(5))) ** -1.25)
    assert cons.recency(45, 0, "linear") == pytest.approx(0.5) and cons.recency(200, 0, "linear") == 0.0
    with pytest.raises(ValueError, match="decay must be one of exponential, ebbinghaus, linear, got 'cubic'"):
        cons.recency(1, 0, "cubic")


def test_priority_weights_frequency_recency_and_confidence() -> None:
    assert cons.priority(100, 0, 1.0) == pytest.approx(1.0)
    assert cons.priority(0, 0, 0.0) == pytest.approx(0.3)  # fresh, never used, no confidence
    assert cons.priority(9, 0, 0.5) == pytest.approx(0.4 * math.log(10) / math.log(101) + 0.3 + 0.15)
    assert cons.priority(10_000, 0, 1.0) == pytest.approx(1.0)  # frequency capped


def standing(**kw: object) -> cons.Standing:
    base: dict[str, object] = {"id": "m", "namespace": "n", "tier": "short_term", "age_days": 30.0,
                               "days_since_access": 1.0, "days_unused": 1.0, "accesses": 3, "confidence": 1.0,
                               "elo": 1300.0, "elo_tier": "MEDIUM", "compressed": False}
    return cons.Standing(**{**base, **kw})  # type: ignore[arg-type]


def test_each_rule_decides_and_says_why() -> None:
    d = cons.decide(standing(elo=700, elo_tier="VERY_LOW", days_unused=31))
    assert d.action == "archive" and d.reason.startswith("E7: ELO 700 (VERY_LOW), unused 31 days")
    assert cons.decide(standing(elo=700, elo_tier="VERY_LOW", days_unused=29)).action != "archive"
    assert cons.decide(standing(elo=1000, elo_tier="LOW", days_unused=15)).action == "compress"
    assert cons.decide(standing(elo=1000, elo_tier="LOW", days_unused=15, compressed=True)).action != "compress"
    assert cons.decide(standing(accesses=60, days_since_access=0)).action == "promote"
    assert cons.decide(standing(accesses=60, days_since_access=0, tier="long_term")).action == "keep"
    young = cons.decide(standing(accesses=60, days_since_access=0, age_days=3))
    assert young.action == "keep" and "grace" in young.reason
    low = cons.decide(standing(accesses=0, days_since_access=400, confidence=0.1))
    assert low.action == "archive" and low.reason.startswith("H7: priority")
    assert cons.decide(standing(tier="archived")).action == "keep"


def test_leading_sentences() -> None:
    text = "One. Two is here! Three? Four."
    assert cons.leading_sentences(text) == "One. Two is here! ..."
    assert cons.leading_sentences("Short.") == "Short."


def _store(path: Path) -> engramdb.Store:
    db = engramdb.open(path)
    old = NOW - timedelta(days=60)
    text = "The garden plan: tomatoes by the wall. Beans on the fence! Herbs in pots near the door. Water daily."
    db.add_many([{"id": f"g{i}", "content": text, "namespace": "n", "valid_from": old} for i in range(3)]
                + [{"id": f"x{i}", "content": f"note {i} about the weather", "namespace": "n", "valid_from": old}
                   for i in range(4)]
                + [{"id": "doubtful", "content": "maybe the shed is blue", "namespace": "n", "valid_from": old,
                    "confidence": 0.05}])
    return db


def test_a_run_reports_then_applies_and_deletes_nothing(tmp_path: Path) -> None:
    db = _store(tmp_path / "s")
    for _ in range(3):  # the garden notes are shown and never used: they lose ELO
        h = db.search("garden tomatoes beans", namespace="n", k=3)
        db.feedback(h.query_id or "", used=[])
    later = NOW + timedelta(days=40)
    dry = db.lifecycle.consolidate(now=later)
    assert dry.dry_run and {d.id for d in dry.decisions} == {"g0", "g1", "g2", "x0", "x1", "x2", "x3", "doubtful"}
    by = {d.id: d for d in dry.decisions}
    assert by["doubtful"].action == "archive"  # low confidence, never used, 40 days on
    assert all(by[f"x{i}"].action == "keep" for i in range(4))
    assert db.get("doubtful").content == "maybe the shed is blue"  # type: ignore[union-attr] # a dry run changes nothing
    done = db.lifecycle.consolidate(now=later, dry_run=False)
    assert done.applied["archive"] >= 1 and db.lifecycle.is_archived("doubtful")
    assert len(db) == 8  # nothing deleted
    db.lifecycle.unarchive(["doubtful"])
    assert db.get("doubtful").content == "maybe the shed is blue"  # type: ignore[union-attr]
    runs = db.importance.tiers().runs
    assert runs and runs[-1]["applied"]["archive"] >= 1
    db.close()
    with engramdb.open(tmp_path / "s") as again:  # the run history is kept beside the indexes
        assert again.importance.tiers().runs == runs


def test_compression_keeps_the_full_text_as_the_previous_version() -> None:
    db = engramdb.open(None)
    text = "First about the garden. Second about tomatoes! Third about beans. Fourth about herbs."
    db.add_many([{"id": "g", "content": text, "namespace": "n"}, {"id": "o", "content": "other note", "namespace": "n"}])
    for _ in range(6):
        h = db.search("garden tomatoes beans herbs", namespace="n", k=2)
        db.feedback(h.query_id or "", used=["o"])
    kept = {d.id: d for d in db.lifecycle.consolidate(now=NOW + timedelta(days=20)).decisions}["g"]
    assert kept.action == "keep" and "a recent question reaches it" in kept.reason  # the searches above did
    rep = db.lifecycle.consolidate(now=NOW + timedelta(days=20), dry_run=False, summarizer=lambda t: t.split(".")[0] + ".",
                         protect_days=0)
    assert {d.id: d.action for d in rep.decisions}["g"] == "compress"
    g = db.get("g")
    assert g is not None and g.content == "First about the garden." and g.version == 2
    assert g.metadata["compressed"]["chars_before"] == len(text)
    assert db.search("tomatoes beans herbs", namespace="n", k=1)[0].id == "g"  # still found by its full text
    with pytest.raises(ValueError, match="the summarizer returned '' for 'g'"):
        db.update("g", metadata={})  # a new version without the mark: compressible again
        db.lifecycle.consolidate(now=NOW + timedelta(days=60), dry_run=False, summarizer=lambda t: "", protect_days=0)


def test_promotion_and_the_read_only_rule(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"id": f"m{i}", "content": f"violin lessons {i}", "namespace": "n"} for i in range(3)])
    for _ in range(30):
        h = db.search("violin lessons", namespace="n", k=3)
        db.feedback(h.query_id or "", used=[x.id for x in h])
    rep = db.lifecycle.consolidate(now=NOW + timedelta(days=8), dry_run=False)
    assert {d.action for d in rep.decisions} == {"promote"} and db.importance.tiers().tier("m0") == "long_term"
    db.close()
    with engramdb.open(tmp_path / "s", read_only=True) as ro:
        assert ro.lifecycle.consolidate(now=NOW + timedelta(days=9)).dry_run
        with pytest.raises(engramdb.StoreError, match="read-only"):
            ro.lifecycle.consolidate(dry_run=False)


def test_a_forgotten_memory_is_restorable_for_30_days_then_purged(tmp_path: Path) -> None:
    """S7: forget is soft for 30 days (restore brings it back), then consolidation or
    purge_forgotten removes it from every file; a memory forgotten more recently waits."""
    db = engramdb.open(tmp_path / "s")
    old = db.add("my old address is 12 Elm Street", namespace="n")
    recent = db.add("my gym locker code is 4821", namespace="n")
    kept = db.add("the build uses cmake", namespace="n")
    db.forget(old.id)
    assert db.lifecycle.purge_forgotten(now=NOW + timedelta(days=29)) == []  # inside the window: nothing goes
    db.restore(old.id)
    assert db.get(old.id) is not None
    db.forget(old.id)
    later = NOW + timedelta(days=31)
    db.forget(recent.id)  # forgotten now, and "now" for the run below is 31 days on: it is due too
    assert db.lifecycle.purge_forgotten(now=later, dry_run=True) == sorted([old.id, recent.id])
    dry = db.lifecycle.consolidate(now=later)  # a dry run lists what is due and purges nothing
    assert dry.purged == sorted([old.id, recent.id]) and "2 forgotten over 30 days due for purge" in dry.summary()
    assert db.get(old.id, include_forgotten=True) is not None
    done = db.lifecycle.consolidate(now=later, dry_run=False, namespace="n")
    assert done.purged == sorted([old.id, recent.id]) and done.applied["purge"] == 2
    for mid in (old.id, recent.id):
        assert db.get(mid, include_forgotten=True) is None
        with pytest.raises(engramdb.StoreError, match="no memory with id"):
            db.restore(mid)
    assert db.get(kept.id) is not None and len(db) == 1
    db.close()
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            assert b"12 Elm Street" not in p.read_bytes() and b"4821" not in p.read_bytes(), p.name


def test_purge_forgotten_checks_its_arguments(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.forget(db.add("x", namespace="n").id)
    with pytest.raises(ValueError, match="days must be a number >= 0, got -1"):
        db.lifecycle.purge_forgotten(days=-1)
    db.close()
    with engramdb.open(tmp_path / "s", read_only=True) as r:
        assert r.lifecycle.purge_forgotten(days=0, dry_run=True) != []
        with pytest.raises(engramdb.StoreError, match="read-only"):
            r.lifecycle.purge_forgotten(days=0)
