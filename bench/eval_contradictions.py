"""Contradiction detection quality: precision, recall and F1 of `db.lifecycle.resolve_contradictions`.

bench/data/contradictions.jsonl holds hand-written pairs of memories, an earlier "old" and a later "new",
written for this bench. Each row has a `category`: update, negation, number and date (the new memory
contradicts the old one) or paraphrase, compatible, subject (the same shape said of another subject) and
refinement (the same value said more precisely), which do not; the row's `contradicts` is the label. Its
`set` is "long" (the first 274 pairs, sentences as notes and chats hold them) or "short" (issue 29: short
facts of the kinds agents store: profile facts, preferences, plans); its `split` is "dev" (rules may be
tuned on it) or "test" (held out: every third pair of each set and category, fixed before any tuning).

All pairs go into one in-memory store, each in its own namespace (the pair id): the old memory as
"<id>-old" (valid_from 2024-01-01 UTC), the new one as "<id>-new" (valid_from 2024-06-01 UTC), both with
the row's memory_type. Then `db.lifecycle.resolve_contradictions(namespace=<id>, dry_run=True)` runs once
per pair, and the pair is flagged when a proposal has old == "<id>-old" and new == "<id>-new" (at
threshold t: and that proposal's score >= t). A proposal the other way round is not a hit; it is counted
and reported as "reversed".

Reported at any score and at scores >= 0.5, 0.6, 0.7, 0.8: overall precision, recall and F1, and per
category the number of pairs and the share flagged (recall for the contradicting categories, marked R;
false-positive rate for the others, marked FPR); then the same at any score per split and set. `--json
PATH` writes the same numbers and every pair's score.

    python bench/eval_contradictions.py
    python bench/eval_contradictions.py --profile minilm --json /tmp/contradictions.json

`--cost N` times instead `resolve_contradictions` over one namespace of N memories: the LoCoMo turns
(../shared/data/locomo10.json, read in place) and short facts drawn from templates (names, places,
employers, numbers, days: many share a subject and a relation), half and half, then reports the median of
3 runs and the number of proposals.

    python bench/eval_contradictions.py --cost 10000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import engramdb

CATEGORIES = ("update", "negation", "number", "date", "paraphrase", "compatible", "subject", "refinement")
SPLITS = ("dev", "test")
SETS = ("long", "short")
THRESHOLDS: tuple[float | None, ...] = (None, 0.5, 0.6, 0.7, 0.8)  # None: any proposal counts
FIELDS = ("id", "category", "memory_type", "old", "new", "contradicts")
OLD_AT = datetime(2024, 1, 1, tzinfo=timezone.utc)
NEW_AT = datetime(2024, 6, 1, tzinfo=timezone.utc)


def load(path: Path) -> list[dict[str, Any]]:
    """The labelled pairs, checked: every field present, a known category, unique ids."""
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [f for f in FIELDS if f not in row]
        if missing or row["category"] not in CATEGORIES or not isinstance(row["contradicts"], bool) \
                or row.get("split", "dev") not in SPLITS or row.get("set", "long") not in SETS:
            raise SystemExit(f"{path}:{n}: bad row (missing {missing}, category {row.get('category')!r}, "
                             f"split {row.get('split')!r}, set {row.get('set')!r})")
        row.setdefault("split", "dev")
        row.setdefault("set", "long")
        rows.append(row)
    if len({r["id"] for r in rows}) != len(rows):
        raise SystemExit(f"{path}: duplicate ids")
    return rows


def detect(rows: list[dict[str, Any]], profile: str) -> tuple[dict[str, float | None], int, float]:
    """Per pair id the best score of an old -> new proposal (None: none), reversed proposals, seconds."""
    records: list[dict[str, Any]] = []
    for r in rows:
        for side, at in (("old", OLD_AT), ("new", NEW_AT)):
            records.append({"id": f"{r['id']}-{side}", "content": r[side], "namespace": r["id"],
                            "memory_type": r["memory_type"], "valid_from": at})
    scores: dict[str, float | None] = {}
    reversed_ = 0
    with engramdb.open(None, profile=profile) as db:
        db.add_many(records)
        start = time.perf_counter()
        for r in rows:
            old, new = f"{r['id']}-old", f"{r['id']}-new"
            best: float | None = None
            for p in db.lifecycle.resolve_contradictions(namespace=r["id"], dry_run=True):
                if p.old == old and p.new == new:
                    best = float(p.score) if best is None else max(best, float(p.score))
                elif p.old == new and p.new == old:
                    reversed_ += 1
            scores[r["id"]] = best
        seconds = time.perf_counter() - start
    return scores, reversed_, seconds


def measure(rows: list[dict[str, Any]], scores: dict[str, float | None], t: float | None) -> dict[str, Any]:
    """Confusion counts, precision, recall, F1 and per-category flagged shares at threshold t."""
    tp = fp = fn = 0
    per: dict[str, list[int]] = {c: [0, 0] for c in CATEGORIES}
    for r in rows:
        s = scores[r["id"]]
        hit = s is not None and (t is None or s >= t)
        per[r["category"]][0] += 1
        per[r["category"]][1] += hit
        tp += hit and r["contradicts"]
        fp += hit and not r["contradicts"]
        fn += not hit and r["contradicts"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"threshold": t, "tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1,
            "categories": {c: {"n": n, "flagged": k, "share": k / n if n else 0.0}
                           for c, (n, k) in per.items() if n}}


def table(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """Categories and overall scores as rows, thresholds as columns."""
    heads = ["any" if r["threshold"] is None else f">={r['threshold']:.1f}" for r in results]
    lines = [f"{'':18}{'n':>5}" + "".join(f"{h:>8}" for h in heads)]
    for c in results[0]["categories"]:
        positive = any(r["contradicts"] for r in rows if r["category"] == c)
        label = f"{c} ({'R' if positive else 'FPR'})"
        n = results[0]["categories"][c]["n"]
        lines.append(f"{label:18}{n:>5}" + "".join(f"{r['categories'][c]['share']:>8.3f}" for r in results))
    lines.append("-" * len(lines[0]))
    for key in ("precision", "recall", "f1"):
        lines.append(f"{key:18}{len(rows):>5}" + "".join(f"{r[key]:>8.3f}" for r in results))
    for key in ("tp", "fp", "fn"):
        lines.append(f"{key:23}" + "".join(f"{r[key]:>8}" for r in results))
    return "\n".join(lines)


GROUPS = (("all", None, None), ("dev", "dev", None), ("test", "test", None), ("long", None, "long"),
          ("long dev", "dev", "long"), ("long test", "test", "long"), ("short", None, "short"),
          ("short dev", "dev", "short"), ("short test", "test", "short"))


def by_group(rows: list[dict[str, Any]], scores: dict[str, float | None], t: float | None) -> dict[str, Any]:
    """`measure` at threshold t on each split and set (GROUPS: all, each split, each set, each set's splits)."""
    return {name: measure([r for r in rows if split in (None, r["split"]) and part in (None, r["set"])], scores, t)
            for name, split, part in GROUPS}


def group_table(rows: list[dict[str, Any]], groups: dict[str, Any]) -> str:
    """Categories and overall scores as rows, splits and sets as columns (one threshold)."""
    names = [g for g in groups if groups[g]["categories"]]
    lines = [f"{'':18}" + "".join(f"{g:>11}" for g in names)]
    for c in CATEGORIES:
        if not any(c in groups[g]["categories"] for g in names):
            continue
        positive = any(r["contradicts"] for r in rows if r["category"] == c)
        cells = []
        for g in names:
            got = groups[g]["categories"].get(c)
            cells.append(f"{got['share']:>6.3f} {got['n']:>3}" if got else f"{'-':>10}")
        lines.append(f"{c + (' (R)' if positive else ' (FPR)'):18}" + "".join(f" {x:>10}" for x in cells))
    lines.append("-" * len(lines[0]))
    for key in ("precision", "recall", "f1"):
        lines.append(f"{key:18}" + "".join(f"{groups[g][key]:>11.3f}" for g in names))
    for key in ("tp", "fp", "fn"):
        lines.append(f"{key:18}" + "".join(f"{groups[g][key]:>11}" for g in names))
    return "\n".join(lines)


def _split(text: str, sep: str = " ") -> list[str]:
    return text.split(sep)


_NAMES = _split("Maya Tom Sam Priya Leo Nina Ben Kai Zoe Dana Omar Lily Jake Ana Raj Emma Hugo Ines Yusuf Chloe Felix "
                "Greta Ivan Julia Kofi Lena Marco Nadia Oscar Paula Quinn Rosa Sofia Theo Uma Victor Wen Xavi Yara Zane") \
    + _split("my sister,my brother,my manager,the user,our landlord,my mum,my dad,the team lead,our neighbour,the client",
             ",")
_PLACES = _split("Berlin Munich Paris Lyon Leeds York Oslo Lisbon Madrid Porto Dublin Austin Denver Toronto Seoul")
_EMPLOYERS = _split("Google Spotify Stripe Acme Siemens Deloitte KPMG Shopify Barclays Initech Monzo Airbus")
_LIKES = _split("cats dogs jazz sushi tea coffee hiking chess tennis olives podcasts opera")
_DAYS = _split("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_FACTS = ("{n} lives in {p}.", "{n} works at {e}.", "{n} likes {l}.", "{n} doesn't like {l}.", "{n} is {k} years old.",
          "{n} has {k} books on the shelf.", "{n} moved to {p}.", "The meeting with {n} is on {d}.",
          "{n}'s favourite food is {l}.", "{n} is married to {m}.", "{n}'s flight to {p} is on {d}.")


def cost_texts(n: int, seed: int = 0) -> list[str]:
    """n memories for the cost run: LoCoMo turns (when the file is here) and template facts, half and half."""
    rng = random.Random(seed)
    turns: list[str] = []
    try:
        from _corpus import locomo_turns  # bench/_corpus.py

        turns = [str(t["text"]) for t in locomo_turns()][: n // 2]
    except (ImportError, OSError):
        pass
    facts = [rng.choice(_FACTS).format(n=rng.choice(_NAMES), p=rng.choice(_PLACES), e=rng.choice(_EMPLOYERS),
                                       l=rng.choice(_LIKES), k=rng.randint(2, 90), d=rng.choice(_DAYS),
                                       m=rng.choice(_NAMES[:40])) for _ in range(n - len(turns))]
    texts = turns + facts
    rng.shuffle(texts)
    return [t[0].upper() + t[1:] for t in texts]


def cost(n: int, profile: str) -> None:
    """Time resolve_contradictions (dry run) over one namespace of n memories; print the median of 3."""
    texts = cost_texts(n)
    with engramdb.open(None, profile=profile) as db:
        db.add_many([{"content": t, "namespace": "cost"} for t in texts])
        times, found = [], 0
        for _ in range(3):
            start = time.perf_counter()
            found = len(db.lifecycle.resolve_contradictions(namespace="cost", dry_run=True))
            times.append(time.perf_counter() - start)
    print(f"resolve_contradictions over {n} memories, profile {profile!r}: median {statistics.median(times):.2f}s "
          f"(runs {', '.join(f'{t:.2f}' for t in times)}), {found} proposals")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data" / "contradictions.jsonl",
                    help="labelled pairs (default bench/data/contradictions.jsonl)")
    ap.add_argument("--profile", default="default", help="engramdb.open profile (default: default)")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the numbers here")
    ap.add_argument("--at", type=float, default=None, metavar="T",
                    help="the per split and set table at scores >= T (default: any score)")
    ap.add_argument("--cost", type=int, default=None, metavar="N",
                    help="time resolve_contradictions over one namespace of N memories instead")
    args = ap.parse_args(argv)
    if args.cost is not None:
        cost(args.cost, args.profile)
        return

    rows = load(args.data)
    scores, reversed_, seconds = detect(rows, args.profile)
    results = [measure(rows, scores, t) for t in THRESHOLDS]
    positives = sum(r["contradicts"] for r in rows)
    print(f"{len(rows)} pairs ({positives} contradicting) from {args.data}, profile {args.profile!r}; "
          f"resolve_contradictions {seconds:.2f}s in all, {reversed_} reversed proposals\n")
    print(table(rows, results))
    groups = by_group(rows, scores, args.at)
    print(f"\nper split and set, {'any score' if args.at is None else f'scores >= {args.at}'} "
          f"(share flagged, then pairs):\n")
    print(group_table(rows, groups))
    if args.json is not None:
        out = {"data": str(args.data), "profile": args.profile, "pairs": len(rows), "positives": positives,
               "reversed": reversed_, "seconds": seconds, "results": results, "at": args.at, "groups": groups,
               "scores": scores}
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
