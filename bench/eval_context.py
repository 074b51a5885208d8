"""Context assembly on LoCoMo (issue "[6 of 7]"): how much of each question's evidence a context of
500, 1,000 and 2,000 tokens holds, against the same budget filled by truncation.

The turns view (bench/eval_locomo.py), default profile, one namespace per conversation. For each
question with evidence and each budget:
- context: `db.context(question, namespace=, max_tokens=B)` (the navigator on: the default); its
  memory items;
- context without the navigator: the same with `navigate=False`;
- truncation: the default search's 50 best, each as the same line (text and validity badge),
  taken in rank order while they fit the budget (cl100k tokens, one line break each);
- ceiling: the share of the evidence among the search's 50 best at all, what a curator of those
  hits could hold at most (the navigator's hops aside).
Reported: the mean share of the question's evidence turns inside, overall and per category; the
context's p50 / p95 latency (the query's embedding included: hashing, well under 1 ms); what the
navigator did (hops a question, hops kept, hops that are evidence) and the duals after each
budget's questions (one store for all budgets: its duals carry on).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/eval_context.py [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
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
METHODS = ("context", "context_no_navigator", "truncation", "ceiling")


def truncation(hits: Any, budget: int, count: Any) -> set[str]:
    """The search's hits in rank order, each as its line with its badge, while they fit."""
    used, out = 0, set()
    for h in hits:
        n = count(sec.line(h.memory, h.memory.content, None)) + 1
        if used + n > budget:
            break
        used += n
        out.add(h.id)
    return out


def _shares(vals: list[tuple[int, float]]) -> dict[str, float]:
    return {"all": round(float(np.mean([v for _, v in vals])), 4),
            **{name: round(float(np.mean([v for c, v in vals if c == cat])), 4)
               for cat, name in _views.CATEGORIES.items()}}


def run(data: Path, budgets: tuple[int, ...] = BUDGETS) -> dict[str, Any]:
    ds = ev.load_locomo(data)
    view = _views.build_view("turns", ds.turns)
    db, _, _ = ev.build_store("default", view, vectors=None, path=None)
    count, name = counter(None)
    for ns in view.conversations():
        db.topics(ns)  # computed once per conversation, outside the timings (as an agent's store would have)
    out: dict[str, Any] = {"tokenizer": name, "questions": len(ds.questions), "budgets": {}}
    for budget in budgets:
        shares: dict[str, list[tuple[int, float]]] = {m: [] for m in METHODS}
        lat: list[float] = []
        hops = kept = kept_evidence = 0
        for q in ds.questions:
            rel = set(_views.evidence_memories(view.holder, q.conversation, q.evidence))
            t0 = time.perf_counter()
            ctx = db.context(q.text, namespace=q.conversation, max_tokens=budget, log=False)
            lat.append((time.perf_counter() - t0) * 1e3)
            got = {i.id for i in ctx.items if i.id is not None}
            shares["context"].append((q.category, len(rel & got) / len(rel)))
            hops += ctx.stats["stages"].get("navigator", {}).get("hops", 0)
            found = {i.id for i in ctx.items if i.why.startswith("navigator")}
            kept += len(found)
            kept_evidence += len(found & rel)
            plain = db.context(q.text, namespace=q.conversation, max_tokens=budget, log=False, navigate=False)
            shares["context_no_navigator"].append(
                (q.category, len(rel & {i.id for i in plain.items if i.id is not None}) / len(rel)))
            hits = db.search(q.text, namespace=q.conversation, k=50, log=False)
            shares["truncation"].append((q.category, len(rel & truncation(hits, budget, count)) / len(rel)))
            shares["ceiling"].append((q.category, len(rel & {h.id for h in hits}) / len(rel)))
        row: dict[str, Any] = {m: _shares(v) for m, v in shares.items()}
        row["context_ms"] = {"p50": round(float(np.percentile(lat, 50)), 2),
                             "p95": round(float(np.percentile(lat, 95)), 2)}
        row["gain_points"] = round(100 * (row["context"]["all"] - row["truncation"]["all"]), 1)
        row["gain_points_no_navigator"] = round(100 * (row["context_no_navigator"]["all"] - row["truncation"]["all"]), 1)
        row["navigator"] = {"hops_per_question": round(hops / len(ds.questions), 2),
                            "kept_per_question": round(kept / len(ds.questions), 2),
                            "kept_that_are_evidence": kept_evidence}
        row["duals_after"] = ctx.stats["duals"]
        out["budgets"][str(budget)] = row
        print(budget, json.dumps(row), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = run(args.data, tuple(args.budgets))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
