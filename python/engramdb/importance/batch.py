"""The batch ELO update (E5): the access log past the ratings' watermark, applied once.

A logged search shows memories; the caller's feedback (or a context injection) says which it
used. Each query with feedback is one match among the memories it showed: every shown memory
is updated (used: outcome 1, shown and not used: 0) against the mean rating of the others
(importance/elo.py). A query is settled by the first batch that reads its feedback: feedback
arriving for it after that is counted as late and changes nothing, so replaying the log from
its start always makes the same ratings. Searches without feedback only count as accesses.

Running the update twice changes nothing the second time (the watermark moved past every row
the first read); every change is returned as a row for the ELO update log.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._arrow_numpy import array_of, scalar_of, whole
from .elo import RELEVANCE_THRESHOLD, delta
from .ratings import Rating, Ratings

OUTCOME_KINDS = ("feedback", "inject")


@dataclass
class UpdateReport:
    """What one batch update read and changed."""

    entries: int = 0  # access-log rows past the watermark it read
    matches: int = 0  # queries with feedback it settled
    updates: int = 0  # rating changes (one per memory per match)
    late_feedback: int = 0  # feedback rows for queries an earlier batch had settled (ignored)
    unknown_queries: int = 0  # feedback for a query the log never recorded (rated alone)
    foreign: int = 0  # used ids rated in another namespace than the query's (ignored: namespaces stay apart)
    watermark: int = 0  # the log position the ratings now cover
    seconds: float = 0.0
    changes: list[dict[str, Any]] = field(default_factory=list, repr=False)  # the ELO update log's rows


def apply(ratings: Ratings, log: pa.Table, threshold: float = RELEVANCE_THRESHOLD) -> UpdateReport:
    """Apply every row of `log` (the whole access log, seq ascending) past `ratings.watermark`."""
    t0 = time.perf_counter()
    rep = UpdateReport(watermark=ratings.watermark)
    if log.num_rows == 0:
        return rep
    mark = ratings.watermark
    last = int(pc.max(log.column("seq")).as_py() or 0)
    log = _needed(log, mark)
    if log.num_rows == 0:  # nothing past the watermark
        ratings.watermark = rep.watermark = max(mark, last)
        return rep
    c: dict[str, list[Any]] = {name: log.column(name).to_pylist() for name in
                               ("seq", "kind", "query_id", "namespace", "memory_id", "score", "rank")}
    at_us = pc.cast(log.column("at"), pa.int64()).to_pylist()
    shown: dict[str, list[tuple[str, float, str]]] = {}  # query -> (memory, score, namespace) in rank order
    first_outcome: dict[str, int] = {}  # query -> seq of its first feedback row
    for i, (seq, kind, q, mid) in enumerate(zip(c["seq"], c["kind"], c["query_id"], c["memory_id"])):
        if kind == "search" and mid is not None:
            shown.setdefault(q, []).append((mid, c["score"][i] if c["score"][i] is not None else math.nan,
                                            c["namespace"][i]))
            if seq > mark:  # an access (C5 counts it whether or not feedback follows)
                _seen(ratings, mid, c["namespace"][i], at_us[i])
        elif kind in OUTCOME_KINDS and q not in first_outcome:
            first_outcome[q] = seq
    # the outcome rows past the watermark, grouped per query in log order
    used: dict[str, tuple[set[str], int, str]] = {}  # query -> (used ids, time, namespace)
    for i, (seq, kind, q, mid) in enumerate(zip(c["seq"], c["kind"], c["query_id"], c["memory_id"])):
        if seq <= mark:
            continue
        rep.entries += 1
        if kind not in OUTCOME_KINDS:
            continue
        if first_outcome[q] <= mark:
            rep.late_feedback += 1
            continue
        ids, when, ns = used.get(q, (set(), at_us[i], c["namespace"][i]))
        if mid is not None:  # a row without a memory: "none of them was used"
            ids.add(mid)
        used[q] = (ids, max(when, at_us[i]), ns)
    for q, (ids, when, ns) in used.items():
        players = shown.get(q)
        if players is None:
            rep.unknown_queries += 1
            players = []
        known = {m for m, _, _ in players}
        # a memory of another namespace never plays in this one's match (feedback checks it when
        # given; this holds for rows spooled or logged before that check too)
        foreign = {m for m in ids if m in ratings.by_id and ratings.by_id[m].namespace != ns}
        rep.foreign += len(foreign)
        players = [p for p in players if p[0] not in foreign]
        # a memory used but not shown by the search (a context injected it): relevant by use
        players = players + [(m, 1.0, ns) for m in sorted(ids - known - foreign)]
        ids = ids - foreign
        _match(ratings, q, players, ids, when, threshold, rep)
        rep.matches += 1
    ratings.watermark = rep.watermark = max(mark, last)
    rep.seconds = time.perf_counter() - t0
    return rep


def _needed(log: pa.Table, mark: int) -> pa.Table:
    """The rows an update past `mark` reads: those after it, and every row of the searches they
    give an outcome for (what those searches showed, their earlier outcomes). The rest of the
    log changes nothing, so it is left in Arrow (vectorised), not read row by row."""
    seq = log.column("seq")
    after = pc.greater(seq, scalar_of(mark, seq.type))
    outcome = pc.and_(after, pc.is_in(log.column("kind"), value_set=array_of(list(OUTCOME_KINDS), pa.string())))
    asked = pc.unique(whole(log.filter(outcome).column("query_id")))
    keep = pc.or_(after, pc.fill_null(pc.is_in(log.column("query_id"), value_set=asked), scalar_of(False, pa.bool_())))
    return log.filter(keep)


def _seen(ratings: Ratings, mid: str, namespace: str, at: int) -> Rating:
    r = ratings.by_id.get(mid)
    if r is None:
        r = ratings.by_id[mid] = Rating(namespace, first_seen_us=at)
    r.shown += 1
    r.last_shown_us = max(r.last_shown_us, at)
    return r


def _match(ratings: Ratings, query: str, players: list[tuple[str, float, str]], used: set[str], when: int,
           threshold: float, rep: UpdateReport) -> None:
    """One query's ELO match: every player against the mean of the others, all from the ratings
    as they were before it (decayed to the match's time)."""
    seen: dict[str, tuple[float, str]] = {}
    for mid, score, ns in players:  # a memory shown twice by one search plays once, at its best score
        if mid not in seen or score > seen[mid][0]:
            seen[mid] = (score, ns)
    rs = {}
    for mid, (_, ns) in seen.items():
        r = ratings.by_id.get(mid)
        if r is None:
            r = ratings.by_id[mid] = Rating(ns, first_seen_us=when)
        rs[mid] = r
    before = {mid: r.elo_at(when) for mid, r in rs.items()}
    total = sum(before.values())
    n = len(before)
    for mid, (score, _) in seen.items():
        r = rs[mid]
        opponent = (total - before[mid]) / (n - 1) if n > 1 else before[mid]
        outcome = 1.0 if mid in used else 0.0
        relevance = 1.0 if math.isnan(score) else score
        change, exp_, k, gated = delta(before[mid], opponent, outcome, r.updates, relevance, threshold)
        r.elo = before[mid] + change
        r.updates += 1
        if outcome:
            r.used += 1
            r.last_used_us = max(r.last_used_us, when)
        elif r.last_used_us == 0 and r.first_seen_us == 0:
            r.first_seen_us = when
        rep.updates += 1
        rep.changes.append({"memory_id": mid, "namespace": r.namespace, "query_id": query, "at": when,
                            "before": before[mid], "after": r.elo, "expected": exp_, "outcome": outcome, "k": k,
                            "opponent": opponent, "relevance": relevance, "gated": gated})


__all__ = ["UpdateReport", "apply"]
