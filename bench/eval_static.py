"""The static embedding distilled from MiniLM (issue 28) on the long-history view, and what embedding costs.

bench/longdev.py's view (LoCoMo conversations among distractor sessions, long assistant turns,
first-person questions), built the same way, and for each profile one store through the public API
(`engramdb.open(profile=...)`, one `add_many` per namespace), searched twice per question: the
default call (`search(question, namespace=..., k=10)`, `now=` the question date as longdev passes it)
and `strategy="dense_only"` (the dense space alone). Per category R@5 / R@10 against plain BM25
(bench/_views.py's bm25s + PyStemmer), ingest memories/s, search p50 / p95 ms.

Profiles: "default", "minilm" (its embedder built with one onnxruntime thread and handed over with
`embedders=`, as a user on a shared machine would) and any number of ``static[:label]=<folder>``
entries (the "static" profile with ``ENGRAMDB_STATIC_EMBEDDING`` pointing at a folder made by
bench/distill_static.py). `--embed-rate` also times each embedder alone (texts/s) on the view's
memories and on LoCoMo's turns::

    ENGRAMDB_BENCH_ALLOW_EDITABLE=1 OMP_NUM_THREADS=1 python bench/eval_static.py --limit-conversations 3 \\
        --assistant-group 4 --profiles default,minilm,static=~/.cache/engramdb/static-minilm-l6-v2-256 --embed-rate
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import _corpus
import _views
import eval_locomo as ev
import longdev as ld
import numpy as np


class _Strategy:
    """A searcher that passes one strategy to every search (longdev.score calls .search(text, **kw))."""

    def __init__(self, db: Any, strategy: str):
        self.db, self.strategy = db, strategy

    def search(self, text: str, **kw: Any) -> Any:  # takes now= only if the store's search does
        return self.db.search(text, strategy=self.strategy, **kw)


def _open(spec: str) -> tuple[str, Any]:
    import engramdb

    if spec == "minilm":
        from engramdb.spaces.hdc import DEFAULT_SEED, BinaryHDCEmbedder
        from engramdb.spaces.minilm import MiniLMEmbedder
        from engramdb.spaces.profiles import embedders_for, profile_schema

        m = MiniLMEmbedder(threads=1)  # the profile's own would take a thread per core
        embs = {k: e for k, e in embedders_for(profile_schema("minilm")).items() if k not in ("dense", "hdc")}
        embs.update(dense=m, hdc=BinaryHDCEmbedder(m, 1024, DEFAULT_SEED))
        return "minilm", engramdb.open(profile="minilm", embedders=embs)
    if spec.startswith("static"):
        head, _, folder = spec.partition("=")
        label = head.replace(":", "-") if ":" in head else "static"
        if folder:
            os.environ["ENGRAMDB_STATIC_EMBEDDING"] = str(Path(folder).expanduser())
        return label, engramdb.open(profile="static")
    return spec, engramdb.open(profile=spec)


def run(lv: ld.LongView, spec: str, strategies: list[str]) -> list[ld.Run]:
    label, db = _open(spec)
    try:
        base = ld.Run(label, memories=len(lv.view.memories))
        ids: dict[str, str] = {}
        for ns, hay in lv.haystacks.items():
            records = [{"content": m.content, "namespace": ns, "role": m.role, "session_id": f"s{m.session:02d}",
                        "valid_from": m.when} for m in hay.memories]
            t0 = time.perf_counter()
            added = db.add_many(records)
            base.ingest_seconds += time.perf_counter() - t0
            ids.update({sid: m.id for sid, m in zip(added, hay.memories)})
        out = []
        for s in strategies:
            r = ld.Run(f"{label}/{s}", memories=base.memories, ingest_seconds=base.ingest_seconds)
            out.append(ld.score(r, db if s == "default" else _Strategy(db, s), lv, ids, True))
        return out
    finally:
        db.close()


def embed_rates(texts_by_set: dict[str, list[str]], specs: list[str], minilm_cap: int) -> dict[str, dict[str, float]]:
    """texts/s of each dense embedder alone (one call over the whole set; MiniLM on the first
    `minilm_cap` texts: it is ~1000x slower)."""
    from engramdb.spaces.hashing import HashingEmbedder
    from engramdb.spaces.minilm import MiniLMEmbedder
    from engramdb.spaces.static_embedding import StaticEmbedder

    embs: dict[str, Any] = {"hashing-384 (default)": HashingEmbedder(384, version=2)}
    for spec in specs:
        if spec == "minilm":
            embs["minilm (1 thread)"] = MiniLMEmbedder(threads=1)
        elif spec.startswith("static"):
            head, _, folder = spec.partition("=")
            embs[head] = StaticEmbedder(Path(folder).expanduser() if folder else None)
    out: dict[str, dict[str, float]] = {}
    for name, e in embs.items():
        out[name] = {}
        for set_name, texts in texts_by_set.items():
            if name.startswith("minilm"):
                texts = texts[:minilm_cap]
            e.embed(texts[:50])  # warm caches / sessions
            t0 = time.perf_counter()
            e.embed(texts)
            out[name][set_name] = len(texts) / (time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--profiles", default="default,minilm,static",
                    help="comma separated: default, minilm, static[:label][=folder]")
    ap.add_argument("--strategies", default="default,dense_only")
    ap.add_argument("--limit-conversations", type=int, default=3)
    ap.add_argument("--assistant-group", type=int, default=4)
    ap.add_argument("--embed-rate", action="store_true", help="also time each embedder alone")
    ap.add_argument("--minilm-cap", type=int, default=400)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    ds = ev.load_locomo(args.data)
    convs = list(dict.fromkeys(t.conversation for t in ds.turns))[: args.limit_conversations]
    docs = ld.doc_sections(ld.read_docs(ld.DOCS_REV))
    lv = ld.build(ds.turns, ds.questions, convs, docs, ld.SESSIONS, ld.SEED, args.assistant_group, True)
    print(ld.describe(lv))
    specs = [p.strip() for p in args.profiles.split(",") if p.strip()]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    plain = ld.run_plain(lv)
    print(ld.cost(plain))
    numbers: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, _views.PLAIN: plain.summary()}
    for spec in specs:
        for r in run(lv, spec, strategies):
            print(f"\n{r.name} vs plain BM25 (R@5 / R@10):")
            print(ld.table(plain, r))
            print(ld.cost(r), flush=True)
            numbers[r.name] = r.summary()
    if args.embed_rate:
        sets = {"longdev memories": [m.content for m in lv.view.memories],
                "LoCoMo turns": [t.text for t in ds.turns]}
        rates = embed_rates(sets, specs, args.minilm_cap)
        numbers["embed_texts_per_s"] = rates
        print("\nembedding alone, texts/s (one call; MiniLM on the first "
              f"{args.minilm_cap}; mean words: " + ", ".join(
                  f"{k} {np.mean([len(t.split()) for t in v]):.0f}" for k, v in sets.items()) + ")")
        for name, r in rates.items():
            print(f"  {name}: " + ", ".join(f"{k} {v:,.0f}" for k, v in r.items()))
    if args.json is not None:
        args.json.write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
