"""bench/eval_locomo.py on synthetic data: evidence repair, session dates, recall, the views (bench/_views.py),
NDCG, the plain BM25 baseline, and one small end-to-end run.

No LoCoMo data here (CC BY-NC): the conversations below are made up in LoCoMo's shape.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import _views
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
    assert set(numbers["views"]) == {"turns", "windows", "assistant", "long"}
    turns = numbers["views"]["turns"]
    dense = turns["profiles"]["default"]["strategies"]["dense_only"]
    assert dense["questions"] == 6 and 0 <= dense["recall@5"] <= dense["recall@10"] <= 1
    assert 0 <= dense["ndcg@10"] <= 1
    assert dense["length_ratio"] > 0  # words in the top 10 over the namespace's mean
    assert set(dense["per_category"]) == {"1", "2", "3", "4", "5"}
    assert turns["profiles"]["default"]["strategies"]["nope"]["skipped"]
    assert turns["memories"] == 24 and numbers["views"]["windows"]["memories"] == 4
    assert numbers["views"]["assistant"]["memories"] == 16
    assert numbers["views"]["long"]["memories"] == 16  # each session's other speaker in one memory (few turns)
    assert turns[ev.PLAIN]["questions"] == 6
    gap = (dense["recall@10"] - turns[ev.PLAIN]["recall@10"]) * 100
    assert dense["vs_plain_bm25"]["recall@10"] == pytest.approx(gap)
    assert len(turns["per_question"][ev.PLAIN][0]) == 6  # conversation, qa, category, R@5, R@10, NDCG@10
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


# --- views, NDCG, plain BM25 (bench/_views.py) ---

DATE = "1:56 pm on 8 May, 2023"
WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def session(conv: str, s: int, speakers: str, texts: list[str] | None = None) -> list[ev.Turn]:
    """One session of `conv`: a turn per letter of `speakers` ("A" and "B"), texts "t<session>.<turn>"."""
    return [ev.Turn(conv, f"D{s}:{i + 1}", {"A": "Ana", "B": "Ben"}[sp],
                    texts[i] if texts else f"t{s}.{i + 1}", s, DATE, WHEN)
            for i, sp in enumerate(speakers)]


def test_turns_view_is_one_memory_per_turn() -> None:
    turns = session("c", 1, "AB") + session("c", 2, "BA")
    view = _views.build_view("turns", turns)
    assert [m.id for m in view.memories] == ["c/D1:1", "c/D1:2", "c/D2:1", "c/D2:2"]
    assert view.memories[1].content == f"[{DATE}] Ben: t1.2" and view.memories[1].role == "Ben"
    assert _views.build_view("turns", turns, prefix=False).memories[0].content == "t1.1"
    assert view.positions() == [0, 1, 0, 1]


def test_windows_view() -> None:
    turns = session("c", 1, "AB" * 7) + session("c", 2, "BAB") + session("d", 1, "A")
    view = _views.build_view("windows", turns)
    assert [m.id for m in view.memories] == ["c/w1:0", "c/w1:1", "c/w1:2", "c/w2:0", "d/w1:0"]
    assert [len(m.dia_ids) for m in view.memories] == [6, 6, 2, 3, 1]
    first = view.memories[0]
    assert first.content == "\n".join(t.content(True) for t in turns[:6])
    assert first.dia_ids == tuple(f"D1:{i}" for i in range(1, 7))
    assert first.role == "Ana" and first.session == 1 and first.when == WHEN
    assert view.memories[3].role == "Ben" and view.memories[3].dia_ids == ("D2:1", "D2:2", "D2:3")
    assert view.holder[("c", "D1:7")] == "c/w1:1" and view.holder[("c", "D1:14")] == "c/w1:2"
    assert view.positions() == [0, 1, 2, 0, 0]
    assert view.conversations() == ["c", "d"]


def test_assistant_view_groups_the_other_speaker() -> None:
    # session 1: Ana speaks first (the user); Ben has 10 turns (2, 3, 5, 7, ..., 15, 16, 17)
    turns = session("c", 1, "ABBABABABABABABBB") + session("c", 2, "BAB")
    view = _views.build_view("assistant", turns)
    assert [m.id for m in view.memories] == [
        "c/D1:1", "c/a1:0", "c/D1:4", "c/D1:6", "c/D1:8", "c/D1:10", "c/D1:12", "c/D1:14", "c/a1:1",
        "c/D2:1", "c/a2:0", "c/D2:3"]
    user, para = view.memories[:2]
    assert user.role == "user" and user.speaker == "Ana" and user.dia_ids == ("D1:1",)
    assert user.content == f"[{DATE}] Ana: t1.1"
    assert para.role == "assistant" and para.speaker == "Ben" and para.when == WHEN
    assert para.dia_ids == ("D1:2", "D1:3", "D1:5", "D1:7", "D1:9", "D1:11", "D1:13", "D1:15")
    assert para.content == f"[{DATE}] Ben: " + " ".join(f"t1.{i}" for i in (2, 3, 5, 7, 9, 11, 13, 15))
    assert view.memories[8].dia_ids == ("D1:16", "D1:17") and view.memories[8].content == f"[{DATE}] Ben: t1.16 t1.17"
    # session 2: Ben speaks first, so there he is the user and Ana's turn makes the paragraph
    assert [m.role for m in view.memories[9:]] == ["user", "assistant", "user"]
    assert view.memories[10].content == f"[{DATE}] Ana: t2.2"
    assert _views.build_view("assistant", turns, prefix=False).memories[8].content == "t1.16 t1.17"
    assert view.holder[("c", "D1:15")] == "c/a1:0" and view.holder[("c", "D1:4")] == "c/D1:4"
    assert view.positions() == list(range(9)) + [0, 1, 2]
    assert sorted(d for m in view.memories for d in m.dia_ids) == sorted(t.dia_id for t in turns)


def test_unknown_view_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown view"):
        _views.build_view("pages", [])


def test_evidence_maps_to_distinct_memories() -> None:
    turns = session("c", 1, "AB" * 4)
    windows = _views.build_view("windows", turns)
    # D1:1 and D1:3 share the first window: one relevant memory; D1:8 is in the second
    assert _views.evidence_memories(windows.holder, "c", ["D1:1", "D1:3", "D1:8"]) == ["c/w1:0", "c/w1:1"]
    assert _views.evidence_memories(windows.holder, "c", ["D1:9"]) == ["c/?D1:9"]  # held by none: never hit

    class Store:
        def search(self, query: str, *, namespace: str, k: int = 10, strategy: str | None = None) -> list[object]:
            return [type("Hit", (), {"id": i})() for i in ("c/w1:0", "c/w1:1")[: 1 if query == "one" else 2]]

    qs = [ev.Question("c", 0, "one", 1, ("D1:1", "D1:3")), ev.Question("c", 1, "one", 2, ("D1:1", "D1:8")),
          ev.Question("c", 2, "two", 4, ("D1:2", "D1:7"))]
    res = ev.run_strategy(Store(), windows.ids(), qs, "default", None)
    assert res.recalls == [(1, 1.0, 1.0), (2, 0.5, 0.5), (4, 1.0, 1.0)]  # not 2/2 counted twice, not 1/2
    assert res.ndcgs[0] == 1.0 and res.ndcgs[2] == 1.0
    assert res.ndcgs[1] == pytest.approx(1 / (1 + 1 / np.log2(3)))
    # the turns view scores exactly as per-turn recall did
    res = ev.run_strategy(Store(), _views.build_view("turns", turns).ids(), qs[:1], "default", None)
    assert res.recalls == [(1, 0.0, 0.0)]


def test_ndcg_at_10() -> None:
    assert ev.ndcg_at(["a", "b"], ["a", "b"]) == 1.0
    ideal2 = 1 + 1 / np.log2(3)
    assert ev.ndcg_at(["x", "a", "b"], ["a", "b"]) == pytest.approx((1 / np.log2(3) + 1 / np.log2(4)) / ideal2)
    assert ev.ndcg_at(["a", "a", "x"], ["a", "b"]) == pytest.approx(1 / ideal2)  # a repeat gains once
    assert ev.ndcg_at([], ["a"]) == 0.0 and ev.ndcg_at(["a"], []) == 0.0
    assert ev.ndcg_at(["x"] * 10 + ["a"], ["a"]) == 0.0  # rank 11 is out
    many = [f"m{i}" for i in range(12)]
    assert ev.ndcg_at(many, many) == 1.0  # the ideal ranks min(12, 10) relevant memories
    assert ev.ndcg_at(many[:5], many) == pytest.approx(
        sum(1 / np.log2(r + 1) for r in range(1, 6)) / sum(1 / np.log2(r + 1) for r in range(1, 11)))


class Recorder:
    """Records the keywords of every search call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def search(self, query: str, **kw: object) -> list[object]:
        self.calls.append(kw)
        return []


def test_default_strategy_passes_no_strategy_argument() -> None:
    db = Recorder()
    q = [ev.Question("c", 0, "who?", 1, ("D1:1",))]
    ev.run_strategy(db, {}, q, "default", None)
    ev.run_strategy(db, {}, q, "hybrid", None)
    ev.run_strategy(db, {}, q, "pipeline+feedback", None)
    assert db.calls == [{"namespace": "c", "k": 10}, {"namespace": "c", "k": 10, "strategy": "hybrid"},
                        {"namespace": "c", "k": 10, "strategy": "pipeline", "stages": {"feedback": 10}}]
    assert ev.DEFAULT_STRATEGIES[0] == "default"


@pytest.mark.parametrize("seq", ["auto", "given"])
def test_build_store_records(seq: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import engramdb

    added: list[list[dict[str, object]]] = []
    fake = type("DB", (), {"add_many": lambda self, recs: added.append(list(recs))})()
    monkeypatch.setattr(engramdb, "open", lambda *a, **kw: fake)
    turns = session("c", 1, "ABABABAB") + session("c", 2, "AB") + session("d", 1, "BA")
    view = _views.build_view("windows", turns)
    db, ids, _ = ev.build_store("default", view, seq=seq, vectors=None, path=None)
    assert db is fake and ids["c/w1:1"] == ("D1:7", "D1:8")
    assert [[r["id"] for r in batch] for batch in added] == [["c/w1:0", "c/w1:1", "c/w2:0"], ["d/w1:0"]]
    rec = added[0][1]
    assert rec["session_id"] == "session_1" and rec["source"] == "turn" and rec["role"] == "Ana"
    assert rec["valid_from"] == WHEN and rec["namespace"] == "c"
    assert rec["metadata"] == {"dia_id": "D1:7", "speaker": "Ana", "date": DATE, "dia_ids": ["D1:7", "D1:8"]}
    if seq == "auto":
        assert all("seq" not in r for batch in added for r in batch)
    else:
        assert [r["seq"] for batch in added for r in batch] == [0, 1, 0, 0]


def test_minilm_view_vectors_are_cached_by_text_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = synthetic(tmp_path)
    names: list[str] = []

    def embed(name: str, texts: Callable[[], list[str]]) -> np.ndarray:
        names.append(name)
        return np.arange(len(texts()), dtype=np.float32)[:, None] * np.ones((1, 4), np.float32)

    monkeypatch.setattr(ev._corpus, "_embed_cached", embed)
    ds = ev.load_locomo(data, limit=1)
    view = _views.build_view("windows", ds.turns)
    vecs = ev.minilm_view_vectors(data, view, True)
    assert vecs.shape == (2, 4) and vecs[1, 0] == 1.0  # sliced from the 4 windows of both conversations
    texts = [m.content for m in _views.build_view("windows", ev.load_turns(data)).memories]
    assert names == [f"synthetic-windows-minilm-{ev._hash(texts)}.npy"]
    ev.minilm_view_vectors(data, _views.build_view("turns", ds.turns), True)
    assert names[-1].startswith("synthetic-turns-minilm-")  # the name the turn cache always had


CONVO = [
    "I bought a new kayak for the lake trips",
    "My violin teacher moved to Boston",
    "We painted the fence blue last weekend",
    "The kayaks were on sale at the harbor shop",
    "Thanks, see you soon!",
]


def test_plain_bm25_baseline() -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    turns = session("c", 1, "ABABA", CONVO) + session("d", 1, "AB", ["kayak talk", "violin talk"])
    view = _views.build_view("turns", turns)
    bm = _views.PlainBM25(view)
    hits = bm.search("Where did they buy kayaks?", namespace="c", k=10)
    assert {h.id for h in hits} == {"c/D1:1", "c/D1:4"}  # stemmed: kayaks ~ kayak; nothing else matches
    assert bm.search("violin teachers", namespace="c")[0].id == "c/D1:2"
    assert [h.id for h in bm.search("violin", namespace="d")] == ["d/D1:2"]  # one index per conversation
    assert bm.search("the and of", namespace="c") == []  # stop words only
    qs = [ev.Question("c", 0, "violin teacher", 4, ("D1:2",)),
          ev.Question("c", 1, "blue fence", 1, ("D1:3", "D1:1"))]
    res = ev.run_plain_bm25(view, qs)
    assert res.strategy == ev.PLAIN and res.skipped is None
    assert res.recalls == [(4, 1.0, 1.0), (1, 0.5, 0.5)] and res.ndcgs[0] == 1.0 and len(res.latencies_ms) == 2


def test_plain_bm25_is_skipped_without_bm25s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    turns = session("c", 1, "AB")
    res = ev.run_plain_bm25(_views.build_view("turns", turns), [ev.Question("c", 0, "x", 1, ("D1:1",))])
    assert res.skipped is not None and "bm25s" in res.skipped and not res.recalls


def test_table_deltas_against_plain_bm25() -> None:
    base = ev.StrategyResult(ev.PLAIN, recalls=[(1, 0.5, 0.5), (2, 1.0, 1.0)], ndcgs=[0.5, 1.0], latencies_ms=[1, 1])
    other = ev.StrategyResult("hybrid", recalls=[(1, 1.0, 1.0), (2, 0.0, 0.5)], ndcgs=[1.0, 0.3], latencies_ms=[2, 2])
    d = ev.deltas(other, base)
    assert d is not None
    assert d["recall@5"] == pytest.approx(-25.0) and d["recall@10"] == pytest.approx(0.0)
    assert d["worst_category"] == {"metric": "recall@10", "category": 2, "name": "temporal", "points": -50.0}
    assert ev.deltas(other, None) is None
    pr = ev.ProfileResult("default", 4, 0.1, "x", False, [other], view="windows", baseline=base)
    table = ev.format_table(pr)
    assert "view windows, profile default" in table
    row = next(line for line in table.splitlines() if line.startswith("hybrid"))
    assert "-25.0" in row and "-50.0 temporal" in row
    assert next(line for line in table.splitlines() if line.startswith(ev.PLAIN))


def test_long_view_puts_each_sessions_other_speaker_in_one_memory() -> None:
    turns = session("c", 1, "ABBABABABABABABBB") + session("c", 2, "BAB")
    view = _views.build_view("long", turns)
    assert view.name == "long"
    assert [m.id for m in view.memories] == [
        "c/D1:1", "c/a1:0", "c/D1:4", "c/D1:6", "c/D1:8", "c/D1:10", "c/D1:12", "c/D1:14",
        "c/D2:1", "c/a2:0", "c/D2:3"]
    para = view.memories[1]
    assert para.role == "assistant" and len(para.dia_ids) == 10 and para.dia_ids[-1] == "D1:17"
    assert sorted(d for m in view.memories for d in m.dia_ids) == sorted(t.dia_id for t in turns)
