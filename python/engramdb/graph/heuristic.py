"""Edge inference (H2): who proposes typed edges between memories, and the built-in heuristic.

An inferrer is any callable `(memory, candidates) -> proposals`: it sees one memory and the few
memories of its namespace nearest to it in the main space (`Candidate`: the memory and that
similarity) and proposes edges from the memory to some of them (`EdgeProposal`: dst, type,
confidence, reason). An LLM hook is such a callable (ask the model which candidates the memory
causes, contradicts, elaborates, ...); `HeuristicInferrer` is the built-in one, model-free.

`Store.admin.infer_edges` runs an inferrer, checks every proposal (an unknown dst, a bad type or a
confidence outside [0, 1] is rejected with its reason, never stored) and stores only the edges
whose confidence is at least `MIN_CONFIDENCE` (0.7, H2): a guess below that would feed the graph
method noise, and the graph method's score is the product of confidences along the path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..model.edge import Edge
from ..model.memory import Memory
from ..spaces.analyzer import Analyzer

MIN_CONFIDENCE = 0.7  # H2: inference stores only edges at least this sure


@dataclass(frozen=True)
class Candidate:
    """A memory an inferrer may link to: its main-space similarity to the memory being linked,
    and that similarity's strength, 0 at the space's `low` threshold and 1 at its `high` one (the
    C2 calibration: raw similarities of different models are not comparable, strengths are)."""

    memory: Memory
    similarity: float
    strength: float


@dataclass(frozen=True)
class EdgeProposal:
    """One proposed edge from the memory being linked to `dst` (a candidate's id)."""

    dst: str
    type: str
    confidence: float
    reason: str | None = None


Inferrer = Callable[["Memory", Sequence[Candidate]], Iterable[EdgeProposal]]


@dataclass
class InferenceReport:
    """What one `infer_edges` run did, memory by memory.

    stored: the edges written. below_threshold: (src, proposal) pairs that were valid but less
    sure than the run's minimum confidence. rejected: (src, proposal, why) of invalid proposals.
    failed: src id -> the error the inferrer raised for it (the run went on with the others).
    """

    stored: list[Edge] = field(default_factory=list)
    below_threshold: list[tuple[str, EdgeProposal]] = field(default_factory=list)
    rejected: list[tuple[str, EdgeProposal, str]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    memories: int = 0

    def summary(self) -> str:
        return (f"{self.memories} memories: {len(self.stored)} edges stored, {len(self.below_threshold)} below "
                f"the confidence threshold, {len(self.rejected)} rejected, {len(self.failed)} failed")


# a cue that the memory states a cause: "X because Y", "due to", "as a result of", ...
_CAUSAL = re.compile(r"\b(because|due to|caused by|as a result of|owing to|thanks to|that's why|that is why|"
                     r"which is why|led to|leads to|so that|result(?:ed|s)? in)\b", re.IGNORECASE)


class HeuristicInferrer:
    """The built-in, model-free inferrer. It proposes an edge only where the main space agrees
    (strength > 0) and the two memories share content terms (stemmed, stop words out); its
    confidence is the share of the lighter memory's term weight found in the other (a weighted
    overlap coefficient), so two short memories about the same named things score high, a
    passing mention low. Weights are idf when given (the store gives its BM25 index's idf of
    the namespace, so the words every memory of a conversation shares, its speakers' names,
    count little), else 1 per term.

    - CAUSED_BY: the memory states a cause (a cue such as "because", "due to", "led to") and the
      candidate came before it (valid_from, else learned_at). Confidence 0.5 + 0.5 x overlap: the
      cue is evidence of a causal link to something earlier, the overlap of it being this one.
    - RELATED_TO: otherwise, when they share at least `min_shared` terms. Confidence = overlap.

    Proposals below the store's bar (0.7) are still returned: the store counts them in its report
    (what a lower bar would have added) and stores none of them.
    """

    def __init__(self, *, min_shared: int = 2, analyzer: Analyzer | None = None,
                 idf: Callable[[Sequence[str]], Sequence[float]] | None = None) -> None:
        if isinstance(min_shared, bool) or not isinstance(min_shared, int) or min_shared < 1:
            raise ValueError(f"min_shared must be an int >= 1, got {min_shared!r}")
        self.min_shared = min_shared
        self.analyzer = analyzer or Analyzer()
        self.idf = idf
        self._idf_seen: dict[str, float] = {}

    def _weights(self, terms: set[str]) -> dict[str, float]:
        if self.idf is None:
            return dict.fromkeys(terms, 1.0)
        known = self._idf_seen  # a term's idf is looked up once per run (memories share words)
        new = sorted(t for t in terms if t not in known)
        if new:
            known.update((t, max(0.0, float(w))) for t, w in zip(new, self.idf(new)))
        return {t: known[t] for t in terms}

    def __call__(self, memory: Memory, candidates: Sequence[Candidate]) -> list[EdgeProposal]:
        terms = set(self.analyzer.terms(memory.content))
        weight = self._weights(terms)
        causal = _CAUSAL.search(memory.content)
        t0 = memory.valid_from or memory.learned_at
        out: list[EdgeProposal] = []
        for c in candidates:
            other = set(self.analyzer.terms(c.memory.content))
            shared = sorted(terms & other)
            if c.strength <= 0 or not shared:
                continue
            weight.update(self._weights(other - weight.keys()))
            mass = min(sum(weight[t] for t in terms), sum(weight[t] for t in other))
            overlap = sum(weight[t] for t in shared) / mass if mass > 0 else 0.0
            t1 = c.memory.valid_from or c.memory.learned_at
            why = f"shares {', '.join(shared[:5])} (overlap {overlap:.2f}); similarity {c.similarity:.2f}"
            if causal and t0 is not None and t1 is not None and t1 < t0:
                out.append(EdgeProposal(c.memory.id, "CAUSED_BY", round(0.5 + 0.5 * overlap, 4),
                                        f"causal cue {causal.group(0)!r} and it came earlier; {why}"))
            elif len(shared) >= self.min_shared:
                out.append(EdgeProposal(c.memory.id, "RELATED_TO", round(overlap, 4), why))
        return out
