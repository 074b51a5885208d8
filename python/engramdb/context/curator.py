"""The curator (K2): the most useful candidates that fit a token budget, chosen listwise.

Greedy: at each step take the candidate with the highest value = its score - 0.3 x its redundancy
with what is already chosen - its token cost, among those that still fit; stop when none fits.
- Redundancy: its largest main-space similarity to a chosen one, counted from the space's
  paraphrase threshold (`floor`, the space's `high`) up, 0 below it and 1 at an exact repeat.
  Counted from 0 instead, it cost 2.6 points of evidence on LoCoMo at 1,000 tokens: in a
  model-free space, turns of one conversation share their date and speakers, so the penalty
  pushed evidence below turns that were not repeats (bench/RESULTS.md).
- Token cost: 0.05 per 100 tokens (between two equally good memories the shorter wins).
- Cost: a candidate's tokens as it would be rendered. Lines of one group (a session's turns, a
  day's facts, in one section) sit under one line: the first pays that line too, each later one
  only its own (context/sections.py renders them so).
- A candidate the redundancy counts as a full repeat of one chosen (its similarity 1: the same
  vector) is never taken: the block would say the same thing twice.
- Sections: a candidate may belong to a section with its own room (`rooms`, e.g. the topic
  matches' share) as well as the whole budget: the sections are filled together, in value order,
  so a topic match never displaces a better related memory.
The value orders the picks; it does not leave budget unused (a weak match that fits is still worth
more than nothing: stopping at value <= 0 held 1.7 points less evidence on LoCoMo at 1,000
tokens). Candidates that match nothing (score 0) are never taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

REDUNDANCY = 0.3
TOKEN_COST = 0.05  # per 100 tokens
FULL = 1.0 - 1e-6  # a redundancy this high is a repeat


@dataclass(frozen=True)
class Candidate:
    """What the curator weighs: an id, its score, its tokens as the first line of its group (the
    group's line included), its unit main-space vector; its group ("" for none) and its tokens once
    its group has a line in its section; its section."""

    id: str
    score: float
    tokens: int
    vector: np.ndarray
    group: str = ""
    bare_tokens: int | None = None
    section: str = ""


@dataclass(frozen=True)
class Pick:
    """A chosen candidate, with the value it was chosen at, the redundancy it paid and the tokens it
    cost (`grouped`: it joined a group already in its section, under the group's line)."""

    id: str
    score: float
    tokens: int
    value: float
    redundancy: float
    grouped: bool = False


def curate(cands: list[Candidate], budget: int, *, rooms: Mapping[str, int] | None = None,
           floor: float = 0.0) -> list[Pick]:
    """The chosen candidates in the order chosen (see the module docstring). `rooms`: section ->
    tokens its candidates may take at most; `floor`: the similarity redundancy counts from."""
    left = budget
    room = dict(rooms or {})
    pool = [c for c in cands if c.score > 0]
    chosen: list[Pick] = []
    if not pool:
        return chosen
    score = np.array([c.score for c in pool])
    inline = np.array([c.tokens for c in pool])
    bare = np.array([c.bare_tokens if c.group and c.bare_tokens is not None else c.tokens for c in pool])
    # each candidate's group in its section as a number (-1: none), so a pick opens its group in one comparison
    codes: dict[tuple[str, str], int] = {}
    group = np.array([codes.setdefault((c.section, c.group), len(codes)) if c.group else -1 for c in pool])
    vecs = np.stack([c.vector for c in pool])
    sim = np.full(len(pool), -np.inf)  # each candidate's largest similarity to a chosen one
    opened = np.zeros(len(pool), bool)  # its group already has a line in its section
    free = np.ones(len(pool), bool)
    sections = np.array([c.section for c in pool])
    in_room = {s: sections == s for s in room}  # the candidates each room bounds
    # a candidate's tokens (and their cost) change only when a pick opens its group, its redundancy
    # only when a pick is made: each is made again then, not at every step
    n = inline
    cost = TOKEN_COST * n / 100
    red = _redundancy(sim, floor)
    while True:
        ok = free & (n <= left) & (red < FULL)
        for s, r in room.items():
            ok &= ~(in_room[s] & (n > r))
        if not ok.any():
            break
        value = score - REDUNDANCY * red - cost
        i = int(np.argmax(np.where(ok, value, -np.inf)))
        c = pool[i]
        chosen.append(Pick(c.id, c.score, int(n[i]), round(float(value[i]), 4), round(float(red[i]), 4),
                           bool(opened[i])))
        free[i] = False
        left -= int(n[i])
        if c.section in room:
            room[c.section] -= int(n[i])
        sim = np.maximum(sim, vecs @ c.vector)
        red = _redundancy(sim, floor)
        if group[i] >= 0:
            mine = group == group[i]
            if not opened[mine].all():
                opened |= mine
                n = np.where(opened, bare, inline)
                cost = TOKEN_COST * n / 100
    return chosen


def _redundancy(sim: np.ndarray, floor: float) -> np.ndarray:
    """Each candidate's redundancy, from its largest similarity to a chosen one (the module docstring)."""
    red: np.ndarray = np.clip((sim - floor) / (1.0 - floor), 0.0, None) if floor < 1.0 else (sim >= 1.0).astype(float)
    return red


__all__ = ["Candidate", "Pick", "curate"]
