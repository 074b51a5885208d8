"""Agent conversations through the public API (issue 26): what `Store.context` must and must not paste
before a prompt. A corrected fact (the new one in, the old one marked or out), a repeated prompt
(once), a topic change (the new topic's facts, not the old small talk), a long tool output (the
passage that matched, not the whole), who spoke, no internal id, no empty or meaningless section, a
session's turns under one date line and undated facts with none."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from pathlib import Path

import engramdb
import pytest
import store_helpers
from engramdb.context.result import Context

T1 = datetime(2025, 3, 1, 9, tzinfo=timezone.utc)
T2 = datetime(2025, 5, 1, 9, tzinfo=timezone.utc)
BETWEEN = datetime(2025, 4, 1, tzinfo=timezone.utc)
MACHINE_ID = re.compile(r"[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-")
HEADING = re.compile(r"^## ")


def pasteable(ctx: Context) -> list[str]:
    """What every block must be: no internal id, no line twice, no section without a line, no
    note that says nothing. Returns its memory lines (the lines that are neither a heading nor a
    date line)."""
    assert not MACHINE_ID.search(ctx.text), ctx.text
    assert "0 of them" not in ctx.text and "(valid" not in ctx.text, ctx.text
    rows = ctx.text.split("\n")
    for a, b in zip(rows, [*rows[1:], "## end"]):
        assert not (HEADING.match(a) and HEADING.match(b)), f"an empty section: {a!r}\n{ctx.text}"
    lines = [r for r in rows if r.startswith("- ")]
    folded = [" ".join(r.split()).casefold() for r in lines]
    assert len(folded) == len(set(folded)), f"a line twice:\n{ctx.text}"
    return lines


def test_a_corrected_fact_shows_the_new_one_and_marks_the_old_one_in_the_past() -> None:
    db = engramdb.open(None)
    old = db.add("I live in Paris.", namespace="u", role="user", session_id="s1", valid_from=T1)
    db.add("Nice city! Do you like the museums there?", namespace="u", role="assistant", session_id="s1",
           valid_from=T1)
    new = db.add("I live in Berlin now.", namespace="u", role="user", session_id="s2", valid_from=T2)
    db.supersede(old.id, new.id)
    now = db.context("Where do I live?", namespace="u", max_tokens=300)
    lines = pasteable(now)
    assert "- user: I live in Berlin now." in lines and "Paris" not in now.text
    assert "## Time" not in now.text  # nothing shown has ended and no past was asked: no note
    then = db.context("Where do I live?", namespace="u", max_tokens=300, as_of=BETWEEN)
    lines = pasteable(then)
    assert "- user: I live in Paris. (superseded 2025-05-01)" in lines and "Berlin" not in then.text
    assert then.text.endswith("## Time\n- Facts as of 2025-04-01; 1 of them no longer holds (marked).")


def test_a_version_and_its_successor_are_never_both_pasted() -> None:
    db = engramdb.open(None)
    old = db.add("The team standup is at 9:30 in room 4.", namespace="u", valid_from=T1)
    new = db.add("The team standup is at 10:00 in room 4.", namespace="u", valid_from=T2)
    db.supersede(old.id, new.id)
    for as_of in (None, BETWEEN):
        ctx = db.context("When is the team standup?", namespace="u", max_tokens=300, as_of=as_of)
        shown = {i.id for i in ctx.items if i.id is not None}
        assert len(shown & {old.id, new.id}) == 1, ctx.text
        pasteable(ctx)


def test_a_repeated_prompt_is_pasted_once() -> None:
    db = engramdb.open(None)
    prompt = "How do I undo the last database migration?"
    msgs = []
    for i in range(5):  # the user asks five times (once with other case and spacing), the agent tries each time
        msgs += [{"role": "user", "content": prompt if i != 3 else "how do I undo the  LAST database migration?"},
                 {"role": "assistant", "content": f"Try {i}: run alembic downgrade -1, then check the schema."}]
    db.add_messages(msgs, namespace="u", session_id="s1")
    ctx = db.context(prompt, namespace="u", max_tokens=600, session_id="s1")
    lines = pasteable(ctx)
    assert sum("undo the last database migration" in " ".join(r.split()).casefold() for r in lines) == 1
    assert sum(r.startswith("- assistant: Try ") for r in lines) >= 2  # the replies differ: each is its own line


def test_a_topic_change_brings_the_new_topics_facts_not_the_old_small_talk() -> None:
    db = engramdb.open(None)
    small = ["The weather is lovely today, sunny and warm.", "Yes! I took the dog for a long walk in the park.",
             "Your dog must love the park.", "He chased ducks by the pond all morning.", "Ha, dogs and ducks.",
             "Then we got ice cream on the way home.", "Sounds like a perfect sunny morning.",
             "It was, the weather helped."]
    db.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(small)],
                    namespace="u", session_id="chat")
    db.add_many([{"content": c, "namespace": "u", "source": "file_chunk"} for c in (
        "Release 2.3: the build fails on the ARM runner because the cross-compiler is missing from the CI image.",
        "The CI image for release builds is defined in ci/Dockerfile; add gcc-aarch64 there.")])
    ctx = db.context("Why does the release build fail on the ARM runner?", namespace="u", max_tokens=500,
                     session_id="chat")
    lines = pasteable(ctx)
    assert "- Release 2.3: the build fails on the ARM runner because the cross-compiler is missing from the CI " \
           "image." in lines
    assert not any(w in ctx.text for w in ("weather", "dog", "ducks", "ice cream")), ctx.text
    assert ctx.text.startswith("## Note\n- This question is far from what this session has been about")


def test_a_long_tool_output_is_quoted_at_the_passage_that_matched() -> None:
    db = engramdb.open(None)
    log = " ".join(f"step {i}: compiling module_{i}.c ... ok." for i in range(120))
    log += " error: the linker cannot find -lssl, install libssl-dev and rerun. "
    log += " ".join(f"step {i}: linking part_{i}.o ... skipped." for i in range(120, 240))
    db.add("Let me run the build.", namespace="u", role="assistant", session_id="s1")
    tool = db.add(log, namespace="u", role="tool", session_id="s1")
    ctx = db.context("what did the linker error say about libssl?", namespace="u", max_tokens=1000)
    lines = pasteable(ctx)
    quoted = next(r for r in lines if r.startswith("- tool: ..."))
    assert "the linker cannot find -lssl, install libssl-dev" in quoted and quoted.endswith("...")
    assert "step 0:" not in quoted and "step 239:" not in quoted and len(quoted) < len(log) / 2
    assert next(i for i in ctx.items if i.id == tool.id).provenance["snippet"] == log[:200]


def test_who_spoke_is_shown() -> None:
    db = engramdb.open(None)
    db.add_messages([{"role": "user", "content": "I live in Paris and work at a bakery."},
                     {"role": "assistant", "content": "Nice city! How long have you lived in Paris?"}],
                    namespace="u", session_id="s1")
    db.add("Caroline: I went to the support group in Paris yesterday.", namespace="u", valid_from=T1)
    db.add("I moved to Paris for the job at the bakery.", namespace="u", role="Melanie", session_id="s7")
    ctx = db.context("Who lives in Paris?", namespace="u", max_tokens=400)
    lines = pasteable(ctx)
    assert "- user: I live in Paris and work at a bakery." in lines
    assert "- assistant: Nice city! How long have you lived in Paris?" in lines
    assert "- Melanie: I moved to Paris for the job at the bakery." in lines
    assert "- Caroline: I went to the support group in Paris yesterday." in lines  # no role: the text as stored


def test_a_chat_log_stored_with_its_speakers_names_each_once() -> None:
    """A turn stored as a chat log reads ("Maya: I got the job!", role "Maya": what `engramdb demo`
    stores) is not told its speaker twice; a text that merely begins with another word is."""
    db = engramdb.open(None)
    db.add_messages([{"role": "Maya", "content": "Maya: I got the bakery job in Paris!"},
                     {"role": "Sam", "content": "sam:  Congrats on the Paris bakery!"},
                     {"role": "Sam", "content": "Maya said the Paris bakery opens at six."}],
                    namespace="u", session_id="s1")
    lines = pasteable(db.context("Who works at the Paris bakery?", namespace="u", max_tokens=400))
    assert "- Maya: I got the bakery job in Paris!" in lines
    assert "- sam: Congrats on the Paris bakery!" in lines  # its own spelling of the name, whitespace made one
    assert "- Sam: Maya said the Paris bakery opens at six." in lines
    assert not any(line.casefold().startswith(("- maya: maya:", "- sam: sam:")) for line in lines), lines
    # the same words from a turn with the role and from a text that names it: one line (pasteable)
    db.add("Maya: I got the bakery job in Paris!", namespace="u")
    db.add("I got the bakery job in Paris!", namespace="u", role="Maya")
    lines = pasteable(db.context("Who got the Paris bakery job?", namespace="u", max_tokens=400))
    assert lines.count("- Maya: I got the bakery job in Paris!") == 1, lines


def test_no_internal_id_in_the_block() -> None:
    db = engramdb.open(None)
    session = "3f2a9c1e-7b4d-4e21-9a8f-0c1d2e3f4a5b"  # an agent's session id (Claude Code gives UUIDs)
    db.add_messages([{"role": "user", "content": "Let's plan the garden: tomatoes, basil and peppers."},
                     {"role": "assistant", "content": "Tomatoes and basil grow well together."}],
                    namespace="u", session_id=session)
    far = db.context("What is the capital of Peru?", namespace="u", max_tokens=300, session_id=session)
    pasteable(far)  # the divergence note names no memory by id
    assert far.text.startswith("## Note\n- This question is far from what this session has been about")
    assert "tomatoes" not in far.text.casefold()  # the garden talk is no context for Peru
    near = db.context("Which plants grow well with tomatoes?", namespace="u", max_tokens=300, session_id=session)
    lines = pasteable(near)
    assert "- assistant: Tomatoes and basil grow well together." in lines
    assert session not in near.text and all(i.id is not None and i.id not in near.text for i in near.items)


def test_a_sessions_turns_share_one_date_line_and_undated_facts_have_none() -> None:
    db = engramdb.open(None)
    db.add_messages([{"role": "user", "content": "The kitchen tap is leaking again.", "valid_from": T1},
                     {"role": "assistant", "content": "Close the valve under the sink, then call the plumber.",
                      "valid_from": T1},
                     {"role": "user", "content": "The plumber says the kitchen tap needs a new washer.",
                      "valid_from": T1}], namespace="u", session_id="house-1")
    db.add("The kitchen tap is a Grohe model from 2019.", namespace="u")  # undated: no valid_from, no session
    ctx = db.context("What is wrong with the kitchen tap?", namespace="u", max_tokens=400)
    pasteable(ctx)
    rows = ctx.text.split("\n")
    assert rows.count("2025-03-01, house-1:") == 1
    at = rows.index("2025-03-01, house-1:")
    assert rows[at + 1:at + 4] == ["- user: The kitchen tap is leaking again.",  # in the order they were said
                                   "- assistant: Close the valve under the sink, then call the plumber.",
                                   "- user: The plumber says the kitchen tap needs a new washer."]
    assert "- The kitchen tap is a Grohe model from 2019." in rows  # no date line for it, no badge
    assert sum(1 for r in rows if re.search(r"\d{4}-\d{2}-\d{2}", r)) == 1


@pytest.mark.parametrize(("query", "heading"), [("What does my dog do at the park?", True),
                                                ("Is the vacuum cleaner broken?", False)])
def test_a_topic_heading_only_when_the_query_is_near_the_topic(query: str, heading: bool) -> None:
    db = engramdb.open(None)
    pets = ["loves the park", "chases the ducks at the park", "sleeps on the sofa after the park",
            "barks at the mail carrier", "eats chicken and rice", "needs a bath after the park",
            "plays fetch at the park", "is afraid of the vacuum", "likes the dog park on Sundays",
            "got a new collar and leash", "visits the vet in May", "naps in the sun"]
    dinners = ["pasta with tomato sauce", "a mushroom risotto", "tomato soup with basil", "pasta carbonara",
               "a vegetable curry with rice", "lentil soup", "pasta with pesto and basil", "a tomato and basil salad",
               "fried rice with egg", "a spicy bean chili", "mushroom soup", "baked salmon with rice"]
    db.add_many([{"content": f"My dog Biscuit {p}.", "namespace": "u"} for p in pets]
                + [{"content": f"For dinner I cooked {d}.", "namespace": "u"} for d in dinners])
    labels = [t.label for t in db.topics("u")]
    dog = next(label for label in labels if "dog" in label)
    ctx = db.context(query, namespace="u", max_tokens=300)
    pasteable(ctx)
    assert (f"## On {dog}" in ctx.text) is heading, ctx.text
    assert "## On" in ctx.text or ctx.text.startswith("## Related memories")  # its lines are related memories


def test_an_archived_memory_is_not_pasted_as_an_empty_line(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s", dedup="off", tuning=store_helpers.small_trees(200, 8))
    db.add_many([{"content": f"old note {i} about the garden shed and its red door", "namespace": "a"}
                 for i in range(300)])
    time.sleep(0.01)
    cut = datetime.now(timezone.utc)
    time.sleep(0.01)
    db.add_many([{"content": f"fresh note {i}: the garden shed red door got a new lock", "namespace": "a"}
                 for i in range(10)])
    db.admin.checkpoint()
    assert db.lifecycle.archive(cut)["memories"] > 0
    hits = db.search("garden shed door lock", namespace="a", k=50)
    assert any(h.archived for h in hits) and not all(h.archived for h in hits)
    ctx = db.context("garden shed door lock", namespace="a", max_tokens=1000)
    lines = pasteable(ctx)
    assert lines and all(r.startswith("- fresh note") for r in lines), ctx.text  # no empty line for an archived one


def test_a_turn_backfilled_into_a_session_reads_where_it_was_said() -> None:
    """A session's turns are pasted in the order they were said (seq), also when one of them was
    stored after the others (a capture that came late, an import): its learning time is later,
    its seq is not."""
    db = engramdb.open(None, dedup="off")
    db.add_many([{"role": "user", "content": "The kayak trip on the fjord was cold but lovely.", "seq": 2,
                  "namespace": "u", "session_id": "trip"},
                 {"role": "assistant", "content": "Did you see the kayak guide's seals near the fjord?", "seq": 3,
                  "namespace": "u", "session_id": "trip"}])
    time.sleep(0.01)
    db.add("We rented the kayak at the fjord harbour at dawn.", role="user", seq=1, namespace="u", session_id="trip")
    lines = pasteable(db.context("kayak fjord", namespace="u", max_tokens=600))
    said = [r for r in lines if "kayak" in r]
    assert len(said) == 3, lines
    assert "rented the kayak" in said[0] and "cold but lovely" in said[1] and "seals" in said[2], said
