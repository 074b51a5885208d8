"""What the context assembly reads of a store snapshot (a `View` and its indexes): a memory's links for
the navigator (context/navigator.py), a memory's own match to the query, how much it says, its
importance, its unit vector, and the session turns around it.

- links: the live typed edges of a memory (either direction, valid at the query's time; the
  dream's hypotheses, reason "dream...", left out as the search leaves them) and the turns just
  before and after it in its session (same session_id, seq +- 1), each only when its other end is
  a memory the query may see (the search's own filter: namespace, current version, valid then);
- relevance: a memory's own match on the search's one scale, as the default (hybrid) search
  weighs it: the share of the query's BM25 term weight (idf x query count) the memory holds, and
  the main space's similarity scaled between the space's `low` and `high` (retrieval/scales.py),
  averaged with the hybrid's says (BM25 1, the main space SEMANTIC_SAY); the share leaves out
  BM25's length normalisation and saturation (a memory holding each query term once scores as a
  memory of average length would);
- speaker: what a line's speaker adds to its match. A context pastes a memory with its role
  ("Caroline: I went ..."), so the role's words are words of the line as the reader sees it: the
  share of the query's BM25 term weight the role holds and the content does not, on the same
  scale and with the same say as `relevance`'s BM25 part;
- mass: how much a memory says (the summed idf of its distinct terms): a neighbouring turn passes
  on its seed's score in proportion to it, as in the search (a filler turn carries little);
- importance: the memory's ELO chance against an unrated memory (0.5 unrated; importance/elo.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

import numpy as np

from ..importance.elo import INITIAL_ELO, expected
from ..importance.ratings import Ratings
from ..index.registry import Indexes
from ..model.memory import Memory, micros, utc_now
from ..retrieval.graph_method import HYPOTHESIS
from ..retrieval.scales import combine, lexical_ideal, semantic_scaled
from ..retrieval.scored import SEMANTIC_SAY
from ..spaces.protocol import Embedder, SparseBatch
from ..spaces.query import embed_query, lexical_space, query_terms
from ..spaces.schema import Schema
from ..storage.view import View
from .navigator import NEXT_TURN, PREVIOUS_TURN, Link


def visibility(view: View, namespace: str, as_of: datetime | None) -> Callable[[str], bool]:
    """Whether the query may see a memory (by id): the search's filter over the namespace's keys."""
    t = micros(as_of if as_of is not None else utc_now())
    mask = view.key_mask(namespace, None, t, as_of is None)

    seen: dict[str, bool] = {}  # the walk asks about one id from each of its links' ends

    def visible(mid: str) -> bool:
        found = seen.get(mid)
        if found is None:
            key = view.key_of(mid)
            found = seen[mid] = key is not None and key < len(mask) and bool(mask[key])
        return found

    return visible


def links_reader(view: View, indexes: Indexes, namespace: str, as_of: datetime | None,
                 visible: Callable[[str], bool]) -> Callable[[str], list[Link]]:
    """`links_of(id)`: a memory's links (see the module docstring)."""
    when = as_of if as_of is not None else utc_now()
    turns = indexes.turns.get(view, namespace)
    with_edges = view.edge_rows > 0

    def links_of(mid: str) -> list[Link]:
        out: list[Link] = []
        if with_edges:
            for e in view.outgoing(mid) + view.incoming(mid):
                if not e.valid_at(when) or (e.reason or "").startswith(HYPOTHESIS):
                    continue
                other = e.dst if e.src == mid else e.src
                if other != mid and visible(other):
                    out.append(Link(other, e.type, float(e.confidence)))
        loc = view.loc_of(mid)
        if loc is None:
            return out
        name, at = view.turn_at(loc)
        if name is None or at < 0:
            return out
        for step, kind in ((1, NEXT_TURN), (-1, PREVIOUS_TURN)):
            near = turns.get((name, at + step))
            if near is not None:
                other = view.id_at(near)
                if visible(other):
                    out.append(Link(other, kind, 1.0))
        return out

    return links_of


class QueryMatch:
    """A query's own match to memories of one namespace (see the module docstring: `relevance`,
    `speaker`), read from the snapshot: the main space's similarity and the BM25 term weight held."""

    def __init__(self, view: View, indexes: Indexes, embedders: Mapping[str, Embedder], schema: Schema,
                 namespace: str, query: str) -> None:
        self.view, self.schema, self.embedders = view, schema, embedders
        main = schema[schema.main]
        self.main = main
        self.qv: np.ndarray | None = None
        if main.kind == "dense" and main.name in embedders:
            qv = np.asarray(embed_query(main, embedders, query), np.float64).reshape(-1)
            self.qv = qv / max(float(np.linalg.norm(qv)), 1e-12)
        self.lex = lexical_space(schema, embedders)
        self.weight: dict[int, float] = {}
        self.ideal = 0.0
        self.says: dict[str, float] = {}
        # the query's terms, ascending, and the BM25 term weight of each (a memory's share is the
        # weights of the terms it holds: one sorted lookup of every memory's terms at once)
        self._q_terms, self._q_weights = np.empty(0, np.int64), np.empty(0, np.float64)
        if self.lex is not None:
            terms, counts = query_terms(self.lex, embedders, query)
            ix = indexes.bm25(self.lex, view).sync(view).namespace(namespace, view.rows)
            if ix is not None and len(terms):
                self.weight = dict(zip(terms.tolist(), (ix.idf(terms) * np.asarray(counts, np.float64)).tolist()))
                self._q_terms = np.array(sorted(self.weight), np.int64)
                self._q_weights = np.array([self.weight[t] for t in self._q_terms.tolist()], np.float64)
            self.ideal = lexical_ideal(ix, terms, counts)  # the search's own: sum of idf x query count
            self.says["bm25"] = 1.0
        if self.qv is not None:
            self.says["vector"] = SEMANTIC_SAY
        self._role_terms: dict[str, set[int]] = {}
        self._rows: dict[str, np.ndarray] = {}

    def term_row(self, mid: str) -> np.ndarray:
        """A memory's distinct lexical term ids, ascending (empty without a lexical space), read
        once per call of the context: the walk, the lines and the speakers all ask."""
        found = self._rows.get(mid)
        if found is None:
            loc = self.view.loc_of(mid)
            found = np.empty(0, np.int32)
            if loc is not None and self.lex is not None:
                sb = self.view.vectors(loc[0], self.lex.name)
                assert isinstance(sb, SparseBatch)
                found = sb.row(loc[1])[0]
            self._rows[mid] = found
        return found

    def _terms(self, mid: str) -> set[int]:
        return set(self.term_row(mid).tolist())

    def held(self, ids: list[str]) -> np.ndarray:
        """The share of the query's BM25 term weight each memory holds (0 without one)."""
        out = np.zeros(len(ids))
        if self.ideal <= 0 or not len(self._q_terms) or not ids:
            return out
        rows = [self.term_row(mid) for mid in ids]
        terms = np.concatenate(rows).astype(np.int64)
        owner = np.repeat(np.arange(len(ids)), [len(r) for r in rows])
        pos = np.minimum(np.searchsorted(self._q_terms, terms), len(self._q_terms) - 1)
        hit = self._q_terms[pos] == terms
        out += np.bincount(owner[hit], weights=self._q_weights[pos[hit]], minlength=len(ids))
        return out / self.ideal

    def relevance(self, ids: list[str]) -> dict[str, float]:
        """Each memory's own match to the query, on the search's one scale."""
        parts: dict[str, np.ndarray] = {}
        if self.qv is not None:
            sims = np.zeros(len(ids))
            by_seg: dict[int, list[tuple[int, int]]] = {}  # segment -> (position, row): one take a segment
            for j, mid in enumerate(ids):
                loc = self.view.loc_of(mid)
                if loc is not None:
                    by_seg.setdefault(loc[0], []).append((j, loc[1]))
            for seg, found in by_seg.items():
                x = np.asarray(np.asarray(self.view.vectors(seg, self.main.name))[[r for _, r in found]], np.float64)
                x = x.reshape(len(found), -1)
                sims[[j for j, _ in found]] = (x @ self.qv) / np.maximum(_row_norms(x), 1e-12)
            parts["vector"] = semantic_scaled(sims, self.main)
        if self.lex is not None:
            parts["bm25"] = np.clip(self.held(ids), 0.0, 1.0)
        score = combine(parts, self.says) if parts else np.zeros(len(ids))
        return {i: round(float(s), 4) for i, s in zip(ids, score)}

    def speaker(self, memories: list[Memory]) -> dict[str, float]:
        """What each memory's role adds to its line's match (0 without a role, a lexical space, or
        a query word the role holds that the content does not)."""
        out: dict[str, float] = {}
        say = self.says.get("bm25", 0.0) / max(sum(self.says.values()), 1e-12)
        for m in memories:
            if not m.role or self.ideal <= 0 or say <= 0 or self.lex is None:
                out[m.id] = 0.0
                continue
            role = self._role_terms.get(m.role)
            if role is None:
                sb = self.embedders[self.lex.name].embed([m.role])
                assert isinstance(sb, SparseBatch)
                role = self._role_terms[m.role] = {int(t) for t in sb.row(0)[0]} & set(self.weight)
            extra = role - self._terms(m.id) if role else set()
            out[m.id] = round(say * sum(self.weight[t] for t in extra) / self.ideal, 4) if extra else 0.0
        return out


def mass_reader(view: View, indexes: Indexes, embedders: Mapping[str, Embedder], schema: Schema,
                namespace: str, term_row: Callable[[str], np.ndarray] | None = None,
                ) -> Callable[[list[str]], dict[str, float]] | None:
    """`mass(ids)`: how much each memory says, the summed idf of its distinct terms (what the search
    weighs a neighbouring turn by, retrieval/scored.py); None without a lexical space. `term_row`:
    a reader of a memory's term ids already made for this call (QueryMatch.term_row)."""
    lex = lexical_space(schema, embedders)
    if lex is None:
        return None
    ix = indexes.bm25(lex, view).sync(view).namespace(namespace, view.rows)
    known: dict[str, float] = {}  # what this reader summed: the walk and the lines ask about the same memories

    def mass(ids: list[str]) -> dict[str, float]:
        new = [i for i in dict.fromkeys(ids) if i not in known]
        if new:
            known.update(_summed(new))
        return {i: known[i] for i in ids}

    def _summed(ids: list[str]) -> dict[str, float]:
        rows: list[np.ndarray] = []
        for i in ids:
            found = term_row(i) if term_row is not None else None
            if found is None:
                loc = view.loc_of(i)
                sb = view.vectors(loc[0], lex.name) if loc is not None else None
                found = sb.row(loc[1])[0] if isinstance(sb, SparseBatch) and loc is not None else np.empty(0, np.int32)
            rows.append(found)
        if ix is None or not rows:
            return dict.fromkeys(ids, 0.0)
        # a row's terms are distinct (SparseBatch): its mass is the sum of their idf
        every = np.concatenate(rows).astype(np.int64)
        terms, inverse = np.unique(every, return_inverse=True)
        idf = ix.idf(terms.astype(np.int32)) if len(terms) else np.empty(0)
        owner = np.repeat(np.arange(len(ids)), [len(r) for r in rows])
        sums = np.bincount(owner, weights=idf[inverse], minlength=len(ids)) if len(every) else np.zeros(len(ids))
        return dict(zip(ids, sums.tolist()))

    return mass


def importance_reader(ratings: Ratings) -> Callable[[list[str]], dict[str, float]]:
    """`importance(ids)`: each memory's ELO chance against an unrated one (0.5 unrated)."""
    now_us = time.time_ns() // 1_000

    def importance(ids: list[str]) -> dict[str, float]:
        return {i: expected(ratings.elo_now(i, now_us), INITIAL_ELO) for i in ids}

    return importance


def unit_vectors(view: View, schema: Schema, memories: list[Memory]) -> dict[str, np.ndarray]:
    """Each memory's main-space vector scaled to length 1 (what the curator's redundancy compares),
    read a segment at a time."""
    out: dict[str, np.ndarray] = {}
    rows: dict[int, list[tuple[str, int]]] = {}
    for m in memories:
        loc = view.loc_of(m.id)
        if loc is None:
            v = np.asarray(view.row_vector(m.id, schema.main), np.float64).reshape(-1)
            out[m.id] = v / max(float(np.linalg.norm(v)), 1e-12)
        else:
            rows.setdefault(loc[0], []).append((m.id, loc[1]))
    for seg, found in rows.items():
        x = np.asarray(np.asarray(view.vectors(seg, schema.main))[[r for _, r in found]], np.float64)
        x = x.reshape(len(found), -1)
        x = x / np.maximum(_row_norms(x)[:, None], 1e-12)
        out.update((mid, x[j]) for j, (mid, _) in enumerate(found))
    return out


def _row_norms(x: np.ndarray) -> np.ndarray:
    """Each row's length: `np.linalg.norm(x, axis=1)`'s own sum (the same values, bit for bit),
    without its checks and dispatch (~5 us a call; a context makes one per segment its lines are in)."""
    out: np.ndarray = np.sqrt(np.add.reduce(x * x, axis=1))
    return out


__all__ = ["QueryMatch", "importance_reader", "links_reader", "mass_reader", "unit_vectors", "visibility"]
