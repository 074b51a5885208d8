"""bench/eval_locomo.py on synthetic data: evidence repair, session dates, recall, and one small end-to-end run.

No LoCoMo data here (CC BY-NC): the conversations below are made up in LoCoMo's shape.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import eval_locomo as ev

KNOWN = frozenset({"D1:1", "D1:2", "D1:3", "D2:1", "D2:5", "D11:26", "D30:5"})


def kinds(notes: list[ev.Repair]) -> list[str]:
    return [n.kind for n in notes]


def test_clean_evidence_is_untouched() -> None:
    assert ev.repair_evidence(["D1:1", "D2:5"], KNOWN) == (["D1:1", "D2:5"], [])


@pytest.mark.parametrize(
    ("raw", "fixed", "expected_kinds"),
    [
        (["D1:2; D2:1"], ["D1:2", "D2:1"], ["split"]),
        (["D1:1 D1:2 D2:1"], ["D1:1", "D1:2", "D2:1"], ["split"]),
        (["D1:1,D1:3"], ["D1:1", "D1:3"], ["split"]),
        (["D:11:26"], ["D11:26"], ["extra_colon"]),
        (["D30:05"], ["D30:5"], ["leading_zero"]),
        ([" d2 : 5 "], ["D2:5"], ["format"]),
        (["D1-3"], ["D1:3"], ["format"]),
        (["D1:1", "D9:9"], ["D1:1"], ["unknown"]),
        (["D1:1", "D", "D1:2"], ["D1:1", "D1:2"], ["malformed"]),
        (["D1:1", "D1:1", "D2:1"], ["D1:1", "D2:1"], ["duplicate"]),
        (["D1:1", "D:1:1"], ["D1:1"], ["extra_colon", "duplicate"]),
        (["D2:1; D02:05"], ["D2:1", "D2:5"], ["split", "leading_zero"]),
    ],
)
def test_repairs(raw: list[str], fixed: list[str], expected_kinds: list[str]) -> None:
    got, notes = ev.repair_evidence(raw, KNOWN)
    assert got == fixed
    assert kinds(notes) == expected_kinds
    assert all(n.kind in ev.REPAIR_KINDS for n in notes)


def test_unrepairable_evidence_comes_back_empty() -> None:
    got, notes = ev.repair_evidence(["D", "D7:7", ""], KNOWN)
    assert got == []
    assert kinds(notes) == ["malformed", "unknown", "malformed"]
    assert str(notes[1]) == "unknown: 'D7:7' -> dropped"


def test_split_note_names_the_pieces() -> None:
    _, notes = ev.repair_evidence(["D1:2; D2:1"], KNOWN)
    assert notes[0].result == ("D1:2", "D2:1")
    assert str(notes[0]) == "split: 'D1:2; D2:1' -> D1:2, D2:1"


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=timezone.utc)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=timezone.utc)),
        ("9:05 AM on 2 Feb 2022", datetime(2022, 2, 2, 9, 5, tzinfo=timezone.utc)),
    ],
)
def test_session_dates(text: str, when: datetime) -> None:
    got = ev.parse_session_date(text)
    assert got == when and got.tzinfo is timezone.utc


@pytest.mark.parametrize("text", ["", "8 May 2023", "1:56 pm on 8 Maybe, 2023", "25:00 on 8 May, 2023"])
def test_bad_session_dates_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a LoCoMo session date"):
        ev.parse_session_date(text)


def test_recall_at() -> None:
    hits = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1"]
    assert ev.recall_at(hits, ["D1:1", "D2:1"], 5) == 0.5
    assert ev.recall_at(hits, ["D1:1", "D2:1"], 10) == 1.0
    assert ev.recall_at([], ["D1:1"], 10) == 0.0


def test_turn_content() -> None:
    when = ev.parse_session_date("1:56 pm on 8 May, 2023")
    t = ev.Turn("c1", "D1:1", "Ana", "hello there", 1, "1:56 pm on 8 May, 2023", when)
    assert t.content(True) == "[1:56 pm on 8 May, 2023] Ana: hello there"
    assert t.content(False) == "hello there"


WORDS = ("kayak", "violin", "tulip", "glacier", "lantern", "pepper", "saddle", "comet", "harbor", "quartz",
         "meadow", "anchor", "falcon", "walnut", "ember", "pottery")


def synthetic(path: Path) -> Path:
    """Two made-up conversations in LoCoMo's shape (12 turns each over two sessions), malformed evidence."""
    data = []
    for c, (a, b) in enumerate((("Ana", "Ben"), ("Cleo", "Dev"))):
        conv: dict[str, object] = {"speaker_a": a, "speaker_b": b}
        texts: dict[int, list[str]] = {}
        for s in (1, 2):
            texts[s] = [f"I spent the day with my {WORDS[(6 * s + i + c) % 16]} and {WORDS[(6 * s + 2 * i) % 16]}"
                        for i in range(6)]
            conv[f"session_{s}_date_time"] = f"{s + 1}:0{c} pm on {s + 10} March, 2024"
            conv[f"session_{s}"] = [{"speaker": (a, b)[i % 2], "dia_id": f"D{s}:{i + 1}", "text": text}
                                    for i, text in enumerate(texts[s])]
        qa = [
            {"question": texts[1][0], "answer": "x", "evidence": ["D1:1"], "category": 4},
            {"question": texts[2][3], "answer": "x", "evidence": ["D:2:4", "D9:9"], "category": 2},
            {"question": "anything?", "adversarial_answer": "x", "evidence": ["D1:01; D2:2"], "category": 5},
            {"question": "no evidence", "answer": "x", "evidence": [], "category": 3},
            {"question": "bad evidence", "answer": "x", "evidence": ["D"], "category": 1},
        ]
        data.append({"sample_id": f"synth-{c}", "conversation": conv, "qa": qa})
    out = path / "synthetic.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def test_end_to_end_on_synthetic_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = synthetic(tmp_path)
    ds = ev.load_locomo(data)
    assert len(ds.turns) == 24 and ds.conversations == 2
    assert ds.turns[0].when == datetime(2024, 3, 11, 14, 0, tzinfo=timezone.utc)
    assert (ds.no_evidence, ds.dropped, len(ds.questions)) == (2, 2, 6)
    assert ds.questions[1].evidence == ("D2:4",) and ds.questions[2].evidence == ("D1:1", "D2:2")
    summary = ev.repair_summary(ds)
    for kind, count in (("extra_colon", 2), ("unknown", 2), ("split", 2), ("leading_zero", 2), ("malformed", 2)):
        assert f"{count:3d} x {kind}:" in summary
    assert len(ev.load_locomo(data, limit=1).questions) == 3

    pr = ev.evaluate(data, ds, "default", ["dense_only", "no_such_strategy"])
    assert pr.memories == 24
    ok, skipped = pr.strategies
    assert skipped.skipped and not skipped.recalls
    assert len(ok.recalls) == 6 and len(ok.latencies_ms) == 6
    by_q = dict(zip([q.text for q in ds.questions], ok.recalls))
    assert by_q[ds.questions[0].text][1] == 1.0  # the question is the evidence turn's own text
    table = ev.format_table(pr)
    assert "no_such_strategy skipped:" in table and "dense_only" in table

    monkeypatch.setenv("ENGRAMDB_BENCH_ALLOW_EDITABLE", "1")
    out = tmp_path / "out.json"
    argv = ["--data", str(data), "--profiles", "default", "--strategies", "dense_only,nope", "--json", str(out)]
    assert ev.main(argv) == 0
    printed = capsys.readouterr().out
    assert "evidence repairs:" in printed and "nope" in printed and "skipped:" in printed
    numbers = json.loads(out.read_text(encoding="utf-8"))
    dense = numbers["profiles"]["default"]["strategies"]["dense_only"]
    assert dense["questions"] == 6 and 0 <= dense["recall@5"] <= dense["recall@10"] <= 1
    assert set(dense["per_category"]) == {"1", "2", "3", "4", "5"}
    assert numbers["profiles"]["default"]["strategies"]["nope"]["skipped"]
    assert numbers["repairs"]["counts"]["split"] == 2
    assert "anything?" not in out.read_text(encoding="utf-8")  # numbers only, no question text


class FakeStore:
    """A store whose search takes query_vector= (as a future engramdb may): records what it was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def search(self, query: str, *, namespace: str, k: int = 10, strategy: str | None = None,
               query_vector: object = None) -> list[object]:
        if strategy == "nope":
            raise ValueError("strategy 'nope' is not available")
        self.calls.append({"query": query, "namespace": namespace, "k": k, "query_vector": query_vector})
        return [type("Hit", (), {"id": f"{namespace}/D1:{i}"})() for i in (2, 1)]


def test_query_vectors_are_passed_when_search_takes_them() -> None:
    db = FakeStore()
    assert ev.takes_query_vector(db)
    qs = [ev.Question("c", 0, "who?", 1, ("D1:1",)), ev.Question("c", 1, "when?", 2, ("D1:1", "D1:5"))]
    ids = {"c/D1:1": "D1:1", "c/D1:2": "D1:2"}
    res = ev.run_strategy(db, ids, qs, "hybrid", query_vectors=np.eye(2, dtype=np.float32))
    assert [c["query_vector"].tolist() for c in db.calls] == [[1.0, 0.0], [0.0, 1.0]]  # type: ignore[union-attr]
    assert [c["query"] for c in db.calls] == ["who?", "when?"] and db.calls[0]["k"] == 10
    assert res.recalls == [(1, 1.0, 1.0), (2, 0.5, 0.5)]
    assert ev.run_strategy(db, ids, qs, "nope", None).skipped == "strategy 'nope' is not available"
