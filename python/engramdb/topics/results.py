"""Topics as results, and how they move between runs (C4): ids kept, stability, phases, churn.

A run's topics are matched to the previous run's by membership Jaccard: a new topic takes the id
of the previous topic it overlaps most (Jaccard >= `SAME_TOPIC`), else a new id. Per topic:
`stability` = that Jaccard (None when new), `centroid_stability` = the cosine between its main-space
centroids then and now, `runs` = how many runs it has lived, and its `phase`:
- "emerging": new this run, or grown by more than 20%;
- "merging": two or more previous topics each put most of their members into it;
- "declining": shrunk by more than 20%;
- "stable": otherwise.
For the namespace: `churn` = the share of the previous run's topic members that are no longer in
the topic that took its id (0 = nothing moved), `entropy` = the Shannon entropy of the topic
sizes over its maximum (1 = all topics equal), and the consolidation trigger (SPEC C4: entropy >
0.7 and churn > 0.5).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

SAME_TOPIC = 0.3
GROWTH = 0.2
TRIGGER_ENTROPY, TRIGGER_CHURN = 0.7, 0.5


@dataclass(frozen=True)
class Topic:
    """One topic of a namespace."""

    id: str
    namespace: str
    label: str
    members: tuple[str, ...]
    confidence: float  # the mean agreement of its agreeing pairs over the most the schema allows
    phase: str = "emerging"
    stability: float | None = None  # membership Jaccard with the previous run's topic of this id
    centroid_stability: float | None = None
    runs: int = 1
    created_us: int = 0

    @property
    def size(self) -> int:
        return len(self.members)


class Topics(list[Topic]):
    """A namespace's topics, biggest first, with the namespace's movement since the last run."""

    churn: float
    entropy: float
    sampled: int | None  # clustered on a sample of this many memories (a large namespace), or None

    centroids: np.ndarray | None  # each topic's unit main-space centroid, in order (None: not known)

    def __init__(self, topics: list[Topic], churn: float = 0.0, entropy: float = 0.0) -> None:
        super().__init__(topics)
        self.churn, self.entropy, self.sampled, self.centroids = churn, entropy, None, None

    @property
    def consolidation_due(self) -> bool:
        """SPEC C4's trigger: topics spread evenly (entropy > 0.7) and moving (churn > 0.5)."""
        return self.entropy > TRIGGER_ENTROPY and self.churn > TRIGGER_CHURN


@dataclass
class Previous:
    """What the last run left: topic id -> (members, centroid, runs, created)."""

    topics: dict[str, tuple[frozenset[str], np.ndarray | None, int, int]] = field(default_factory=dict)
    next_id: int = 0


def follow(namespace: str, found: list[tuple[list[str], float, str, np.ndarray | None]], prev: Previous,
           now_us: int) -> tuple[Topics, Previous]:
    """This run's topics (members, confidence, label, centroid) with ids, phases and the
    namespace's churn and entropy; and what the next run compares with."""
    taken: set[str] = set()
    home = {m: i for i, (members, _, _, _) in enumerate(found) for m in members}  # member -> new topic
    claims: dict[str, list[str]] = {}  # new topic index -> previous ids most of whose members it holds
    shared: list[list[tuple[str, int]]] = [[] for _ in found]  # new topic -> (previous id, overlap), in prev order
    for pid, (pm, _, _, _) in prev.topics.items():
        counts = Counter(home[m] for m in pm if m in home)
        for i, k in sorted(counts.items()):
            shared[i].append((pid, k))
        if counts:
            best = min(counts, key=lambda i: (-counts[i], i))  # the most overlap, the first topic on a tie
            if counts[best] * 2 > len(pm):
                claims.setdefault(str(best), []).append(pid)
    order = {pid: k for k, pid in enumerate(prev.topics)}
    for lst in shared:
        lst.sort(key=lambda pair: order[pair[0]])
    out: list[Topic] = []
    moved = total = 0
    nxt = Previous(next_id=prev.next_id)
    for i, (members, conf, label, centroid) in enumerate(found):
        ms = frozenset(members)
        match, jac = None, 0.0
        for pid, inter in shared[i]:  # only previous topics it shares members with can match
            if pid in taken:
                continue
            j = inter / (len(ms) + len(prev.topics[pid][0]) - inter)
            if j > jac:
                match, jac = pid, j
        if match is not None and jac >= SAME_TOPIC:
            taken.add(match)
            pm, pc, runs, created = prev.topics[match]
            tid = match
            cs = _cos(pc, centroid)
            grew = (len(ms) - len(pm)) / max(1, len(pm))
            phase = "merging" if len(claims.get(str(i), [])) > 1 else \
                "emerging" if grew > GROWTH else "declining" if grew < -GROWTH else "stable"
            topic = Topic(tid, namespace, label, tuple(sorted(ms)), round(conf, 4), phase, round(jac, 4), cs,
                          runs + 1, created)
        else:
            tid = f"{namespace}/t{nxt.next_id}"
            nxt.next_id += 1
            topic = Topic(tid, namespace, label, tuple(sorted(ms)), round(conf, 4), created_us=now_us)
        out.append(topic)
        nxt.topics[tid] = (ms, centroid, topic.runs, topic.created_us)
    for pid, (pm, _, _, _) in prev.topics.items():
        total += len(pm)
        kept = nxt.topics.get(pid)
        moved += len(pm - kept[0]) if kept is not None else len(pm)
    sizes = np.array([t.size for t in out], np.float64)
    entropy = 0.0
    if len(sizes) > 1:
        p = sizes / sizes.sum()
        entropy = float(-(p * np.log(p)).sum() / math.log(len(p)))
    return Topics(out, round(moved / total, 4) if total else 0.0, round(entropy, 4)), nxt


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None:
        return None
    na, nb = float(np.sqrt(a.dot(a))), float(np.sqrt(b.dot(b)))  # np.linalg.norm's arithmetic, without its checks
    return round(float(a @ b) / (na * nb), 4) if na > 0 and nb > 0 else None


__all__ = ["Previous", "Topic", "Topics", "follow"]
