"""A namespace whose subject drifts over 12 weeks, and what its topics say (issue "[5 of 7]").

Weeks 1-4: garden notes. Weeks 5-8: a new job. Weeks 9-12: the job and a trip abroad, while the
user forgets a third of the remaining garden notes each week. Each week adds 25 notes made from
templates (seeded), then asks `db.topics(ns)` as an agent would: incremental when the week
changed at most a fifth of the namespace, re-clustered otherwise. Reported per week: topics,
phases, churn, entropy, the labels of emerging and declining topics.

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/sim_topic_drift.py [--profile default] [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import engramdb

SUBJECTS = {
    "garden": (["tomatoes", "compost", "seedlings", "the raised bed", "slugs", "basil", "the greenhouse"],
               ["planted {x} this morning", "{x} need watering again", "moved {x} to the sunny corner",
                "bought organic {x} at the market", "{x} are doing well after the rain"]),
    "job": (["the onboarding", "my new manager", "the sprint review", "the payroll system", "the team offsite",
             "the on-call rota"], ["first week at the new job: {x}", "{x} at work went fine",
                                   "asked about {x} in the standup", "{x} is confusing at the new company",
                                   "prepared slides for {x}"]),
    "trip": (["the flight to Lisbon", "the hotel booking", "travel insurance", "the museum tickets", "my passport"],
             ["sorted out {x} for the trip", "{x} for Portugal is confirmed", "worried about {x} before the trip",
              "checked {x} twice", "paid for {x} abroad"]),
}
PLAN = {w: ["garden"] if w <= 4 else ["job"] if w <= 8 else ["job", "trip"] for w in range(1, 13)}


def simulate(profile: str, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    db = engramdb.open(None, profile=profile)
    weeks = []
    n = 0
    for week in range(1, 13):
        rows = []
        for _ in range(25):
            subject = rng.choice(PLAN[week])
            words, templates = SUBJECTS[subject]
            rows.append({"id": f"{subject}-{n}", "content": rng.choice(templates).format(x=rng.choice(words)),
                         "namespace": "me"})
            n += 1
        db.add_many(rows)
        forgotten = 0
        if week >= 9:  # the garden fades: a third of what is left goes each week
            garden = [h.id for h in db.search("garden tomatoes compost seedlings basil", namespace="me", k=1000,
                                              log=False) if h.id.startswith("garden")]
            for mid in garden[: len(garden) // 3]:
                db.forget(mid)
                forgotten += 1
        topics = db.topics("me")
        phases: dict[str, int] = {}
        for t in topics:
            phases[t.phase] = phases.get(t.phase, 0) + 1
        weeks.append({"week": week, "subjects": PLAN[week], "memories": len(db), "forgotten": forgotten,
                      "topics": len(topics), "phases": phases, "churn": topics.churn, "entropy": topics.entropy,
                      "consolidation_due": topics.consolidation_due,
                      "emerging": [t.label for t in topics if t.phase == "emerging"][:4],
                      "declining": [t.label for t in topics if t.phase == "declining"][:4]})
    return weeks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    weeks = simulate(args.profile, args.seed)
    for w in weeks:
        print(json.dumps(w))
    if args.json:
        args.json.write_text(json.dumps(weeks, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
