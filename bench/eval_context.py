"""Context assembly on LoCoMo (issue "[6 of 7]"): how much of each question's evidence a context of
500, 1,000 and 2,000 tokens holds, against the same budget filled by truncation.

The turns view (bench/eval_locomo.py), default profile, one namespace per conversation. For each
question with evidence and each budget:
- context: `db.context(question, namespace=, max_tokens=B)`; its memory items;
- truncation: the default search's 50 best, each as the same line (text and validity badge),
  taken in rank order while they fit the budget (cl100k tokens, one line break each).
Reported: the mean share of the question's evidence turns inside, overall and per category, and
the context's p50 / p95 latency (the query's embedding included: hashing, well under 1 ms).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/eval_context.py [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import _views
import eval_locomo as ev
from engramdb.context import sections as sec
from engramdb.context.tokens import counter

BUDGETS = (500, 1000, 2000)


def truncation(db: Any, question: str, namespace: str, budget: int, count: Any) -> set[str]:
    hits = db.search(question, namespace=namespace, k=50, log=False)
    used, out = 0, set()
    for h in hits:
        n = count(sec.line(h.memory, h.memory.content, None)) + 1
        if used + n > budget:
            break
        used += n
        out.add(h.id)
    return out


def run(data: Path) -> dict[str, Any]:
    ds = ev.load_locomo(data)
    view = _views.build_view("turns", ds.turns)
    db, _, _ = ev.build_store("default", view, vectors=None, path=None)
    count, name = counter(None)
    for ns in view.conversations():
        db.topics(ns)  # computed once per conversation, outside the timings (as an agent's store would have)
    out: dict[str, Any] = {"tokenizer": name, "budgets": {}}
    for budget in BUDGETS:
        shares: dict[str, list[tuple[int, float]]] = {"context": [], "truncation": []}
        lat = []
        for q in ds.questions:
            rel = set(_views.evidence_memories(view.holder, q.conversation, q.evidence))
            t0 = time.perf_counter()
            ctx = db.context(q.text, namespace=q.conversation, max_tokens=budget, log=False)
            lat.append((time.perf_counter() - t0) * 1e3)
            got = {i.id for i in ctx.items if i.id is not None}
            shares["context"].append((q.category, len(rel & got) / len(rel)))
            trunc = truncation(db, q.text, q.conversation, budget, count)
            shares["truncation"].append((q.category, len(rel & trunc) / len(rel)))
        row: dict[str, Any] = {}
        for method, vals in shares.items():
            row[method] = {"all": round(float(np.mean([v for _, v in vals])), 4),
                           **{name: round(float(np.mean([v for c, v in vals if c == cat])), 4)
                              for cat, name in _views.CATEGORIES.items()}}
        row["context_ms"] = {"p50": round(float(np.percentile(lat, 50)), 2), "p95": round(float(np.percentile(lat, 95)), 2)}
        row["gain_points"] = round(100 * (row["context"]["all"] - row["truncation"]["all"]), 1)
        out["budgets"][str(budget)] = row
        print(budget, json.dumps(row), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if ev._editable_engramdb() and os.environ.get("ENGRAMDB_BENCH_ALLOW_EDITABLE") != "1":
        print("engramdb is an editable install: set ENGRAMDB_BENCH_ALLOW_EDITABLE=1 to measure it", file=sys.stderr)
        return 2
    out = run(args.data)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
