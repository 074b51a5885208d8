"""bench/longdev.py (issue 28's long-history development view) on a tiny synthetic conversation set in
LoCoMo's shape (no LoCoMo text here: it is CC BY-NC): roles, merged long assistant turns, documentation
replies, date shifting, the first-person rule, tags, seeded distractors, and one small end-to-end run."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import _first_person as fp
import eval_locomo as ev
import longdev as ld

WORDS = " ".join(f"w{i}" for i in range(90))  # filler that makes a documentation chunk long enough


def _session(conv: int, n: int, speakers: list[str], texts: list[str]) -> list[dict[str, str]]:
    return [{"speaker": s, "dia_id": f"D{n}:{i + 1}", "text": t} for i, (s, t) in enumerate(zip(speakers, texts))]


def _locomo() -> list[dict[str, Any]]:
    """Three made-up conversations. c-a's first session has the assistant (Bob) speak twice in a row;
    its second session is opened by Bob, so Bob is that session's user."""
    a = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "10:00 am on 1 January, 2023",
        "session_1": _session(0, 1, ["Ann", "Bob", "Bob", "Ann", "Bob"],
                              ["I adopted a kitten named Pebble.", "Congratulations!", "Kittens are fun.",
                               "I also research adoption agencies.", "Good luck with that."]),
        "session_2_date_time": "10:00 am on 1 March, 2023",
        "session_2": _session(0, 2, ["Bob", "Ann"], ["I painted a lighthouse at dawn.", "Lovely painting."]),
        "session_3_date_time": "10:00 am on 1 May, 2023",
        "session_3": _session(0, 3, ["Ann", "Bob"], ["Pebble learned to open doors.", "Clever cat."]),
    }
    b: dict[str, Any] = {"speaker_a": "Cy", "speaker_b": "Dee"}
    for n, month in enumerate(["May", "June", "July"], start=1):
        b[f"session_{n}_date_time"] = f"9:00 am on 1 {month}, 2021"
        b[f"session_{n}"] = _session(1, n, ["Cy", "Dee", "Cy", "Dee"],
                                     [f"cy talk {n}", f"dee reply {n}", f"cy more {n}", f"dee more {n}"])
    c: dict[str, Any] = {"speaker_a": "Eve", "speaker_b": "Fay"}
    for n, month in enumerate(["February", "August"], start=1):
        c[f"session_{n}_date_time"] = f"8:00 pm on 3 {month}, 2020"
        c[f"session_{n}"] = _session(2, n, ["Fay", "Eve"], [f"fay opens {n}", f"eve answers {n}"])
    qa = [
        {"question": "What did Ann research?", "answer": "x", "evidence": ["D1:4"], "category": 1},
        {"question": "What is Ann's kitten called?", "answer": "x", "evidence": ["D1:1", "D3:1"], "category": 4},
        {"question": "What did Bob paint?", "answer": "x", "evidence": ["D2:1"], "category": 4},
        {"question": "What did Ann say about kittens?", "answer": "x", "evidence": ["D1:3"], "category": 5},
        {"question": "What did Ann and Bob talk about?", "answer": "x", "evidence": ["D1:1", "D1:2"], "category": 3},
    ]
    return [{"sample_id": "c-a", "conversation": a, "qa": qa},
            {"sample_id": "c-b", "conversation": b, "qa": []},
            {"sample_id": "c-c", "conversation": c, "qa": []}]


DOCS = {
    "README.md": f"# Title\n\nIntro {WORDS}\n\n## Install\n\n```\n# not a heading\npip install x\n```\n\n- a {WORDS}\n",
    "docs/guide.md": f"## Search\n\nsearch guide {WORDS}\n\n## Tiny\n\ntoo short\n",
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ev.Dataset:
    path = tmp_path_factory.mktemp("longdev") / "locomo.json"
    path.write_text(json.dumps(_locomo()), encoding="utf-8")
    return ev.load_locomo(path)


def build(data: ev.Dataset, seed: int = ld.SEED, sessions: int = 6, group: int = 1) -> ld.LongView:
    return ld.build(data.turns, data.questions, ["c-a"], ld.doc_sections(DOCS), sessions, seed, group)


def test_doc_sections_split_at_headings_outside_fences_and_drop_short_chunks() -> None:
    chunks = ld.doc_sections(DOCS, (80, 120))
    assert len(chunks) == 3  # README's two sections, guide's "Search"; "Tiny" is too short
    assert chunks[0].startswith("# Title")
    assert "```\n# not a heading\npip install x\n```" in chunks[1]  # the fence stays whole, with its '#'
    assert all(len(c.split()) >= 80 for c in chunks)
    # with room for both, a file's consecutive sections are packed into one chunk
    assert len(ld.doc_sections(DOCS, (80, 400))) == 2


def test_roles_follow_who_opens_each_session(data: ev.Dataset) -> None:
    hay = build(data).haystacks["c-a"]
    assert len(hay.sessions) == 6 and sum(p.own for p in hay.sessions) == 3
    for p in hay.sessions:
        assert p.user == p.session.turns[0].speaker
        for m in (m for m in hay.memories if m.session == hay.sessions.index(p)):
            assert m.role == ("user" if m.speaker == p.user else "assistant")
    by_id = {m.key: m for m in hay.memories}
    assert by_id["D1:1"].role == "user" and by_id["D2:1"].role == "user"  # Ann, then Bob, opens
    assert by_id["D2:2"].role == "assistant"
    assert hay.turn_role["D2:1"] == "user" and hay.turn_role["D1:4"] == "user"


def test_memories_are_the_bare_text(data: ev.Dataset) -> None:
    hay = build(data).haystacks["c-a"]
    by_id = {m.key: m for m in hay.memories}
    assert by_id["D1:4"].content == "I also research adoption agencies."


def test_consecutive_assistant_turns_are_one_long_turn(data: ev.Dataset) -> None:
    lv = build(data)
    merged = next(m for m in lv.view.memories if "D1:2" in m.dia_ids)
    assert merged.dia_ids == ("D1:2", "D1:3")
    assert merged.content == "Congratulations!\n\nKittens are fun."
    assert lv.view.holder[("c-a", "D1:3")] == merged.id
    # the user's turns are never merged, even with the assistant between them
    assert next(m for m in lv.view.memories if "D1:4" in m.dia_ids).dia_ids == ("D1:4",)


def test_documentation_replies_are_long_assistant_turns_in_distractor_sessions_only(data: ev.Dataset) -> None:
    lv = build(data)
    hay = lv.haystacks["c-a"]
    docs = ld.doc_sections(DOCS)
    with_docs = [m for m in hay.memories if any(d.startswith("doc:") for d in m.dia_ids)]
    assert with_docs, "no documentation reply was inserted"
    for m in with_docs:
        p = hay.sessions[m.session]
        assert not p.own and m.role == "assistant"
        assert not m.dia_ids[0].startswith("doc:")  # merged into the assistant turn it follows
        assert any(("\n\n" + d) in m.content for d in docs)
    for p in hay.sessions:
        if not p.own:
            assert ld.DOCS_PER_SESSION[0] <= len(p.docs) <= ld.DOCS_PER_SESSION[1]
    own_text = " ".join(m.content for m in hay.memories if hay.sessions[m.session].own)
    assert "w89" not in own_text


def test_distractor_dates_are_shifted_into_the_conversation_range(data: ev.Dataset) -> None:
    hay = build(data).haystacks["c-a"]
    own = [p.when for p in hay.sessions if p.own]
    for p in hay.sessions:
        assert own[0] <= p.when <= own[-1]
        if not p.own:
            assert p.session.when.year in (2020, 2021)  # it came from another conversation...
            assert p.when.year == 2023  # ...and was moved
    # a source's sessions keep their order; its first and last land on the range's ends
    for src in ("c-b", "c-c"):
        mine = sorted((p.session.number, p.when) for p in hay.sessions if p.session.source == src)
        assert [w for _, w in mine] == sorted(w for _, w in mine)
    whens = [m.when for m in hay.memories]
    assert whens == sorted(whens)
    assert hay.question_date == max(whens) + timedelta(days=1)
    assert all(q.date > w for q in build(data).questions for w in whens)


def test_shift_is_the_linear_map() -> None:
    src = (ev.parse_session_date("1:00 am on 1 January, 2020"), ev.parse_session_date("1:00 am on 11 January, 2020"))
    dst = (ev.parse_session_date("1:00 am on 1 May, 2023"), ev.parse_session_date("1:00 am on 21 May, 2023"))
    mid = ev.parse_session_date("1:00 am on 6 January, 2020")
    assert ld.shift(mid, src, dst) == ev.parse_session_date("1:00 am on 11 May, 2023")
    assert ld.shift(src[0], src, dst) == dst[0] and ld.shift(src[1], src, dst) == dst[1]


def test_distractors_are_seeded(data: ev.Dataset) -> None:
    def picked(seed: int) -> list[tuple[str, int, tuple[tuple[int, str], ...]]]:
        hay = build(data, seed=seed).haystacks["c-a"]
        return [(p.session.source, p.session.number, p.docs) for p in hay.sessions if not p.own]

    assert picked(1) == picked(1)
    assert [m.content for m in build(data, seed=1).view.memories] == \
        [m.content for m in build(data, seed=1).view.memories]
    assert len({tuple(picked(s)) for s in range(8)}) > 1  # the seed decides which sessions come
    hay = build(data, sessions=50).haystacks["c-a"]
    assert len(hay.sessions) == 3 + 5  # the whole pool when it is smaller than asked for


@pytest.mark.parametrize(
    ("question", "user", "other", "expected"),
    [
        ("What did Caroline research?", "Caroline", "Melanie", "What did I research?"),
        ("What is Caroline's identity?", "Caroline", "Melanie", "What is my identity?"),
        ("When did Mel run a charity race?", "Melanie", "Caroline", "When did I run a charity race?"),
        ("What did Caroline and Mel do together?", "Caroline", "Melanie", None),
        ("What did Melanie paint?", "Caroline", "Melanie", None),
        ("How many times has Melanie gone to the beach?", "Melanie", "Caroline",
         "How many times have I gone to the beach?"),
        ("What does Jon think about his job?", "Jon", "Gina", "What do I think about my job?"),
        ("Where did Jolene travel with her partner?", "Jolene", "Deborah", "Where did I travel with my partner?"),
        ("What motivates Joanna to keep writing?", "Joanna", "Nate", "What motivates me to keep writing?"),
        ("What did Jean go through before meeting Maria?", "Maria", "John",
         "What did Jean go through before meeting me?"),
        ("What sparked James' passion for gaming when he was a kid?", "James", "John",
         "What sparked my passion for gaming when I was a kid?"),
        ("What is Tim excited to see?", "Tim", "John", "What am I excited to see?"),
        ("Who are the authors Jolene says she enjoys?", "Jolene", "Deborah", "Who are the authors I say I enjoy?"),
        ("What did James and Samantha enjoy?", "James", "John", "What did Samantha and I enjoy?"),
        ("What did Maria make to remind her of England?", "Maria", "John", "What did I make to remind me of England?"),
    ],
)
def test_first_person_rule(question: str, user: str, other: str, expected: str | None) -> None:
    assert fp.first_person(question, user, other) == expected


def test_questions_are_tagged_and_user_questions_asked_in_the_first_person(data: ev.Dataset) -> None:
    lv = build(data)
    q = {x.index: x for x in lv.questions}
    assert q[0].text == "What did I research?"
    assert set(q[0].tags) >= {"all", "multi-hop", "said by the user", "one session", ld.FIRST_PERSON}
    assert q[1].text == "What is my kitten called?"
    assert set(q[1].tags) >= {"several sessions", ld.SAME_SPEAKER}
    assert q[2].text == "What did I paint?"  # Bob is the user of session 2
    assert q[3].text == "What did Ann say about kittens?"  # the assistant said it: asked as it is
    assert "said by the assistant" in q[3].tags and ld.FIRST_PERSON not in q[3].tags
    assert q[4].text == "What did Ann and Bob talk about?" and "said by both" in q[4].tags
    assert all(x.date == lv.haystacks["c-a"].question_date for x in lv.questions)


def test_assistant_group_variant_merges_across_user_turns(data: ev.Dataset) -> None:
    hay = build(data, group=2).haystacks["c-a"]
    grouped = next(m for m in hay.memories if "D1:2" in m.dia_ids)
    assert grouped.dia_ids == ("D1:2", "D1:3", "D1:5")
    assert [m.key for m in hay.memories if m.session == 0] == ["D1:1", "D1:2", "D1:4"]


def test_end_to_end_run_scores_every_category(data: ev.Dataset, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    lv = build(data)
    base, run = ld.run_plain(lv), ld.run_store(lv, "default")
    assert base.skipped is None and run.skipped is None
    assert len(run.rows) == len(base.rows) == len(lv.questions) == 5
    # "What did I research?" shares only "research" with its evidence turn: both find it first
    assert run.rows[0][1:3] == (1.0, 1.0) and base.rows[0][1:3] == (1.0, 1.0)
    summary = run.summary()
    assert summary["per_category"]["all"]["questions"] == 5
    assert summary["ingest_per_s"] and summary["search_ms"]["p95"] is not None
    assert "| said by the user | 3 |" in ld.table(base, run)

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_locomo()), encoding="utf-8")
    monkeypatch.setenv("ENGRAMDB_BENCH_ALLOW_EDITABLE", "1")
    monkeypatch.setattr(ld, "read_docs", lambda rev: DOCS)
    out = tmp_path / "out.json"
    assert ld.main(["--data", str(path), "--profiles", "default", "--sessions", "6", "--json", str(out)]) == 0
    numbers = json.loads(out.read_text(encoding="utf-8"))
    assert set(numbers["profiles"]) == {"default"}
    assert numbers["view"]["haystacks"]["c-a"]["sessions"] == 6
    rows = numbers["per_question"]["default"]
    assert len(rows) == 5 and all(0.0 <= r[3] <= 1.0 for r in rows)
    assert "Pebble" not in out.read_text(encoding="utf-8")  # numbers only, no conversation text


def test_ablations_keep_the_questions_or_drop_the_documentation(data: ev.Dataset) -> None:
    kept = ld.build(data.turns, data.questions, ["c-a"], ld.doc_sections(DOCS), 6, ld.SEED, 1, rewrite=False)
    q = {x.index: x for x in kept.questions}
    assert q[0].text == "What did Ann research?" and ld.FIRST_PERSON in q[0].tags
    bare = ld.build(data.turns, data.questions, ["c-a"], [], 6)
    assert not any(d.startswith("doc:") for m in bare.view.memories for d in m.dia_ids)
    assert all(not p.docs for p in bare.haystacks["c-a"].sessions)
