"""Built-in embedders (S5) on 5,000 conversation turns: turns per second, one core.

Group embedders (report only; target: the whole default profile >= 5,000 turns/s):
  * each of the four default embedders alone (dense hashing 384, lexical, HDC 1024 over the dense
    space, tokens 128), and the whole profile (all four, in order, as a store's add_many calls
    them); HDC alone includes its base dense embedding (it calls base.embed);
  * warm: the embedders' per-word caches hold the corpus' vocabulary (steady state of a long-running
    store); the cold profile bench builds fresh embedders (and clears the analyzer caches) every
    round, so every word is hashed and stemmed again: the cost of a first bulk import.

The turns: 80 % from a small template set of chat turns (user and assistant, slot-filled from word
lists: names, places, foods, times, tasks), 20 % sentences from Python stdlib module docstrings
(a long tail of rarer words). Seeded: every run embeds the same 5,000 turns (mean ~13 words).
extra_info["turns_per_s"] is 5,000 / the mean time.
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _data import run, tag
from engramdb.spaces import analyzer
from engramdb.spaces.builtin import default_embedders

GROUP = "embedders"
N_TURNS = 5_000

_TEMPLATES = (
    "Can you remind me to {task} {when}?",
    "I just got back from {place}, the {food} there was amazing.",
    "My sister {name} is visiting us {when}, she wants to try {food}.",
    "Sure! I've added a reminder to {task} {when}.",
    "What was the name of the restaurant in {place} where we had {food}?",
    "I'm feeling a bit stressed about the {thing} deadline {when}.",
    "{name} said the {thing} meeting moved to {when}.",
    "Do you remember what {name} recommended for my trip to {place}?",
    "I've been learning to {hobby} for three months now and I love it.",
    "Please don't schedule anything {when}, I'm taking the kids to {place}.",
    "That sounds great. Would you like me to find {food} places near {place}?",
    "I think I left my {object} at {name}'s house yesterday.",
    "Our anniversary is {when}; {name} loves {food} so maybe a dinner at {place}.",
    "Here is a summary: you need to {task}, call {name}, and book tickets to {place}.",
    "I started running again, 5 km every morning before work.",
    "Could you help me draft an email to {name} about the {thing} budget?",
    "The {object} I ordered arrived broken, I need to return it {when}.",
    "I prefer {food} over {food2}, honestly, and I'm allergic to peanuts.",
    "Let's plan a weekend in {place} with {name} and {name2}.",
    "Thanks, that's really helpful! I'll {task} {when}.",
)
_SLOTS = {
    "task": (
        "call the dentist",
        "pay the electricity bill",
        "water the plants",
        "renew my passport",
        "pick up the dry cleaning",
        "send the quarterly report",
        "book a haircut",
        "feed the cat",
        "submit the tax forms",
        "buy a birthday present",
        "back up my laptop",
        "cancel the gym membership",
    ),
    "when": (
        "tomorrow morning",
        "on Friday",
        "next week",
        "tonight",
        "at 3pm",
        "this weekend",
        "on the 14th",
        "after lunch",
        "in two days",
        "before the holidays",
        "on Monday at 9",
    ),
    "place": (
        "Lisbon",
        "Kyoto",
        "the farmers market",
        "Berlin",
        "Grandma's place",
        "the lake house",
        "Barcelona",
        "the office",
        "Montreal",
        "the new mall downtown",
        "Cape Town",
        "Oaxaca",
    ),
    "food": (
        "ramen",
        "grilled octopus",
        "pastel de nata",
        "sushi",
        "tacos al pastor",
        "vegan curry",
        "sourdough pizza",
        "dim sum",
        "falafel",
        "pho",
        "cheesecake",
        "paella",
    ),
    "name": ("Maria", "Tom", "Aisha", "Kenji", "Lucas", "Priya", "Olga", "Sam", "Fatima", "Diego"),
    "thing": ("marketing", "product launch", "hiring", "infrastructure", "design review", "research"),
    "hobby": ("play the guitar", "paint with watercolours", "bake bread", "speak Japanese", "climb"),
    "object": ("umbrella", "charger", "blue jacket", "headphones", "car keys", "notebook"),
}
_SLOTS["food2"] = _SLOTS["food"]
_SLOTS["name2"] = _SLOTS["name"]
_DOC_MODULES = (
    "argparse",
    "asyncio",
    "collections",
    "csv",
    "datetime",
    "decimal",
    "email",
    "fractions",
    "functools",
    "heapq",
    "http",
    "itertools",
    "json",
    "logging",
    "pathlib",
    "random",
    "re",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "subprocess",
    "textwrap",
    "threading",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "zipfile",
)


@functools.cache
def _doc_sentences() -> tuple[str, ...]:
    """Sentences of 5..40 words from stdlib docstrings (modules and their public members)."""
    out: list[str] = []
    for name in _DOC_MODULES:
        mod = importlib.import_module(name)
        docs = [mod.__doc__ or ""]
        for attr in sorted(dir(mod)):
            if not attr.startswith("_"):
                with warnings.catch_warnings():  # deprecated aliases (typing.io) warn on access
                    warnings.simplefilter("ignore", DeprecationWarning)
                    doc = getattr(getattr(mod, attr, None), "__doc__", None)
                docs.append(doc if isinstance(doc, str) else "")
        for doc in docs:
            for s in re.split(r"(?<=[.!?])\s+", " ".join(doc.split())):
                if 5 <= len(s.split()) <= 40:
                    out.append(s)
    return tuple(dict.fromkeys(out))


@functools.cache
def chat_turns(n: int = N_TURNS, seed: int = 7) -> tuple[str, ...]:
    """n seeded turns: 80 % slot-filled chat templates, 20 % stdlib docstring sentences."""
    rng = np.random.default_rng(seed)
    docs = _doc_sentences()
    out = []
    for _ in range(n):
        if rng.random() < 0.2:
            out.append(docs[int(rng.integers(len(docs)))])
            continue
        tpl = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))]
        fill = {k: v[int(rng.integers(len(v)))] for k, v in _SLOTS.items()}
        out.append(tpl.format(**fill))
    return tuple(out)


def _clear_analyzer_caches() -> None:
    analyzer.stem.cache_clear()
    analyzer.term_id.cache_clear()


def _report(benchmark: Any, fn: Callable[[], Any], impl: str, **extra: Any) -> None:
    turns = list(chat_turns())
    fn()  # warm-up: caches filled, numpy/BLAS paths touched
    benchmark.group = GROUP
    tag(benchmark, impl, role="engramdb", turns=len(turns), **extra)
    run(benchmark, fn, rounds=5)
    benchmark.extra_info["turns_per_s"] = round(len(turns) / benchmark.stats.stats.mean)
    benchmark.extra_info["mean_words"] = round(sum(len(t.split()) for t in turns) / len(turns), 1)


@pytest.mark.parametrize("space", ["dense", "lexical", "hdc", "tokens"])
def test_embedder(benchmark: Any, space: str) -> None:
    emb = default_embedders()[space]
    turns = list(chat_turns())
    _report(benchmark, lambda: emb.embed(turns), f"{space}: {emb.name}", reference=space == "dense")


def test_profile_warm(benchmark: Any) -> None:
    embs = default_embedders()
    turns = list(chat_turns())
    _report(
        benchmark, lambda: {k: e.embed(turns) for k, e in embs.items()}, "default profile (4 spaces), warm"
    )


def test_profile_cold(benchmark: Any) -> None:
    turns = list(chat_turns())

    def cold() -> dict[str, Any]:
        _clear_analyzer_caches()
        return {k: e.embed(turns) for k, e in default_embedders().items()}

    _report(benchmark, cold, "default profile (4 spaces), cold caches")


def test_analyzer_term_ids(benchmark: Any) -> None:
    """The lexical analyzer alone (tokenize, stop words, stem, term ids), one text per call as a
    store's query path calls it: 10,000 chat turns. Was a 1.0 s bound in tests/test_embedders.py
    (a wall-clock assert on a shared machine); measured here instead."""
    a = analyzer.Analyzer()
    turns = [f"Hey, could you remind me to call {n} about the meeting on Thursday at {n % 12}pm?"
             for n in range(10_000)]

    def each() -> None:
        for t in turns:
            a.term_ids(t)

    each()  # warm: the per-token caches hold the vocabulary, as in a running store
    benchmark.group = GROUP
    tag(benchmark, "analyzer term_ids, one text a call", role="engramdb", turns=len(turns))
    run(benchmark, each, rounds=5)
    benchmark.extra_info["turns_per_s"] = round(len(turns) / benchmark.stats.stats.mean)
