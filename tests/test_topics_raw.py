"""Topics on text as users store it (issue 29): chat turns with the speaker as `role`, no prefix.

Small talk is set aside before clustering (it neither forms nor joins a topic), a label never
shows a speaker's name or filler, and no topic swallows the namespace (bench/eval_topics_raw.py
measures the same on LoCoMo)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb.spaces.schema import Space
from engramdb.topics import clustering
from engramdb.topics.smalltalk import FILLER, LEFT, LEFT_WITH_CHAT, PHRASES, SHORT, SmallTalk
from engramdb.topics.smalltalk import SMALL_TALK as SMALL_TALK_WORDS
from hypothesis import given, settings
from hypothesis import strategies as st

SPEAKERS = ("Caroline", "Melanie")
SUBJECTS = {
    "garden": ["basil", "tomato", "seedlings", "compost", "balcony", "watering"],
    "violin": ["violin", "bow", "rosin", "scales", "orchestra", "concerto"],
    "bread": ["sourdough", "starter", "flour", "oven", "crust", "loaf"],
    "hiking": ["trail", "summit", "boots", "ridge", "backpack", "campsite"],
    "chess": ["chess", "opening", "endgame", "rook", "tournament", "bishop"],
}
SMALL_TALK = ["Wow, that's awesome!", "Thanks so much!", "How about you?", "That's great, Caroline!",
              "Haha yeah, totally!", "Take care, bye!", "Sounds good, see you soon!", "Aww, that's so sweet!",
              "Hey Melanie! Long time no see, how's it going?", "Thanks, Caroline! That means a lot."]


def chat(seed: int = 0, per_subject: int = 10, small_talk: int = 40) -> list[dict[str, Any]]:
    """A conversation turn by turn: content turns about five subjects, each opening with a reaction
    and the other speaker's name (as people write), and short small-talk turns between them."""
    rng = random.Random(seed)
    turns: list[tuple[str, str]] = []
    for words in SUBJECTS.values():
        for i in range(per_subject):
            who = SPEAKERS[i % 2]
            other = SPEAKERS[1 - i % 2]
            picked = rng.sample(words, 4)
            text = f"Wow {other}, awesome! I spent the day on {picked[0]} and {picked[1]}, then the " \
                   f"{picked[2]} and the {picked[3]}."
            turns.append((text, who))
    turns += [(rng.choice(SMALL_TALK), SPEAKERS[i % 2]) for i in range(small_talk)]
    rng.shuffle(turns)
    return [{"content": text, "role": who, "session_id": f"s{k // 25}", "seq": k % 25, "namespace": "c"}
            for k, (text, who) in enumerate(turns)]


def store(records: list[dict[str, Any]]) -> tuple[engramdb.Store, dict[str, str]]:
    db = engramdb.open(None)
    ids = db.add_many(records)
    return db, {i: r["content"] for i, r in zip(ids, records)}


def test_small_talk_neither_forms_nor_joins_a_topic() -> None:
    records = chat()
    db, text = store(records)
    rule = SmallTalk(SPEAKERS)
    small = {i for i, t in text.items() if rule.is_small_talk(t)}
    assert len(small) == 40  # the rule finds exactly the small-talk turns
    topics = db.topics("c", refresh=True)
    assert topics
    assert not [(t.label, i) for t in topics for i in t.members if i in small]


def test_labels_show_neither_a_speakers_name_nor_filler_and_say_what_members_share() -> None:
    db, _ = store(chat(seed=1))
    rule = SmallTalk(SPEAKERS)
    topics = db.topics("c", refresh=True)
    assert topics
    for t in topics:
        words = [w.strip() for w in t.label.split("/")]
        assert not [w for w in words if rule.is_filler(w) or w.lower() in {"caroline", "melanie", "wow"}], t.label
        # the label names the topic's subject: every label word is one of a single subject's words
        assert any(all(w in vocab for w in words) for vocab in SUBJECTS.values()), t.label


def test_a_name_the_speakers_shorten_is_not_a_label_either() -> None:
    rule = SmallTalk(["Melanie", "Caroline"])
    assert rule.is_name("Mel") and rule.is_name("caroline") and not rule.is_name("melody")
    assert rule.is_filler("awesome") and rule.is_filler("really") and not rule.is_filler("sourdough")
    # modal and discourse words that LoCoMo's topics were labelled with ("can / difference / help",
    # "wait / show / back", "long / since / last")
    assert all(rule.is_filler(w) for w in ("can", "must", "wait", "since", "last", "long", "back", "will", "how've"))
    assert not rule.is_filler("children's")


@pytest.mark.parametrize(("text", "small"), [
    ("Wow, that's awesome!", True), ("Thanks Mel, you too!", True), ("How about you?", True),
    ("Hey Ev! Long time no chat. How's it going? Hope all is well.", True),
    ("Sorry to hear that. Is there anything I can do to help?", True),
    ("I adopted a puppy last week!", False), ("I went to a LGBTQ support group yesterday and it was so powerful.", False),
    ("Wow, that's awesome! I finally finished the sourdough course and baked three loaves for the market.", False),
])
def test_the_small_talk_rule(text: str, small: bool) -> None:
    assert SmallTalk(["Evan", "Melanie"]).is_small_talk(text) is small


def nested(seed: int = 0) -> tuple[np.ndarray, list[set[int]]]:
    """Eight tight groups of 15 close together (a chat's threads about one family, one job) and
    one group of 30 far away: HDBSCAN's excess-of-mass choice keeps the eight as one cluster of
    120. Returns the vectors and the nine planted groups."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=32)
    rows, groups = [], []
    for _ in range(8):
        centre = base + 0.08 * rng.normal(size=32)
        groups.append(set(range(len(rows), len(rows) + 15)))
        rows += [centre + 0.06 * rng.normal(size=32) for _ in range(15)]
    groups.append(set(range(len(rows), len(rows) + 30)))
    rows += [-base + 0.06 * rng.normal(size=32) for _ in range(30)]
    return np.asarray(rows, np.float32), groups


def test_a_topic_over_the_cap_is_split_into_the_groups_inside_it() -> None:
    x, planted = nested()
    rng = np.random.default_rng(1)
    spaces = [(Space("a", "dense", 32, "cosine"), x),
              (Space("b", "dense", 32, "cosine"), x + np.float32(0.01) * rng.normal(size=x.shape).astype(np.float32))]
    whole = clustering.topics_of(clustering.cluster_spaces(spaces), len(x))
    assert sorted(len(m) for m, _ in whole) == [30, 120]  # what the topics were: one of 120
    found = clustering.topics_capped(spaces)
    topics = [set(m) for m, _ in found]
    assert topics[0] == planted[-1]  # the far group (a fifth of them) holds no two groups: it stays whole
    assert all(len(t) <= 0.15 * len(x) for t in topics[1:])
    for group in planted[:-1]:  # each thread is a topic of its own, give or take a member
        assert any(len(t & group) >= 13 and len(t - group) <= 2 for t in topics), sorted(group)
    assert all(0 < c <= 1 for _, c in found)


def test_a_namespace_over_the_sample_whose_small_talk_leaves_fewer_is_clustered_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.store import topic_verbs

    monkeypatch.setattr(topic_verbs, "SAMPLE", 45)
    db, _ = store(chat(per_subject=9))  # 45 content turns, 40 small talk: over the sample, the content not
    topics = db.topics("c", refresh=True)
    assert topics and topics.sampled is None


def test_an_archived_memory_whose_text_is_gone_is_not_taken_for_small_talk(tmp_path: Path) -> None:
    records = chat(seed=2)
    db = engramdb.open(tmp_path / "s")
    text = dict(zip(db.add_many(records), (r["content"] for r in records)))
    before = db.topics("c", refresh=True)
    member = before[0].members[0]
    db.lifecycle.archive(ids=[member])  # its text leaves the row; its vectors stay
    after = db.topics("c", refresh=True)
    assert any(member in t.members for t in after), text[member]


def test_small_talk_is_in_no_theme_and_content_themes_remain() -> None:
    """Themes (H8) set small talk aside as topics do: LoCoMo's "Thanks!" and "Wow, that's
    awesome!" turns, near duplicates of each other, made one theme of 65-158 turns."""
    records = chat(seed=3)
    records += [{"content": "The violin recital is in June at the old town hall.", "role": SPEAKERS[i % 2],
                 "session_id": "s9", "seq": i, "namespace": "c"} for i in range(3)]
    db, text = store(records)
    rule = SmallTalk(SPEAKERS)
    themes = db.topics.themes("c", refresh=True)
    assert not [(t.label, text[i]) for t in themes for i in t.members if rule.is_small_talk(text[i])]
    assert any(all("recital" in text[i] for i in t.members) for t in themes), [t.label for t in themes]
    assert all("caroline" not in t.label and "melanie" not in t.label for t in themes)


def test_a_memory_holding_a_topics_words_joins_it_however_far_its_vectors() -> None:
    """The join (issue 29): a memory in no topic that holds the words a topic's label shows joins
    that topic, though its vectors are no nearer to it than to the rest (the nearness rule alone
    left it out, and the members that joined by nearness rarely held the label's words)."""
    from engramdb.topics.labels import DistinctiveTerms

    rng = np.random.default_rng(4)
    dim = 32
    centres = [rng.normal(size=dim) for _ in range(3)]
    # the strays are orthogonal to every group and to each other: as far from each group as from the rest
    strays = np.linalg.qr(np.vstack([*centres, rng.normal(size=(6, dim))]).T)[0].T[3:]
    x = np.asarray([c + 0.05 * rng.normal(size=dim) for c in centres for _ in range(12)] + list(strays),
                   np.float32)  # 36 in three groups, 6 strays
    words = [["sourdough", "starter"], ["violin", "rosin"], ["trail", "summit"]]
    texts = [f"notes on {words[g][0]} and {words[g][1]} number {i}" for g in range(3) for i in range(12)]
    texts += [f"a stray about {w} today" for w in ("rosin", "summit", "tax", "paint", "moon", "rosin")]
    spaces = [(Space("a", "dense", dim, "cosine"), x),
              (Space("b", "dense", dim, "cosine"), x + np.float32(0.01) * rng.normal(size=x.shape).astype(np.float32))]
    plain = clustering.topics_capped(spaces)
    assert sorted(len(m) for m, _ in plain) == [12, 12, 12]  # the strays join by nearness nowhere
    worded = {frozenset(m) for m, _ in clustering.topics_capped(spaces, terms=DistinctiveTerms(texts).rows(range(42)))}
    assert frozenset([*range(12, 24), 36, 41]) in worded  # the violin topic takes both strays holding "rosin"
    assert frozenset([*range(24, 36), 37]) in worded  # the hiking one the stray holding "summit"
    assert frozenset(range(12)) in worded  # the strays holding no topic's word stay out


def test_small_talk_verdicts_follow_the_speakers_between_runs() -> None:
    """The verdicts are kept between runs (out of a refresh's cost) for the same speakers only:
    "Wow Zed, the quilt!" holds two content words until Zed speaks, then one (small talk)."""
    records = chat(seed=5)
    records += [{"content": "Wow Zed, the quilt!", "role": SPEAKERS[i % 2], "namespace": "c"} for i in range(4)]
    db, text = store(records)
    before = db.topics("c", refresh=True)
    assert any("quilt" in text[i] for t in before for i in t.members)  # content for these speakers
    zed = db.add("I sewed a new quilt for the fair.", role="Zed", namespace="c")
    text[zed.id] = zed.content
    after = db.topics("c", refresh=True)
    assert not [text[i] for t in after for i in t.members if text[i] == "Wow Zed, the quilt!"]


def test_labels_follow_the_speakers_between_runs() -> None:
    """The terms that may label a memory are kept between runs (out of a refresh's cost) for the
    same speakers only: a word a label showed is no label once a speaker goes by that name."""
    db, _ = store(chat(seed=6))
    before = db.topics("c", refresh=True)
    word = before[0].label.split(" / ")[0]
    assert word in {w for words in SUBJECTS.values() for w in words}, before[0].label
    db.add("I sewed a new quilt for the fair.", role=word.capitalize(), namespace="c")
    after = db.topics("c", refresh=True)
    assert after and all(word not in t.label.split(" / ") for t in after), [t.label for t in after]


def threads_and_loose_talk(seed: int = 2) -> tuple[list[tuple[Space, np.ndarray]], list[set[int]]]:
    """Two tight threads of 12 and two looser ones of 20 about the same part of a chat (one cluster
    of 64 in every space, over the cap: split, the loose threads left as noise inside it), and
    four far threads of 15. Returns two spaces of these vectors and the eight planted threads."""
    rng = np.random.default_rng(seed)
    dim = 32
    base = rng.normal(size=dim)
    rows: list[np.ndarray] = []
    groups: list[set[int]] = []
    for size, off, spread in [(12, 0.1, 0.05)] * 2 + [(20, 0.2, 0.3)] * 2 + [(15, None, 0.05)] * 4:
        centre = base + off * rng.normal(size=dim) if off is not None else 3.0 * rng.normal(size=dim)
        groups.append(set(range(len(rows), len(rows) + size)))
        rows += [centre + spread * rng.normal(size=dim) for _ in range(size)]
    x = np.asarray(rows, np.float32)
    return [(Space("a", "dense", dim, "cosine"), x),
            (Space("b", "dense", dim, "cosine"), x + np.float32(0.01) * rng.normal(size=x.shape).astype(np.float32))], groups


def test_what_a_join_leaves_in_no_topic_is_clustered_again_on_its_own() -> None:
    """Issue 29: on LoCoMo the topics as clustered held 7-22% of the turns that are not small talk
    and the join filled them to the cap, leaving half a conversation in no topic (43-48% in a
    topic in four of twenty runs) though the rest held threads of its own. Here the loose threads
    are noise inside the split cluster; the tight threads take as many of them as the cap lets
    (a topic holds 20 at most: 16 of the 40 loose turns), and the other 24 were in no topic:
    clustered again on their own, each loose thread is a topic of its own."""
    spaces, planted = threads_and_loose_talk()
    topics = [set(m) for m, _ in clustering.topics_capped(spaces)]
    assert all(len(t) <= max(0.15 * 128, clustering.MIN_SPLIT) for t in topics)
    for far in planted[4:]:  # the far threads as they were
        assert far in topics
    for loose in planted[2:4]:  # a topic of the loose thread's own members only
        assert any(t <= loose and len(t) >= 8 for t in topics), [sorted(t) for t in topics]
    loose_in_a_topic = set().union(*topics) & (planted[2] | planted[3])
    assert len(loose_in_a_topic) >= 30  # of 40 (16 before: the cap's room alone)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(list("ab éİß'-ǅ\u0301ﬁ2 ") + [
    "thanks ", "take care ", "Running ", "the ", "Caroline ", "how are you ", "I'm ", "café ", "ＡＢ "]),
    max_size=30).map("".join), max_size=12))
def test_labels_analyse_a_batch_as_text_by_text(texts: list[str]) -> None:
    """`DistinctiveTerms` analyses its texts a chunk at a time (each distinct word once): each
    text's (stem, word) pairs are those of its words one by one, `tokenize(normalize(text))` each
    with its first analysed term, repeats, texts past a chunk and an earlier run's cache included."""
    from engramdb.spaces.analyzer import Analyzer, normalize, tokenize
    from engramdb.topics.labels import CHUNK, DistinctiveTerms

    an = Analyzer()

    def one_by_one(ts: list[str]) -> list[tuple[tuple[str, str], ...]]:
        return [tuple((stem[0], w) for w in tokenize(normalize(t)) if (stem := an.terms(w))) for t in ts]

    want = one_by_one(texts)
    cache: dict[str, tuple[tuple[str, str], ...]] = {}
    assert DistinctiveTerms(texts, cache).words == want
    many = [f"{t} {i}" for i, t in enumerate(texts * (2 * CHUNK // max(1, len(texts)) + 1))]
    assert DistinctiveTerms(many).words == one_by_one(many)
    assert DistinctiveTerms([*texts, "a new one"], cache).words[:len(texts)] == want


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from(sorted({w for p in PHRASES for w in p} | {"caroline", "move", "garden", "the"})),
                      max_size=20))
def test_the_small_talk_verdict_is_the_rule_written_out(words: list[str]) -> None:
    """`is_small_talk` against the module docstring's rule written out plainly (phrases taken out
    left to right, the longest first), over turns made of the phrases' own words."""
    from engramdb.spaces.analyzer import SNOWBALL_STOPWORDS, normalize, tokenize

    rule = SmallTalk({"Caroline"})
    tokens, chat, i = tokenize(normalize(" ".join(words))), 0, 0
    n = len(tokens)
    kept: list[str] = []
    by_length = sorted(PHRASES, key=len, reverse=True)
    while i < len(tokens):
        hit = next((p for p in by_length if tuple(tokens[i:i + len(p)]) == p), None)
        if hit is None:
            kept.append(tokens[i])
            i += 1
        else:
            chat += 1
            i += len(hit)
    chat += sum(t in SMALL_TALK_WORDS for t in kept)
    left = [t for t in kept if t not in SNOWBALL_STOPWORDS and t not in SMALL_TALK_WORDS and t not in FILLER
            and not rule.is_name(t)]
    want = 0 < n <= SHORT and len(left) <= (LEFT_WITH_CHAT if chat >= 2 else LEFT)
    assert rule.is_small_talk(" ".join(words)) == want


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(list("ab éİß'-ǅ\u0301ﬁ2 ") + [
    "thanks ", "take care ", "Running ", "the ", "Caroline ", "how are you ", "I'm ", "café ", "ＡＢ ", "garden "]),
    max_size=24).map("".join), max_size=150))
def test_small_talk_verdicts_of_a_batch_are_those_of_each_text(texts: list[str]) -> None:
    """`set_aside` tokenises its texts a chunk at a time (past a chunk, with repeats and an earlier
    run's verdicts): each verdict is `is_small_talk` of that text alone."""
    rule = SmallTalk({"Caroline"})
    want = [rule.is_small_talk(t) for t in texts]
    seen: dict[str, bool] = {}
    assert SmallTalk({"Caroline"}).set_aside(texts, seen).tolist() == want
    assert SmallTalk({"Caroline"}).set_aside([*texts, "hi there"], seen).tolist() == [*want, True]


def test_small_talk_verdicts_of_a_batch_normalise_as_each_text_does() -> None:
    """`normalize` is not idempotent for a capital before a combining mark whose lower case has a
    precomposed form ("T\u0308" -> "t\u0308" -> "ẗ"): the batch normalises twice, as
    `tokenize(normalize(text))` does (found by an adversary: "T\u0308hanks" was small talk alone and
    not in a batch)."""
    texts = ["T\u0308hanks", "J\u030cohn thanks", "hi T\u0308hanks", "W\u030aow, great!", "Y\u030a\u0301 hello"]
    rule = SmallTalk({"John"})
    assert rule.set_aside(texts).tolist() == [rule.is_small_talk(t) for t in texts]
    assert rule.is_small_talk("T\u0308hanks")


def test_a_large_namespaces_labels_read_a_sample_that_stays_while_it_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """`label_sample`: every text up to LABEL_SAMPLE; past it about that many, chosen by the
    memory's id (a memory sampled in a larger namespace was sampled in the smaller one it grew
    from, so an increment's analysis cache holds it), and every clustered one."""
    from engramdb.topics import labels

    ids = [f"{random.Random(i).getrandbits(128):032x}" for i in range(4_000)]
    assert labels.label_sample(ids) is None
    monkeypatch.setattr(labels, "LABEL_SAMPLE", 400)
    small, large = labels.label_sample(ids[:2_000], keep=[7, 1_999]), labels.label_sample(ids)
    assert small is not None and large is not None and small == sorted(set(small))
    assert 300 <= len(large) <= 500 and 300 <= len(small) <= 500
    assert {7, 1_999} <= set(small)
    assert {i for i in large if i < 2_000} <= set(small)
    assert labels.label_sample(ids) == large  # the same every run


def test_labels_read_from_a_sample_name_every_topic_by_its_own_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every text sampled the labels are those of the whole namespace; a topic none of whose
    members is sampled is still named by its own words (LABEL_READS of them read for it), whose
    terms the sample never saw."""
    from engramdb.topics import labels

    texts = [f"the garden needs {w} and water" for w in ("tomatoes", "roses", "weeding", "compost")] * 5 + \
        [f"my cello bow needs {w}" for w in ("rosin", "rehair", "cleaning")] * 4 + ["zeppelin airship hangar"] * 3
    groups = [list(range(20)), list(range(20, 32)), [32, 33, 34]]
    whole = labels.DistinctiveTerms(texts).labels(groups)
    assert labels.DistinctiveTerms(texts, among=range(len(texts))).labels(groups) == whole
    monkeypatch.setattr(labels, "LABEL_READS", 2)
    sampled = labels.DistinctiveTerms(texts, among=list(range(0, 20, 3)) + [20, 21]).labels(groups)
    assert "zeppelin" in sampled[2] and "airship" in sampled[2]
    for label, group in zip(sampled, groups):  # each named by words its members hold
        assert set(label.split(" / ")) <= {w for i in group for w in texts[i].split()}, (label, sampled)
