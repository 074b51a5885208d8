"""A simulated agent on LoCoMo, for ELO importance and consolidation (issue "[4 of 7]").

The LoCoMo turns are stored as in bench/eval_locomo.py (turns view, default profile). Each of the
10 conversations is one agent's memory (its namespace); each agent works through SESSIONS sessions,
one every SPACING_DAYS simulated days, asking QUESTIONS of its conversation's questions a session
(drawn with replacement, so questions recur over the weeks, as a user's do), each by the default
`search(question, namespace=, k=10)`.
The evidence turns among a search's hits are "used", the rest only shown. Retrieval is the store's
own; the simulated clock drives the access log rows this script writes with simulated times
(through the storage layer's log), the batch ELO update after each session, the decay, and a
consolidation decision for every memory every 7 simulated days (`lifecycle.consolidation.decide`,
promotions kept between runs; archives counted, not applied, so later questions still find them).

Reported (seeded; `--seed`):
- convergence: per agent, the variance of its 20 highest ELOs after each session, and its largest
  relative change over the last 20 sessions (seed 001's bar: < 10%), both of the ELOs decayed to
  the session's time (what a hit shows) and of the ratings as of their last update (what the
  matches learned, before forgetting);
- the share of top-5 hits in the HIGH tier per session (measured, not a target: ranking stays by
  relevance);
- evidence safety: any evidence turn of a question asked in the 30 simulated days before a
  consolidation run that the run would archive (must be none), or compress; the run protects
  what the last 30 days' questions reach 50 deep, as `Store.consolidate` does;
- the last run's shares of promote / archive / compress / keep (the seed reports ~30% / ~20%).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/sim_importance.py [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import _views
import eval_locomo as ev
from engramdb.importance import batch
from engramdb.importance.elo import DAY_US, tier
from engramdb.importance.ratings import Ratings
from engramdb.lifecycle import consolidation as cons
from engramdb.storage.access_log import access_log
from engramdb.store.upkeep_verbs import PROTECT_MIN_SCORE

SESSIONS, QUESTIONS, SPACING_DAYS, TOP = 100, 10, 1.4, 20
CONSOLIDATE_EVERY_DAYS, RECENT_DAYS = 7.0, 30.0
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def us(t: datetime) -> int:
    return int(t.timestamp() * 1_000_000)


def simulate(data: Path, seed: int) -> dict[str, Any]:
    ds = ev.load_locomo(data)
    view = _views.build_view("turns", ds.turns)
    db, ids, _ = ev.build_store("default", view, vectors=None, path=None)
    by_conv: dict[str, list[Any]] = {}
    for q in ds.questions:
        by_conv.setdefault(q.conversation, []).append(q)
    t_start = time.perf_counter()
    agents = {conv: _agent(db, conv, by_conv[conv], view.holder, [m for m in ids if m.startswith(conv + "/")],
                           random.Random(f"{seed}/{conv}")) for conv in sorted(by_conv)}
    changes = [a["variance_change_last20"] for a in agents.values()]
    raws = [a["raw_variance_change_last20"] for a in agents.values()]
    counts: dict[str, int] = {}
    for a in agents.values():
        for k, v in a["runs"][-1]["counts"].items():
            counts[k] = counts.get(k, 0) + v
    n = sum(counts.values()) or 1
    return {
        "agents": len(agents), "sessions": SESSIONS, "questions_per_session": QUESTIONS,
        "spacing_days": SPACING_DAYS, "seed": seed, "memories": len(ids),
        "seconds": round(time.perf_counter() - t_start, 1),
        "variance_change_last20": {"median": round(float(np.median(changes)), 4),
                                   "max": round(float(np.max(changes)), 4),
                                   "agents_under_bar": sum(c < 0.10 for c in changes)},
        "variance_bar": "< 0.10",
        "raw_variance_change_last20": {"median": round(float(np.median(raws)), 4), "max": round(float(np.max(raws)), 4),
                                       "agents_under_bar": sum(c < 0.10 for c in raws)},
        "high_share_top5": {"first10": round(float(np.mean([a["high_first10"] for a in agents.values()])), 4),
                            "last10": round(float(np.mean([a["high_last10"] for a in agents.values()])), 4)},
        "recent_evidence_archived": sum(r["recent_evidence_archived"] for a in agents.values() for r in a["runs"]),
        "recent_evidence_compressed": sum(r["recent_evidence_compressed"] for a in agents.values() for r in a["runs"]),
        "final_shares": {k: round(counts.get(k, 0) / n, 4) for k in ("promote", "archive", "compress", "keep")},
        "agents_detail": agents,
    }


def _agent(db: Any, conv: str, questions: list[Any], holder: Any, ids: list[str], rng: random.Random) -> dict[str, Any]:
    """One agent's SESSIONS sessions over its own conversation (namespace)."""
    log = access_log(None, writable=True, flush_rows=1 << 30)
    ratings = Ratings()
    tiers: dict[str, str] = {}  # promotions kept between runs
    asked: list[tuple[int, str, str, list[str]]] = []  # (time, conversation, text, evidence ids) of each question
    variance, raw_variance, high_share, runs = [], [], [], []
    next_run = CONSOLIDATE_EVERY_DAYS
    for s in range(SESSIONS):
        day = s * SPACING_DAYS
        now = T0 + timedelta(days=day)
        tops = high = 0
        for n in range(QUESTIONS):
            q = rng.choice(questions)
            when = now + timedelta(minutes=3 * n)
            hits = db.search(q.text, namespace=conv, k=10, log=False)
            evidence = _views.evidence_memories(holder, conv, q.evidence)
            asked.append((us(when), conv, q.text, evidence))
            qid = f"s{s}q{n}"
            rows = [{"kind": "search", "query_id": qid, "namespace": conv, "session_id": f"sim{s}", "at": when,
                     "query": q.text, "strategy": "hybrid", "memory_id": h.id, "rank": i + 1, "score": h.score,
                     "used": False} for i, h in enumerate(hits)]
            used = [h.id for h in hits if h.id in set(evidence)] or [None]
            rows += [{"kind": "feedback", "query_id": qid, "namespace": conv, "session_id": f"sim{s}",
                      "at": when + timedelta(seconds=30), "query": None, "strategy": None, "memory_id": m,
                      "rank": None, "score": None, "used": m is not None} for m in used]
            log.append(rows)
            t_us = us(when)
            for h in hits[:5]:
                tops += 1
                high += tier(ratings.elo_now(h.id, t_us)) == "HIGH"
        batch.apply(ratings, log.read())
        now_us = us(now + timedelta(hours=1))
        elos = sorted((r.elo_at(now_us) for r in ratings.by_id.values()), reverse=True)[:TOP]
        variance.append(float(np.var(elos)) if elos else 0.0)
        raw = sorted((r.elo for r in ratings.by_id.values()), reverse=True)[:TOP]  # as of each one's last update
        raw_variance.append(float(np.var(raw)) if raw else 0.0)
        high_share.append(high / tops if tops else 0.0)
        if day + SPACING_DAYS >= next_run or s == SESSIONS - 1:
            # what the store's consolidate protects: the last 30 days' questions, replayed 50 deep
            window = {(c, text) for t, c, text, _ in asked if now_us - t <= RECENT_DAYS * DAY_US}
            reached = {h.id for c, text in window
                       for h in db.search(text, namespace=c, k=50, log=False, min_score=PROTECT_MIN_SCORE)}
            runs.append(_consolidate(ids, ratings, tiers, asked, now_us, us(T0), reached))
            next_run += CONSOLIDATE_EVERY_DAYS
    last = variance[-20:]
    change = (max(last) - min(last)) / float(np.mean(last)) if last and np.mean(last) > 0 else 0.0
    raw_last = raw_variance[-20:]
    raw_change = (max(raw_last) - min(raw_last)) / float(np.mean(raw_last)) if raw_last and np.mean(raw_last) > 0 else 0.0
    return {"variance_change_last20": round(change, 4), "top_variance_last20": [round(v, 1) for v in last],
            "raw_variance_change_last20": round(raw_change, 4),
            "high_first10": float(np.mean(high_share[:10])), "high_last10": float(np.mean(high_share[-10:])),
            "rated": len(ratings), "runs": runs}


def _consolidate(ids: Any, ratings: Ratings, tiers: dict[str, str], asked: list[tuple[int, str, str, list[str]]],
                 now_us: int, learned_us: int, reached: set[str]) -> dict[str, Any]:
    """Every memory's decision at `now_us` (promotions kept; archives counted, not applied)."""
    recent = {m for t, _, _, ev_ids in asked if now_us - t <= RECENT_DAYS * DAY_US for m in ev_ids}
    counts: dict[str, int] = {}
    bad = squeezed = 0
    for mid in ids:
        r = ratings.by_id.get(mid)
        last_access = max(r.last_shown_us, r.last_used_us) if r is not None else 0
        last_used = r.last_used_us if r is not None else 0
        elo = ratings.elo_now(mid, now_us)
        d = cons.decide(cons.Standing(
            mid, mid.split("/")[0], tiers.get(mid, "short_term"), age_days=(now_us - learned_us) / DAY_US,
            days_since_access=(now_us - max(last_access, learned_us)) / DAY_US,
            days_unused=(now_us - max(last_used, learned_us)) / DAY_US,
            accesses=(r.shown + r.used) if r is not None else 0, confidence=1.0, elo=elo, elo_tier=tier(elo),
            compressed=False, protected="a recent question reaches it" if mid in reached else None))
        counts[d.action] = counts.get(d.action, 0) + 1
        if d.action == "promote":
            tiers[mid] = "long_term"
        if d.action == "archive" and mid in recent:
            bad += 1
        if d.action == "compress" and mid in recent:
            squeezed += 1
    n = sum(counts.values()) or 1
    return {"day": round((now_us - learned_us) / DAY_US, 1), "counts": counts,
            "shares": {a: round(counts.get(a, 0) / n, 4) for a in ("promote", "archive", "compress", "keep")},
            "recent_evidence_archived": bad, "recent_evidence_compressed": squeezed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = simulate(args.data, args.seed)
    shown = {k: v for k, v in out.items() if k != "agents_detail"}
    print(json.dumps(shown, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
