"""LoCoMo conversations as memories, for bench/eval_locomo.py: the views, the scoring (R@k, NDCG@10,
`run_strategy`, deltas) and the plain BM25 baseline.

A view turns the dialogue turns (in load order: conversations, sessions by number, turns as listed) into
memories, in the order they are added, and says which memory holds each turn:

* `turns`: one memory per turn, id "<conversation>/<dia_id>", role the speaker.
* `windows`: per session, non-overlapping windows of WINDOW consecutive turns (the last may be shorter),
  id "<conversation>/w<session>:<j>", content the window's turns each rendered as in `turns`, joined
  with "\\n", role the first turn's speaker.
* `assistant`: per session, the first speaker is the user: each of their turns is its own memory, as in
  `turns` but with role "user"; the other speaker's turns of the session are grouped, in order, into
  paragraphs of up to PARAGRAPH turns (the user's turns in between skipped over), id
  "<conversation>/a<session>:<j>", content "[<date>] <speaker>: " and the texts joined with " ", role
  "assistant", placed in the add order at the position of its first turn.

* `long`: as `assistant`, but all of the other speaker's turns of a session are one memory (ids
  "<conversation>/a<session>:0"): long memories, often over a passage (~200 words), as in long
  user/assistant sessions whose assistant turns run to hundreds of words.

Every memory has valid_from = its session's date. Questions are scored on distinct evidence memories:
two evidence turns in one window are one relevant memory. `PlainBM25` is the `plain_bm25` row: bm25s
(Lucene BM25, k1 1.5, b 0.75, English stop words, PyStemmer English stems), one index per conversation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

VIEWS = ("turns", "windows", "assistant", "long")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# a strategy name with a suffix runs its base strategy with these stages
VARIANTS = {"pipeline+feedback": ("pipeline", {"feedback": 10})}
KS = (5, 10)
METRICS = ("recall@5", "recall@10", "ndcg@10")
PLAIN = "plain_bm25"  # the baseline row
WINDOW = 6  # turns per `windows` memory
PARAGRAPH = 8  # the other speaker's turns per `assistant` paragraph


class TurnLike(Protocol):
    """What a view reads of a turn (eval_locomo.Turn)."""

    @property
    def conversation(self) -> str: ...
    @property
    def dia_id(self) -> str: ...
    @property
    def speaker(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def session(self) -> int: ...
    @property
    def date(self) -> str: ...
    @property
    def when(self) -> datetime: ...

    def content(self, prefix: bool) -> str: ...


class QuestionLike(Protocol):
    """What scoring reads of a question (eval_locomo.Question)."""

    @property
    def conversation(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def category(self) -> int: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ViewMemory:
    """One memory of a view: where it is, what it says, and the dia_ids of the turns it holds."""

    conversation: str
    key: str  # the view id: "D1:3" (a turn), "w1:0" (a window), "a1:0" (a paragraph)
    content: str
    session: int
    role: str
    speaker: str
    date: str
    when: datetime
    dia_ids: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.conversation}/{self.key}"


@dataclass
class View:
    """A view's memories in add order (conversations contiguous, chronological within each)."""

    name: str
    memories: list[ViewMemory]
    holder: dict[tuple[str, str], str] = field(default_factory=dict)  # (conversation, dia_id) -> memory id

    def __post_init__(self) -> None:
        if not self.holder:
            self.holder = {(m.conversation, d): m.id for m in self.memories for d in m.dia_ids}

    def ids(self) -> dict[str, tuple[str, ...]]:
        """Memory id -> the dia_ids it holds."""
        return {m.id: m.dia_ids for m in self.memories}

    def words(self) -> dict[str, int]:
        """Memory id -> how many words its content has."""
        return {m.id: len(m.content.split()) for m in self.memories}

    def positions(self) -> list[int]:
        """Each memory's position within its (conversation, session) in add order: 0..n-1."""
        seen: dict[tuple[str, int], int] = {}
        out = []
        for m in self.memories:
            key = (m.conversation, m.session)
            out.append(seen.get(key, 0))
            seen[key] = out[-1] + 1
        return out

    def conversations(self) -> list[str]:
        """The namespaces, in add order."""
        return list(dict.fromkeys(m.conversation for m in self.memories))


def _sessions(turns: Sequence[TurnLike]) -> Iterator[list[TurnLike]]:
    """Runs of consecutive turns of one (conversation, session)."""
    group: list[TurnLike] = []
    for t in turns:
        if group and (t.conversation, t.session) != (group[0].conversation, group[0].session):
            yield group
            group = []
        group.append(t)
    if group:
        yield group


def _memory(first: TurnLike, key: str, content: str, role: str, held: Sequence[TurnLike]) -> ViewMemory:
    return ViewMemory(first.conversation, key, content, first.session, role, first.speaker, first.date, first.when,
                      tuple(t.dia_id for t in held))


def turns_view(turns: Sequence[TurnLike], prefix: bool = True) -> View:
    """One memory per turn."""
    return View("turns", [_memory(t, t.dia_id, t.content(prefix), t.speaker, [t]) for t in turns])


def windows_view(turns: Sequence[TurnLike], prefix: bool = True, size: int = WINDOW) -> View:
    """Per session, windows of `size` consecutive turns, one memory each."""
    out = []
    for group in _sessions(turns):
        for j, start in enumerate(range(0, len(group), size)):
            win = group[start : start + size]
            out.append(_memory(win[0], f"w{win[0].session}:{j}", "\n".join(t.content(prefix) for t in win),
                               win[0].speaker, win))
    return View("windows", out)


def assistant_view(turns: Sequence[TurnLike], prefix: bool = True, size: int = PARAGRAPH) -> View:
    """Per session, the first speaker's turns verbatim (role "user"), the other's grouped into paragraphs."""
    out = []
    for group in _sessions(turns):
        user = group[0].speaker
        placed: list[tuple[int, ViewMemory]] = []  # (position of the first turn in the session, memory)
        others = [(i, t) for i, t in enumerate(group) if t.speaker != user]
        for i, t in enumerate(group):
            if t.speaker == user:
                placed.append((i, _memory(t, t.dia_id, t.content(prefix), "user", [t])))
        for j, start in enumerate(range(0, len(others), size)):
            chunk = [t for _, t in others[start : start + size]]
            text = " ".join(t.text for t in chunk)
            head = chunk[0]
            content = f"[{head.date}] {head.speaker}: {text}" if prefix else text
            placed.append((others[start][0], _memory(head, f"a{head.session}:{j}", content, "assistant", chunk)))
        out += [m for _, m in sorted(placed, key=lambda p: p[0])]
    return View("assistant", out)


def long_view(turns: Sequence[TurnLike], prefix: bool = True) -> View:
    """As `assistant_view`, with each session's other-speaker turns one memory."""
    return View("long", assistant_view(turns, prefix, size=1 << 30).memories)


BUILDERS = {"turns": turns_view, "windows": windows_view, "assistant": assistant_view, "long": long_view}


def build_view(name: str, turns: Sequence[TurnLike], prefix: bool = True) -> View:
    """The view `name` (one of VIEWS) of `turns`."""
    if name not in BUILDERS:
        raise ValueError(f"unknown view {name!r} (expected one of {', '.join(VIEWS)})")
    return BUILDERS[name](turns, prefix)


def evidence_memories(holder: Mapping[tuple[str, str], str], conversation: str, evidence: Sequence[str]) -> list[str]:
    """The distinct memories holding a question's evidence turns, in evidence order (a turn no memory
    holds counts as a memory of its own that no search returns)."""
    return list(dict.fromkeys(holder.get((conversation, e), f"{conversation}/?{e}") for e in evidence))


def ndcg_at(hits: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """NDCG@k with binary gains: each relevant memory counts once; the ideal ranks min(len(relevant), k)."""
    rel = set(relevant)
    if not rel:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for rank, h in enumerate(hits[:k], start=1):
        if h in rel and h not in seen:
            seen.add(h)
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(rel), k) + 1))
    return dcg / ideal


@dataclass(frozen=True)
class _Hit:
    id: str
    score: float


class PlainBM25:
    """The plain baseline: bm25s (Lucene BM25, k1 1.5, b 0.75) over the memory texts, English stop words
    and the PyStemmer English stemmer, one index per namespace. `search` looks like `Store.search` (hits
    with an `id`) and drops documents that share no term with the query (score 0)."""

    def __init__(self, view: View, *, k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self.index_seconds = 0.0
        self._index: dict[str, tuple[Any, list[str]]] = {}
        for ns in view.conversations():
            mems = [m for m in view.memories if m.conversation == ns]
            t0 = time.perf_counter()
            tokens = bm25s.tokenize([m.content for m in mems], stopwords="en", stemmer=self._stemmer,
                                    show_progress=False)
            retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
            retriever.index(tokens, show_progress=False)
            self.index_seconds += time.perf_counter() - t0
            self._index[ns] = (retriever, [m.id for m in mems])

    def search(self, query: str, *, namespace: str, k: int = 10, **_: Any) -> list[_Hit]:
        retriever, ids = self._index[namespace]
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, return_ids=False,
                                      show_progress=False)
        if not tokens or not tokens[0]:
            return []
        docs, scores = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False, n_threads=1)
        return [_Hit(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]


def bm25s_missing() -> str | None:
    """Why the plain BM25 baseline cannot run here, or None."""
    try:
        import bm25s  # noqa: F401
        import Stemmer  # noqa: F401
    except ImportError as exc:
        return f"{exc.name or 'bm25s'} is not installed (pip install bm25s PyStemmer)"
    return None


def recall_at(hits: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """The fraction of `evidence` (distinct ids) among the first k of `hits`."""
    top = set(hits[:k])
    return sum(e in top for e in evidence) / len(evidence)


@dataclass
class StrategyResult:
    """Per-question recalls, NDCG@10 and latencies of one strategy on one view and profile, or why it was
    skipped."""

    strategy: str
    skipped: str | None = None
    recalls: list[tuple[int, float, float]] = field(default_factory=list)  # (category, R@5, R@10)
    ndcgs: list[float] = field(default_factory=list)  # NDCG@10, per question as `recalls`
    latencies_ms: list[float] = field(default_factory=list)
    # words in each question's top 10 over the mean words of the namespace's memories: above 1, a
    # strategy returns longer memories than the namespace holds (a length bias when recall does not follow)
    length_ratios: list[float] = field(default_factory=list)

    def metric(self, name: str, category: int | None = None) -> float | None:
        """Mean of one of METRICS over the questions (of one category); None when there are none."""
        if name == "ndcg@10":
            vals = [v for r, v in zip(self.recalls, self.ndcgs) if category is None or r[0] == category]
        else:
            col = KS.index(int(name.removeprefix("recall@"))) + 1
            vals = [r[col] for r in self.recalls if category is None or r[0] == category]
        return float(np.mean(vals)) if vals else None

    def recall(self, k: int, category: int | None = None) -> float | None:
        """Mean recall@k over the questions (of one category); None when there are none."""
        return self.metric(f"recall@{k}", category)

    def ndcg(self, category: int | None = None) -> float | None:
        """Mean NDCG@10 over the questions (of one category); None when there are none."""
        return self.metric("ndcg@10", category)

    def summary(self) -> dict[str, Any]:
        """The numbers for --json."""
        if self.skipped is not None:
            return {"skipped": self.skipped}
        lat = np.asarray(self.latencies_ms)
        return {
            "questions": len(self.recalls),
            **{m: self.metric(m) for m in METRICS},
            "per_category": {
                str(c): {"name": name, "questions": sum(r[0] == c for r in self.recalls),
                         **{m: self.metric(m, c) for m in METRICS}}
                for c, name in CATEGORIES.items()
            },
            "latency_ms": {"mean": float(lat.mean()) if len(lat) else None,
                           "p95": float(np.percentile(lat, 95)) if len(lat) else None},
            "length_ratio": float(np.mean(self.length_ratios)) if self.length_ratios else None,
        }


def _points(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else (a - b) * 100.0


def deltas(r: StrategyResult, base: StrategyResult | None) -> dict[str, Any] | None:
    """`r` against the baseline in points (100 x the difference of the means), overall and per category,
    and the worst per-category R@10 delta; None when either has no numbers."""
    if base is None or base.skipped is not None or r.skipped is not None or not r.recalls or not base.recalls:
        return None
    per_cat = {str(c): {m: _points(r.metric(m, c), base.metric(m, c)) for m in METRICS} for c in CATEGORIES}
    worst = min(((d["recall@10"], int(c)) for c, d in per_cat.items() if d["recall@10"] is not None),
                default=None)
    return {
        **{m: _points(r.metric(m), base.metric(m)) for m in METRICS},
        "per_category": per_cat,
        "worst_category": None if worst is None else {
            "metric": "recall@10", "category": worst[1], "name": CATEGORIES[worst[1]], "points": worst[0]},
    }


def _holder(ids: Mapping[str, str | Sequence[str]]) -> dict[tuple[str, str], str]:
    """(conversation, dia_id) -> memory id, from memory id "<conversation>/<view id>" -> dia_id(s) held."""
    out: dict[tuple[str, str], str] = {}
    for mid, held in ids.items():
        conv = mid.rpartition("/")[0]
        for d in [held] if isinstance(held, str) else held:
            out[(conv, d)] = mid
    return out


def run_strategy(db: Any, ids: Mapping[str, str | Sequence[str]], questions: Sequence[QuestionLike], strategy: str,
                 query_vectors: np.ndarray | None, words: Mapping[str, int] | None = None,
                 weights: Mapping[str, float] | None = None) -> StrategyResult:
    """Search every question (k = 10) with `strategy` ("default": no strategy argument); each question's
    relevant set is its distinct evidence memories (`ids`: memory id -> the dia_id(s) it holds). Skipped
    with the reason if search refuses the strategy. `words` (memory id -> its words) adds each
    question's length ratio (`StrategyResult.length_ratios`). `weights` is passed to every search
    (an ablation: e.g. {"sessions": 0})."""
    res = StrategyResult(strategy)
    holder = _holder(ids)
    mean_words: dict[str, float] = {}
    if words:
        by_conv: dict[str, list[int]] = {}
        for mid, n in words.items():
            by_conv.setdefault(mid.rpartition("/")[0], []).append(n)
        mean_words = {c: float(np.mean(v)) for c, v in by_conv.items()}
    base, stages = VARIANTS.get(strategy, (strategy, None))
    for qi, q in enumerate(questions):
        kw: dict[str, Any] = {"namespace": q.conversation, "k": max(KS)}
        if base != "default":
            kw["strategy"] = base
        if stages is not None:
            kw["stages"] = stages
        if weights:
            kw["weights"] = dict(weights)
        if query_vectors is not None:
            kw["query_vector"] = query_vectors[qi]
        t0 = time.perf_counter()
        try:
            hits = db.search(q.text, **kw)
        except ValueError as exc:
            return StrategyResult(strategy, skipped=str(exc))
        res.latencies_ms.append((time.perf_counter() - t0) * 1e3)
        got = [h.id for h in hits]
        relevant = evidence_memories(holder, q.conversation, q.evidence)
        res.recalls.append((q.category, *(recall_at(got, relevant, k) for k in KS)))  # type: ignore[arg-type]
        res.ndcgs.append(ndcg_at(got, relevant, 10))
        if words and got and mean_words.get(q.conversation):
            res.length_ratios.append(float(np.mean([words.get(i, 0) for i in got])) / mean_words[q.conversation])
    return res


def run_plain_bm25(view: View, questions: Sequence[QuestionLike]) -> StrategyResult:
    """The plain_bm25 row of a view (skipped with a message when bm25s or PyStemmer is missing)."""
    missing = bm25s_missing()
    if missing is not None:
        return StrategyResult(PLAIN, skipped=missing)
    res = run_strategy(PlainBM25(view), view.ids(), questions, "default", None, view.words())
    res.strategy = PLAIN
    return res
