"""Edge inference (H2): a pluggable inferrer, the built-in heuristic, the 0.7 bar, bad proposals
rejected with reasons, a failing hook skipped, and inferred edges feeding the graph method."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pytest
from engramdb import Candidate, EdgeProposal, HeuristicInferrer, Memory, Store, cli

T0 = datetime(2023, 5, 1, tzinfo=timezone.utc)


def make(path: Path | None = None) -> tuple[Store, list[str]]:
    db = engramdb.open(path, dedup="off")
    ids = db.add_many([
        {"content": "Melanie started a pottery class in May", "namespace": "n", "valid_from": T0},
        {"content": "Melanie loves her pottery class because it calms her", "namespace": "n",
         "valid_from": T0 + timedelta(days=7)},
        {"content": "Caroline went to a support group meeting", "namespace": "n", "valid_from": T0 + timedelta(days=8)},
        {"content": "The vet said the dog needs vaccinations", "namespace": "n", "valid_from": T0 + timedelta(days=9)},
        {"content": "Melanie started a pottery class in May", "namespace": "other"},
    ])
    return db, ids


def test_heuristic_links_a_stated_cause_to_the_earlier_memory_and_stores_only_sure_edges() -> None:
    db, ids = make()
    report = db.admin.infer_edges(namespace="n")
    assert report.memories == 4 and not report.failed and not report.rejected
    stored = {(e.src, e.dst, e.type) for e in report.stored}
    assert (ids[1], ids[0], "CAUSED_BY") in stored
    assert all(e.confidence >= 0.7 for e in report.stored)
    assert all(e.namespace == "n" and e.dst != ids[4] for e in report.stored), "never across namespaces"
    # the reverse direction is only RELATED_TO, proposed, counted, not stored: its confidence is
    # the idf-weighted overlap in a namespace of 4 memories, shared melani/potteri/class (df 2,
    # idf ln 2 each) against 5 terms a side (two more of df 1, idf ln(1 + 3.5 / 1.5))
    idf2, idf1 = math.log(2), math.log1p(3.5 / 1.5)
    below = {(src, p.dst, p.type): p.confidence for src, p in report.below_threshold}
    assert below[(ids[0], ids[1], "RELATED_TO")] == pytest.approx(3 * idf2 / (3 * idf2 + 2 * idf1), abs=1e-4)
    assert (ids[0], ids[1], "RELATED_TO") not in stored
    edge = db.edges(ids[1], direction="out")[0]
    assert edge.type == "CAUSED_BY" and "because" in (edge.reason or "")


def test_heuristic_needs_both_the_main_space_and_shared_words() -> None:
    m = Memory(id="a", namespace="n", content="Melanie loves pottery because it calms her", valid_from=T0)
    earlier = Memory(id="b", namespace="n", content="Melanie took up pottery", valid_from=T0 - timedelta(days=1))
    later = Memory(id="c", namespace="n", content="Melanie pottery show", valid_from=T0 + timedelta(days=1))
    unrelated = Memory(id="d", namespace="n", content="The vet vaccinated the dog", valid_from=T0 - timedelta(days=1))
    h = HeuristicInferrer()
    assert h(m, [Candidate(earlier, 0.3, 0.0)]) == [], "no main-space agreement: no edge"
    assert h(m, [Candidate(unrelated, 0.9, 1.0)]) == [], "no shared words: no edge"
    (p,) = h(m, [Candidate(earlier, 0.7, 0.75)])
    # 2 of the shorter memory's 3 terms (melani, took, potteri) are shared: 0.5 + 0.5 x 2/3
    assert p.type == "CAUSED_BY" and p.dst == "b" and p.confidence == pytest.approx(0.8333)
    (q,) = h(m, [Candidate(later, 0.7, 0.75)])
    assert q.type == "RELATED_TO", "a later memory is not a cause"
    with pytest.raises(ValueError, match="min_shared"):
        HeuristicInferrer(min_shared=0)


def test_a_custom_inferrer_sees_candidates_and_its_bad_proposals_are_rejected_with_reasons() -> None:
    db, ids = make()
    seen: dict[str, list[Candidate]] = {}

    def hook(memory: Memory, candidates: Sequence[Candidate]) -> list[object]:
        seen[memory.id] = list(candidates)
        if memory.id != ids[2]:
            return []
        return [
            EdgeProposal(ids[3], "MENTIONED_WITH", 0.9, "the model said so"),
            EdgeProposal(ids[0], "MENTIONED_WITH", 0.5, "unsure"),
            EdgeProposal(ids[0], "not-a-type", 0.9),
            EdgeProposal("no-such-id", "MENTIONED_WITH", 0.9),
            EdgeProposal(ids[4], "MENTIONED_WITH", 0.9),  # the other namespace
            EdgeProposal(ids[2], "MENTIONED_WITH", 0.9),  # itself
            EdgeProposal(ids[1], "MENTIONED_WITH", 1.5),
            ("a", "tuple"),
        ]

    report = db.admin.infer_edges(namespace="n", inferrer=hook, candidates=2)
    assert set(seen) == set(ids[:4])
    for mid, cands in seen.items():
        assert len(cands) == 2 and all(c.memory.id != mid and c.memory.namespace == "n" for c in cands)
        assert all(0.0 <= c.strength <= 1.0 for c in cands)
    assert [(e.src, e.dst, e.type, e.confidence, e.reason) for e in report.stored] == [
        (ids[2], ids[3], "MENTIONED_WITH", 0.9, "the model said so")]
    assert [(p.dst, p.confidence) for _, p in report.below_threshold] == [(ids[0], 0.5)]
    reasons = [why for _, _, why in report.rejected]
    assert len(reasons) == 6
    assert "UPPER_SNAKE_CASE" in reasons[0] and "not-a-type" in reasons[0]
    assert "no-such-id" in reasons[1]
    assert "namespace" in reasons[2]
    assert "two different memories" in reasons[3]
    assert "confidence" in reasons[4] and "1.5" in reasons[4]
    assert "EdgeProposal" in reasons[5]
    assert db.get(ids[0]) is not None and len(db.edges(ids[2])) == 1


def test_a_failing_inferrer_is_recorded_and_the_run_goes_on() -> None:
    db, ids = make()
    db.link(ids[0], ids[3], "NOTED_WITH", confidence=0.9)  # stored before: must stay

    def hook(memory: Memory, candidates: Sequence[Candidate]) -> list[EdgeProposal]:
        if memory.id == ids[1]:
            raise TimeoutError("model timed out")
        return [EdgeProposal(candidates[0].memory.id, "NEAR", 0.95)]

    report = db.admin.infer_edges([ids[0], ids[1], ids[2], "gone"], inferrer=hook)
    assert report.failed == {ids[1]: "TimeoutError: model timed out", "gone": "no such memory (or it is forgotten)"}
    assert {e.src for e in report.stored} == {ids[0], ids[2]}
    assert any(e.type == "NOTED_WITH" for e in db.edges(ids[0]))


def test_bad_arguments_name_the_field_and_value() -> None:
    db, ids = make()
    with pytest.raises(ValueError, match=r"min_confidence must be in \[0.7, 1\].*0.5"):
        db.admin.infer_edges(namespace="n", min_confidence=0.5)
    with pytest.raises(ValueError, match="exactly one"):
        db.admin.infer_edges(ids[:1], namespace="n")
    with pytest.raises(ValueError, match="exactly one"):
        db.admin.infer_edges()
    with pytest.raises(ValueError, match="candidates must be an int.*0"):
        db.admin.infer_edges(namespace="n", candidates=0)
    with pytest.raises(TypeError, match="inferrer must be a callable"):
        db.admin.infer_edges(namespace="n", inferrer="gpt")  # type: ignore[arg-type]
    assert db.admin.infer_edges(namespace="empty").memories == 0


def test_inferred_edges_feed_the_graph_method_of_hybrid_search() -> None:
    db, ids = make()
    q = "support group meeting"
    before = {h.id: h for h in db.search(q, namespace="n", k=4, strategy="hybrid", explain=True)}
    assert ids[3] not in before or "graph" not in before[ids[3]].explain["methods"]  # type: ignore[index]

    def hook(memory: Memory, candidates: Sequence[Candidate]) -> list[EdgeProposal]:
        return [EdgeProposal(ids[3], "FOLLOWED_BY", 0.9)] if memory.id == ids[2] else []

    db.admin.infer_edges([ids[2]], inferrer=hook)
    after = {h.id: h for h in db.search(q, namespace="n", k=4, strategy="hybrid", explain=True)}
    assert "graph" in after[ids[3]].explain["methods"]  # type: ignore[index]


def test_cli_infer_edges_stores_and_prints_edges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = make(tmp_path / "m")
    db.close()
    assert cli.main(["infer-edges", "--path", str(tmp_path / "m"), "--namespace", "n", "--json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["stored"]
    assert {"src": ids[1], "dst": ids[0], "type": "CAUSED_BY"}.items() <= rows[0].items()
    assert "4 memories" in err
    with engramdb.open(tmp_path / "m") as again:
        assert again.edges(ids[1], direction="out")[0].type == "CAUSED_BY"
    assert cli.main(["infer-edges", "--path", str(tmp_path / "m"), "--namespace", "n", "--min-confidence", "0.2"]) == 1
    assert "min_confidence" in capsys.readouterr().err
