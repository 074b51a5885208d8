"""The context block (C6, K1-K3, K6): from a search's hits and a snapshot, the lines a person would
paste before a prompt, under a token budget.

`assemble` is a function of what the verb read (store/context_verbs.py): the snapshot (`View`), its
indexes, the embedders and schema, the ratings, the hits of the default search, the topics last
computed (never computed here), the session's divergence and latest turns, and the budgets' duals.
Its stages, in order:
1. divergence: with a session, a note when the query is far from the session's recent work;
2. candidates: the hits, one per line: a hit whose line (role and text, context/lines.py) repeats
   a better one's is left out, and so is a version whose successor is among them, and a hit with
   no text to paste (archived, J7). A hit's score is
   its own evidence; the search's order is kept by giving each hit the best score at or below its
   rank (a turn the search placed for its neighbour's sake keeps its place). Each line's value
   adds what its speaker says to the query (context/readers.py: a question naming Caroline matches
   what Caroline said);
3. the navigator (K1, context/navigator.py): from the hits that match on their own, a walk along
   typed edges and neighbouring turns within the edge and step budgets; its hops join as
   candidates;
4. topic matches and related memories, curated together (context/curator.py) in what the sections
   after them leave: the topic heading only when the query is near its nearest topic (the
   centroid's similarity at or above the main space's `low`, what unrelated text reaches), else
   every line is a related memory;
5. recent context: the session's latest turns not already in, unless the query is far from them
   (the divergence note: a topic change, where the old small talk is no context for the new);
6. the time note: what time the facts hold at, only when an `as_of` was asked or a fact shown no
   longer holds.
Each stage's time and spend against its budget is in `stats["stages"]`; the dual variables that
price the budgets move after each call (context/handoff.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..importance.elo import tier
from ..importance.ratings import Ratings
from ..index.registry import Indexes
from ..model.hit import Hit
from ..model.memory import Memory, utc_now
from ..spaces.protocol import Embedder
from ..spaces.schema import Schema
from ..storage.view import View
from . import lines as ln
from . import navigator as nav
from . import sections as sec
from .curator import Candidate, curate
from .handoff import EDGE_BUDGET, LATENCY_MS, STEP_BUDGET, Duals, Spend, shrunk, token_bar, utility
from .readers import QueryMatch, importance_reader, links_reader, mass_reader, unit_vectors, visibility
from .result import Context, ContextItem
from .tokens import Counter

CANDIDATES = 50  # hits the curator chooses from (and the navigator walks from), at least
LINE_TOKENS = 20  # a short line's tokens: the search is asked for more such lines than the budget holds
NEAR_SHARE = 0.3  # of the best own score within NEAR_TURNS turns of a line that its value adds
NEAR_TURNS = 2
RECENT_TURNS = 20
TOPIC_SHARE = 0.5  # of the best hit's score a hit needs to be shown as a topic match


def candidates(max_tokens: int) -> int:
    """How many hits a context of `max_tokens` chooses from: more than the budget can hold."""
    return max(CANDIDATES, max_tokens // LINE_TOKENS)


@dataclass(frozen=True)
class Request:
    """What the caller asked: the query and its namespace, the budget and its tokenizer, the time,
    and the walk's budgets."""

    query: str
    namespace: str
    max_tokens: int
    count: Counter
    tokenizer: str
    session_id: str | None = None
    as_of: datetime | None = None
    navigate: bool = True
    edge_budget: int = EDGE_BUDGET
    step_budget: int = STEP_BUDGET
    latency_ms: float = LATENCY_MS


@dataclass(frozen=True)
class Snapshot:
    """What the assembly reads: one snapshot, its indexes, the embedders and schema, the ratings."""

    view: View
    indexes: Indexes
    embedders: Mapping[str, Embedder]
    schema: Schema
    ratings: Ratings


@dataclass(frozen=True)
class TopicMap:
    """The topics last computed for the namespace: labels, unit main-space centroids (one row a
    topic) and each topic's member ids. Empty when none were computed."""

    labels: Sequence[str] = ()
    centroids: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))
    members: Sequence[Sequence[str]] = ()
    # the member sets asked for, made on first use: a context asks about one topic (the query's
    # nearest), and a map of every member (100,000 ids) cost a new process's first context 20 ms
    _sets: dict[int, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    def holds(self, topic: int, memory_id: str) -> bool:
        """Is the memory a member of topic number `topic`?"""
        got = self._sets.get(topic)
        if got is None:
            got = self._sets[topic] = frozenset(self.members[topic]) if 0 <= topic < len(self.members) else frozenset()
        return memory_id in got


@dataclass(frozen=True)
class Divergence:
    """The session's divergence (C6's first priority): whether the query is far from its recent
    work, and the similarity of its nearest recent memory."""

    divergent: bool
    similarity: float | None


@dataclass(frozen=True)
class Assembled:
    """The context, the navigator's hops (for the curiosity queue) and the memories injected."""

    context: Context
    hops: list[nav.Hop]
    injected: list[str]


class _Laps:
    def __init__(self) -> None:
        self.began = self.t0 = time.perf_counter()
        self.ms: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self.t0) * 1e3, 3)
        self.t0 = now

    def total(self) -> float:
        return round((time.perf_counter() - self.began) * 1e3, 3)


@dataclass
class _Line:
    """A candidate line: its memory, its text (the whole or the passage that matched), score, why,
    ELO (a hit's, else read when placed)."""

    memory: Memory
    text: str
    score: float
    why: str
    elo: float | None = None
    own: float = 0.0  # its own match to the query (a hit's score, a hop's relevance)


def assemble(req: Request, snap: Snapshot, hits: Sequence[Hit], *, topics: TopicMap, duals: Duals,
             divergence: Divergence | None = None, recent: Sequence[Memory] = (),
             laps: dict[str, float] | None = None) -> Assembled:
    """The context for `req` (see the module docstring). `hits`: the default search's, best first;
    `recent`: the session's newest turns, newest first; `laps`: times already spent (the search's),
    put first in `stats["ms"]`."""
    count = _memo(req.count)
    lap = _Laps()
    lap.ms.update(laps or {})
    prices = duals.prices()
    budget = sec.budgets(req.max_tokens)
    usable = req.max_tokens - math.ceil(req.max_tokens * sec.MARGIN)
    now = utc_now()
    view = snap.view
    placed: list[sec.Placed] = []

    def head(section: str, label: str = "") -> int:  # a section's heading line
        return count(sec.HEADINGS[section].format(label=label)) + 1

    # 1. divergence
    if divergence is not None and divergence.divergent:
        sim = f" (similarity {divergence.similarity:.2f} to the closest)" if divergence.similarity is not None else ""
        note = f"- This question is far from what this session has been about{sim}."
        placed.append(sec.Placed(ContextItem(None, "divergence", note, 1.0, count(note) + 1, "divergence alert (C6)")))
    spent = sum(p.item.tokens for p in placed) + (head("divergence") if placed else 0)
    lap("divergence")
    # 2. the candidates: one line each
    match = QueryMatch(view, snap.indexes, snap.embedders, snap.schema, req.namespace, req.query)
    lines = _hit_lines(hits, match)
    lap("candidates")
    # 3. the subgraph and the navigator (K1, K6)
    walk = nav.Walk([], 0, 0, "off", 0)
    stages: dict[str, dict[str, Any]] = {}
    spends: dict[str, Spend] = {}
    seeds = {h.id: h.score for h in hits if h.score > 0}  # a hit that matches nothing on its own leads nowhere
    # one reader for the walk and the lines: it sums a memory's idf once (the two ask about the same turns)
    mass = mass_reader(view, snap.indexes, snap.embedders, snap.schema, req.namespace, match.term_row)
    if req.navigate and seeds and req.edge_budget > 0 and req.step_budget > 0 and lines:
        # a hop must also be worth the tokens a line takes at the token budget's price
        mean = float(np.mean([count(_text(x.memory, x.text, now)) + 1 for x in lines.values()]))
        bar = token_bar(prices["tokens"], mean, req.max_tokens)
        walk = _walk(req, snap, match, mass, seeds, prices, bar, lap, stages, spends)
        found = [(hop, view.get(hop.id)) for hop in walk.hops if hop.id not in lines]
        said = match.speaker([m for _, m in found if m is not None])
        for hop, m in found:
            if m is not None and m.content.strip():
                lines[hop.id] = _Line(m, m.content, hop.match + said.get(m.id, 0.0), _hop_why(hop), None,
                                      hop.relevance)
    lines = _one_line_each(_near(lines, mass(list(lines)) if mass is not None else None))
    # 4. topic matches and related memories, curated together, in what the sections after them
    # leave: their shares, but only as much as they can fill
    label, in_topic = _nearest_topic(topics, match.qv, float(snap.schema[snap.schema.main].low),
                                     {i: x.score for i, x in lines.items()})
    lap("topics")
    # a session that has been about something else (the divergence note) has no turns for this question
    far = divergence is not None and divergence.divergent
    recent_lines = _recent_lines(recent, count, now) if not far else []
    need_recent = min(budget["recent"], head("recent") + sum(n for _, _, n in recent_lines)) if recent_lines else 0
    # the time note is kept room for only when it will be said (a fact shown can have ended only
    # when an `as_of` asks about the past: the search shows what holds now otherwise)
    need_note = head("badges") + count(_time_note(req.as_of, 9)) + 1 if req.as_of is not None else 0
    headings = (head("topics", label) if label else 0) + head("related")
    room = curator_room = max(0, usable - spent - need_recent - need_note - headings)
    vectors = unit_vectors(view, snap.schema, [x.memory for x in lines.values()])
    pool = [_candidate(i, x, "topics" if i in in_topic else "related", vectors[i], count, now)
            for i, x in lines.items()]
    picks = curate(pool, room, rooms={"topics": budget["topics"] + budget["divergence"] - spent},
                   floor=float(snap.schema[snap.schema.main].high))
    section_of = {c.id: c.section for c in pool}
    now_us = time.time_ns() // 1_000
    for p in picks:
        x = lines[p.id]
        s = section_of[p.id]
        why = f"in the topic '{label}'" if s == "topics" and x.why == "search" else x.why
        why += f": score {p.score:.2f}" + (f", redundancy {p.redundancy:.2f}" if p.redundancy > 0 else "")
        elo = x.elo if x.elo is not None else snap.ratings.elo_now(p.id, now_us)
        placed.append(_placed(x.memory, x.text, s, round(p.score, 4), p.tokens, why, _provenance(x.memory, elo), now))
    curated = sum(p.tokens for p in picks)
    left = room - curated
    lap("related")
    # 5. recent context: its share (what it can fill) and what the curator left
    if recent_lines:
        room = need_recent - head("recent") + left
        taken = {p.item.id for p in placed}
        keys = {ln.key(lines[p.item.id].memory, lines[p.item.id].text) for p in placed if p.item.id in lines}
        for m, text, n in recent_lines:
            if m.id in taken or ln.key(m, m.content) in keys:
                continue
            if n > room:
                break
            keys.add(ln.key(m, m.content))
            placed.append(_placed(m, m.content, "recent", 0.0, n, "the session's latest turns", _provenance(m, None),
                                  now))
            room -= n
        left = room
    lap("recent")
    # 6. the time note: only when it says something, of facts the block shows
    shown = [lines[p.item.id].memory if p.item.id in lines else None for p in placed]
    past = sum(1 for m in shown if m is not None and ln.ended(m, now))
    if (req.as_of is not None and any(p.item.id is not None for p in placed)) or past:
        note = _time_note(req.as_of, past)
        if count(note) + 1 + head("badges") <= need_note + left:
            placed.append(sec.Placed(ContextItem(None, "badges", note, 0.0, count(note) + 1, "temporal badges (C6)")))
    text, items = sec.fit(placed, {"topics": label}, count, req.max_tokens)
    lap("render")
    # the handoff's account: each budget's spend, the utility at this call's prices, the new prices
    tokens = count(text)
    took = lap.total()
    wanted = sum(c.tokens for c in pool if c.score > token_bar(prices["tokens"], c.tokens, req.max_tokens))
    stages = {name: {"ms": lap.ms[name], **stage} for name, stage in stages.items()}
    stages["curator"] = {"ms": lap.ms["related"], "tokens": curated, "budget": curator_room, "wanted": wanted,
                         "picked": len(picks)}
    spends["tokens"] = Spend(tokens, tokens - curated + wanted, req.max_tokens)
    spends["latency"] = Spend(took, took, float(req.latency_ms))
    reward = sum(i.score for i in items if i.id is not None and i.section != "recent")
    stats = {"tokens": tokens, "budget": req.max_tokens, "tokenizer": req.tokenizer, "items": len(items),
             "candidates": len(hits), "ms": lap.ms,
             "sections": {s: sum(1 for i in items if i.section == s) for s in sec.SECTIONS},
             "stages": stages, "latency": {"ms": took, "budget": float(req.latency_ms)},
             "prices": prices, "utility": utility(reward, spends, prices), "duals": duals.update(spends)}
    injected = [i.id for i in items if i.id is not None and i.section != "recent"]
    return Assembled(Context(text, items, stats), walk.hops, injected)


# ------------------------------------------------------------------------------------------ stages
def _memo(count: Counter) -> Counter:
    """`count` remembering what it counted in this call (a line is weighed, walked and placed)."""
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        n = seen.get(text)
        if n is None:
            n = seen[text] = count(text)
        return n

    return counted


def _hit_lines(hits: Sequence[Hit], match: QueryMatch) -> dict[str, _Line]:
    """The hits as candidate lines, in the search's order: each scored by the best own score at or
    below its rank, plus what its speaker adds."""
    ranked: list[float] = []
    best = 0.0
    for h in reversed(hits):
        best = max(best, float(h.score))
        ranked.append(best)
    ranked.reverse()
    said = match.speaker([h.memory for h in hits])
    out: dict[str, _Line] = {}
    for h, r in zip(hits, ranked):
        if h.archived or not h.memory.content.strip():
            continue  # nothing to paste: its text is in an archive file (`unarchive` it), or it has none
        extra = said.get(h.id, 0.0)
        why = "search" + (f" (speaker +{extra:.2f})" if extra > 0 else "")
        out[h.id] = _Line(h.memory, _quote(h), r + extra if r > 0 else 0.0, why, h.elo, float(h.score))
    return out


def _one_line_each(lines: dict[str, _Line]) -> dict[str, _Line]:
    """The candidates without repeats: of the lines with one key, the best (the first in order at
    equal scores); a version whose successor is a candidate is left out."""
    best: dict[tuple[str, str], str] = {}
    for i, x in lines.items():
        k = ln.key(x.memory, x.text)
        if k not in best or x.score > lines[best[k]].score:
            best[k] = i
    keep = set(best.values())
    return {i: x for i, x in lines.items() if i in keep and not (x.memory.superseded_by in keep)}


def _near(lines: dict[str, _Line], said: Mapping[str, float] | None) -> dict[str, _Line]:
    """Each session turn's value plus NEAR_SHARE x the best own match among the candidates within
    NEAR_TURNS turns of it in its session, times how much the turn says against that one (its idf
    mass over the other's, at most 1; `said`, None without a lexical space: 1), as the search
    weighs a neighbouring turn: a line in a stretch of conversation that matches the query is
    likelier on its point than a stray match (a question and its answer, a story told over three
    turns), and a reply that shares no word with the query but answers a turn that does is worth a
    line; a filler ("ok", "thanks!") carries little. A repeat of a line is no evidence for it."""
    by: dict[str, list[tuple[int, float, tuple[str, str], str]]] = {}
    for i, x in lines.items():
        m = x.memory
        if m.session_id is not None and m.seq is not None:
            by.setdefault(m.session_id, []).append((m.seq, x.own, ln.key(m, x.text), i))
    for i, x in lines.items():
        m = x.memory
        if m.session_id is None or m.seq is None:
            continue
        k = ln.key(m, x.text)
        near = [own * _share(said, i, other) for seq, own, key, other in by[m.session_id]
                if 0 < abs(seq - m.seq) <= NEAR_TURNS and key != k]
        if near:
            x.score += NEAR_SHARE * max(near)
    return lines


def _share(said: Mapping[str, float] | None, turn: str, other: str) -> float:
    """How much `turn` says against `other` (their idf masses), at most 1; 1 without masses."""
    if said is None:
        return 1.0
    base = said.get(other, 0.0)
    return min(1.0, said.get(turn, 0.0) / base) if base > 0 else 0.0


def _walk(req: Request, snap: Snapshot, match: QueryMatch, mass: Callable[[list[str]], dict[str, float]] | None,
          seeds: dict[str, float], prices: dict[str, float], bar: float, lap: _Laps,
          stages: dict[str, dict[str, Any]], spends: dict[str, Spend]) -> nav.Walk:
    """The subgraph around the seeds, then the navigator's walk over it (K1, K6's first two
    stages), each stage's spend added to `stages` and `spends`."""
    view = snap.view
    edge_budget = shrunk(req.edge_budget, prices["latency"])
    step_budget = shrunk(req.step_budget, prices["latency"])
    links_of = links_reader(view, snap.indexes, req.namespace, req.as_of, visibility(view, req.namespace, req.as_of))
    graph = nav.subgraph(seeds, links_of, edge_budget, price=prices["edges"])
    lap("subgraph")
    walk = nav.navigate(seeds, graph, step_budget, price=prices["steps"], raise_bar=bar, relevance=match.relevance,
                        importance=importance_reader(snap.ratings),
                        mass=mass)
    lap("navigator")
    stages["subgraph"] = {"edges": graph.edges, "budget": edge_budget, "wanted": graph.wanted,
                          "nodes": len(graph.links)}
    stages["navigator"] = {"steps": walk.steps, "budget": step_budget, "wanted": walk.wanted,
                           "hops": len(walk.hops), "scored": walk.scored, "stopped": walk.stopped}
    spends["edges"] = Spend(graph.edges, graph.wanted, edge_budget)
    spends["steps"] = Spend(walk.steps, walk.wanted, step_budget)
    return walk


def _nearest_topic(topics: TopicMap, qv: np.ndarray | None, low: float,
                   scores: Mapping[str, float]) -> tuple[str, set[str]]:
    """The label of the query's nearest topic and the candidates in it, when the query is near it
    (its centroid's similarity at least `low`); ("", none) otherwise or without topics."""
    centroids = np.asarray(topics.centroids, np.float64)
    if qv is None or not len(topics.labels) or centroids.shape[0] != len(topics.labels) or not scores \
            or centroids.shape[1] != len(qv):
        return "", set()
    sims = centroids @ qv
    best = int(np.argmax(sims))
    top = max(scores.values())
    if not float(sims[best]) >= low or top <= 0:
        return "", set()
    # a topic match is a candidate of the nearest topic that is also a good one (half the best at least)
    return topics.labels[best], {i for i, s in scores.items() if s >= TOPIC_SHARE * top and topics.holds(best, i)}


def _candidate(i: str, x: _Line, section: str, vector: np.ndarray, count: Counter, now: datetime) -> Candidate:
    """A line as the curator weighs it: its tokens as its group's first line (the group's line
    included) and once its group is open, its unit main-space vector, its group and section."""
    body = count(_text(x.memory, x.text, now)) + 1  # + its line break
    g = ln.group(x.memory)
    opening = body + (count(g.header()) + 1 if g.key else 0)
    return Candidate(i, x.score, opening, vector, g.key, body, section)


def _recent_lines(recent: Sequence[Memory], count: Counter, now: datetime) -> list[tuple[Memory, str, int]]:
    """The session's latest turns, newest first, each with its line's tokens."""
    return [(m, m.content, count(_text(m, m.content, now)) + 1) for m in recent]


def _text(m: Memory, text: str, now: datetime) -> str:
    """A memory's line with its mark."""
    mark = ln.mark(m, now)
    return f"{ln.line(m, text)} {mark}" if mark else ln.line(m, text)


def _placed(m: Memory, text: str, section: str, score: float, tokens: int, why: str, prov: dict[str, Any],
            now: datetime) -> sec.Placed:
    item = ContextItem(m.id, section, _text(m, text, now), score, tokens, why, prov, ln.mark(m, now))
    seq = m.seq if m.seq is not None and m.session_id is not None else -1  # a seq orders its session's turns
    return sec.Placed(item, ln.group(m), (seq, ln.said_at(m) or now, m.id))


def _quote(h: Hit) -> str:
    """A hit's text in a context: the passage that matched for a long memory (C7), else all of it."""
    if h.passage is not None:
        a, b = h.passage
        return "..." + h.memory.content[a:b] + "..."
    return h.memory.content


def _time_note(as_of: datetime | None, past: int) -> str:
    """C6's time note: what time the facts hold at, and how many shown no longer do."""
    gone = f"{past} of them no longer {'holds' if past == 1 else 'hold'} (marked)" if past else ""
    if as_of is not None:
        return f"- Facts as of {as_of.date().isoformat()}" + (f"; {gone}." if gone else ".")
    return f"- {past} of these facts no longer {'holds' if past == 1 else 'hold'} (marked)."


def _hop_why(hop: nav.Hop) -> str:
    """Why a hop is in: the link it came over, from where, and its two scores."""
    walk = f" (a walk from {hop.seed})" if hop.parent != hop.seed else ""
    return (f"navigator: via {hop.via} from {hop.parent}{walk}, relevance {hop.relevance:.2f}, "
            f"expected {hop.expected:.2f}")


def _provenance(m: Memory, elo: float | None) -> dict[str, Any]:
    """K3: where a memory came from and how far to trust it."""
    p = dict(m.provenance)
    return {"source": m.source, "uri": p.get("uri") or m.metadata.get("uri"),
            "extracted_at": m.learned_at.isoformat() if m.learned_at else None,
            "extractor": p.get("extractor", "add"), "snippet": m.content[:200],
            "verified": bool(p.get("verified", False)), "corroboration": int(p.get("corroboration", 0)),
            "trust": {"confidence": m.confidence, "elo": round(elo, 1) if elo is not None else None,
                      "tier": tier(elo) if elo is not None else None, "version": m.version}}


__all__ = ["CANDIDATES", "RECENT_TURNS", "Assembled", "Divergence", "Request", "Snapshot", "TopicMap", "assemble",
           "candidates"]
