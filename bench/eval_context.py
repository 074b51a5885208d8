"""Context assembly on LoCoMo raw turns (issue 26, "[3 of 7]"): how much of each question's evidence a
context of 500, 1,000 and 2,000 tokens holds, and in how many tokens, against the same budget filled
by truncation.

The store holds each dialogue turn as a user of engramdb would store it: content the turn's text
(no "[date] speaker:" prefix), role the speaker, session_id "session_<n>", seq its position in the
session, valid_from the session's date (bench/_views.py's turns view, `prefix=False`); default
profile, one namespace per conversation, dedup off (a repeated "Thanks!" is an event). Each
conversation's topics are computed once before the questions (as an agent's store has them: the
request path never clusters). For each question with evidence and each budget B:
- context: `db.context(question, namespace=, max_tokens=B, log=False)`, its memory items;
- truncation: the default search's hits (k = 50) in rank order, each one line as a person would
  paste it with the same facts the context gives (who said it and when: "- Caroline: <text>
  (2023-05-08)"), while the lines fit B (cl100k tokens, the text counted whole);
- truncation, text only: the same with the bare text on each line ("- <text>"), the cheapest
  lines a paste could have (it leaves out who spoke and when);
- ceiling: the share of the evidence among the search's 50 hits at all.
Reported, overall and per category: evidence held (the mean share of a question's evidence turns
inside), the tokens the text takes (mean), and evidence per 1,000 tokens (evidence held summed over
the questions, over their tokens summed, x 1,000: how much evidence a token of the block carries);
`tokens_per_evidence`: the tokens summed over the evidence turns held summed (the block holds the
evidence in fewer tokens when this is lower). Also the context's p50 / p95 latency and what the
navigator kept. `--ablations` adds the context without the navigator.

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/eval_context.py [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import _views
import eval_locomo as ev
from engramdb.context.tokens import counter

BUDGETS = (500, 1000, 2000)
K = 50  # the search's hits truncation cuts (the context's own candidates are its business)


def paste_line(m: Any) -> str:
    """A hit as one pasted line with who said it and when: "- Caroline: <text> (2023-05-08)"."""
    who = f"{m.role}: " if m.role else ""
    when = f" ({m.valid_from.date().isoformat()})" if m.valid_from is not None else ""
    return f"- {who}{' '.join(m.content.split())}{when}"


def text_line(m: Any) -> str:
    """A hit as its bare text on one line."""
    return f"- {' '.join(m.content.split())}"


def truncation(hits: Iterable[Any], budget: int, count: Callable[[str], int],
               line: Callable[[Any], str]) -> tuple[set[str], int]:
    """The hits in rank order, each as `line`, while the block (counted whole) fits: (ids, tokens)."""
    lines: list[str] = []
    ids: set[str] = set()
    used = 0
    for h in hits:
        text = "\n".join([*lines, line(h.memory)])
        n = count(text)
        if n > budget:
            break
        lines.append(line(h.memory))
        ids.add(h.id)
        used = n
    return ids, used


class Tally:
    """Per question: (category, evidence share held, evidence turns held, tokens)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, float, int, int]] = []

    def add(self, category: int, rel: set[str], got: set[str], tokens: int) -> None:
        held = len(rel & got)
        self.rows.append((category, held / len(rel), held, tokens))

    def _summary(self, rows: list[tuple[int, float, int, int]]) -> dict[str, Any]:
        if not rows:
            return {}
        share = sum(r[1] for r in rows)
        held = sum(r[2] for r in rows)
        tokens = sum(r[3] for r in rows)
        return {"questions": len(rows), "evidence_held": round(share / len(rows), 4),
                "tokens": round(tokens / len(rows), 1),
                "evidence_per_1k_tokens": round(1000 * share / tokens, 4) if tokens else None,
                "tokens_per_evidence": round(tokens / held, 1) if held else None}

    def summary(self) -> dict[str, Any]:
        return {"all": self._summary(self.rows),
                **{name: self._summary([r for r in self.rows if r[0] == cat])
                   for cat, name in _views.CATEGORIES.items()}}


def build(data: Path, limit: int | None = None) -> tuple[Any, Any, Any]:
    """The dataset, the raw turns view and the store (topics computed once per conversation)."""
    ds = ev.load_locomo(data, limit)
    view = _views.build_view("turns", ds.turns, prefix=False)
    db, _, _ = ev.build_store("default", view, seq="given", vectors=None, path=None)
    for ns in view.conversations():
        db.topics(ns)
    return ds, view, db


def run(data: Path, budgets: tuple[int, ...] = BUDGETS, *, limit: int | None = None,
        ablations: bool = False) -> dict[str, Any]:
    ds, view, db = build(data, limit)
    count, name = counter(None)
    methods = ["context", *(["context_no_navigator"] if ablations else []), "truncation", "truncation_text"]
    out: dict[str, Any] = {"tokenizer": name, "questions": len(ds.questions), "budgets": {}}
    hits_of = {}
    for q in ds.questions:
        hits_of[(q.conversation, q.index)] = db.search(q.text, namespace=q.conversation, k=K, log=False)
    for budget in budgets:
        tallies = {m: Tally() for m in methods}
        ceiling = Tally()
        lat: list[float] = []
        kept = kept_evidence = 0
        for q in ds.questions:
            rel = set(_views.evidence_memories(view.holder, q.conversation, q.evidence))
            t0 = time.perf_counter()
            ctx = db.context(q.text, namespace=q.conversation, max_tokens=budget, log=False)
            lat.append((time.perf_counter() - t0) * 1e3)
            got = {i.id for i in ctx.items if i.id is not None}
            tallies["context"].add(q.category, rel, got, count(ctx.text))
            found = {i.id for i in ctx.items if i.why.startswith("navigator")}
            kept += len(found)
            kept_evidence += len(found & rel)
            if ablations:
                plain = db.context(q.text, namespace=q.conversation, max_tokens=budget, log=False, navigate=False)
                tallies["context_no_navigator"].add(q.category, rel, {i.id for i in plain.items if i.id is not None},
                                                    count(plain.text))
            hits = hits_of[(q.conversation, q.index)]
            for method, line in (("truncation", paste_line), ("truncation_text", text_line)):
                ids, used = truncation(hits, budget, count, line)
                tallies[method].add(q.category, rel, ids, used)
            ceiling.add(q.category, rel, {h.id for h in hits}, 0)
        row: dict[str, Any] = {m: t.summary() for m, t in tallies.items()}
        row["ceiling"] = {c: s.get("evidence_held") for c, s in ceiling.summary().items()}
        row["context_ms"] = {"p50": round(float(np.percentile(lat, 50)), 2),
                             "p95": round(float(np.percentile(lat, 95)), 2)}
        row["gain_points"] = {c: round(100 * (row["context"][c]["evidence_held"] - row["truncation"][c]["evidence_held"]), 1)
                              for c in row["context"] if row["context"][c]}
        row["navigator"] = {"kept_per_question": round(kept / len(ds.questions), 2),
                            "kept_that_are_evidence": kept_evidence}
        out["budgets"][str(budget)] = row
        print(budget, json.dumps({"context": row["context"]["all"], "truncation": row["truncation"]["all"],
                                  "truncation_text": row["truncation_text"]["all"], "ceiling": row["ceiling"]["all"],
                                  "gain_points": row["gain_points"], "ms": row["context_ms"]}), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument("--limit-conversations", type=int, default=None)
    ap.add_argument("--ablations", action="store_true", help="also the context without the navigator")
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = run(args.data, tuple(args.budgets), limit=args.limit_conversations, ablations=args.ablations)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
