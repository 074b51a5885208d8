"""Topics and themes on LoCoMo (issue "[5 of 7]"): how long they take, what they find, and whether
the pipeline's topic stage helps.

Each conversation's turns are one namespace, stored as in bench/eval_locomo.py (turns view). Per
conversation and profile:
- `db.topics(ns, refresh=True)` time (one warm-up call is made first, for the
  first-use costs), topics, coverage (the share of memories in a topic);
- session purity: per topic, the share of its members from its most common session, weighted by
  size (a topic that follows the conversation's sessions scores 1; a random one about 1/sessions);
- evidence cohesion: of the questions with two or more distinct evidence turns, the share whose
  evidence turns all sit in one topic, against the share a random partition of the same sizes
  would give;
- `db.topics.themes(ns)`: themes and the silhouette over every clustered memory (seed bar > 0.5);
- the pipeline's R@5 / R@10 over every question with the topic stage off and on (`topics=True`).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/eval_topics.py [--profiles default,minilm] [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import _views
import eval_locomo as ev


def _purity(topics: list[Any], session_of: dict[str, int]) -> float:
    total = sum(len(t.members) for t in topics)
    if not total:
        return 0.0
    best = 0
    for t in topics:
        counts: dict[int, int] = {}
        for m in t.members:
            counts[session_of[m]] = counts.get(session_of[m], 0) + 1
        best += max(counts.values())
    return best / total


def _cohesion(groups: list[list[str]], evidence: list[list[str]], ids: list[str], rng: random.Random) -> tuple[float, float]:
    """Share of evidence sets inside one group, and the same for a random partition of equal sizes."""
    def share(assign: dict[str, int]) -> float:
        hits = [len({assign.get(m, -1 - k) for k, m in enumerate(ev_ids)}) == 1 for ev_ids in evidence]
        return sum(hits) / len(hits) if hits else 0.0

    real = {m: g for g, members in enumerate(groups) for m in members}
    shuffled = ids[:]
    rng.shuffle(shuffled)
    fake: dict[str, int] = {}
    at = 0
    for g, members in enumerate(groups):
        for m in shuffled[at:at + len(members)]:
            fake[m] = g
        at += len(members)
    return share(real), share(fake)


def run(data: Path, profile: str, seed: int) -> dict[str, Any]:
    ds = ev.load_locomo(data)
    view = _views.build_view("turns", ds.turns)
    vectors = ev.minilm_view_vectors(data, view, True) if profile == "minilm" else None
    db, _, _ = ev.build_store(profile, view, vectors=vectors, path=None)
    qvecs = ev.minilm_question_vectors(data, ds) if profile == "minilm" else None
    session_of = {m.id: m.session for m in view.memories}
    rng = random.Random(seed)
    convs = view.conversations()
    db.topics(convs[0])  # first-use costs (imports, caches), outside the timings
    per: dict[str, Any] = {}
    for ns in convs:
        t0 = time.perf_counter()
        topics = db.topics(ns, refresh=True)
        took = time.perf_counter() - t0
        mine = [m.id for m in view.memories if m.conversation == ns]
        ev_sets = [e for q in ds.questions if q.conversation == ns
                   for e in [_views.evidence_memories(view.holder, ns, q.evidence)] if len(e) >= 2]
        real, rand = _cohesion([list(t.members) for t in topics], ev_sets, mine, rng)
        t0 = time.perf_counter()
        themes = db.topics.themes(ns)
        theme_s = time.perf_counter() - t0
        sils = [t.silhouette for t in themes]
        per[ns] = {"memories": len(mine), "topics_ms": round(took * 1e3, 1), "topics": len(topics),
                   "coverage": round(sum(len(t.members) for t in topics) / len(mine), 4),
                   "session_purity": round(_purity(list(topics), session_of), 4),
                   "evidence_sets": len(ev_sets), "evidence_cohesion": round(real, 4),
                   "evidence_cohesion_random": round(rand, 4), "themes": len(themes),
                   "themes_ms": round(theme_s * 1e3, 1),
                   "theme_silhouette_mean": round(float(np.mean(sils)), 4) if sils else None}
    recall: dict[str, Any] = {}
    for on in (False, True):
        r5, r10 = [], []
        for qi, q in enumerate(ds.questions):
            kw: dict[str, Any] = {"namespace": q.conversation, "k": 10, "strategy": "pipeline", "log": False}
            if on:
                kw["topics"] = True
            if qvecs is not None:
                kw["query_vector"] = qvecs[qi]
            got = [h.id for h in db.search(q.text, **kw)]
            rel = _views.evidence_memories(view.holder, q.conversation, q.evidence)
            r5.append(_views.recall_at(got, rel, 5))
            r10.append(_views.recall_at(got, rel, 10))
        recall["on" if on else "off"] = {"recall@5": round(float(np.mean(r5)), 4),
                                         "recall@10": round(float(np.mean(r10)), 4)}
    rows = list(per.values())
    summary = {k: round(float(np.mean([r[k] for r in rows if r[k] is not None])), 4) if any(
        r[k] is not None for r in rows) else None for k in ("topics_ms", "topics", "coverage", "session_purity",
                                                            "evidence_cohesion", "evidence_cohesion_random", "themes",
                                                            "theme_silhouette_mean", "themes_ms")}
    return {"profile": profile, "mean_over_conversations": summary, "pipeline": recall, "conversations": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--profiles", default="default,minilm")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = [run(args.data, p, args.seed) for p in args.profiles.split(",") if p]
    for r in out:
        print(json.dumps({k: v for k, v in r.items() if k != "conversations"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
