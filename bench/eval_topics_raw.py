"""Topics on raw turns (issue 29): each LoCoMo conversation stored as a user would store it.

Every turn is one memory: `content` = the turn's text (no "[date] speaker:" prefix, unlike
bench/eval_topics.py), `role` = the speaker, `session_id` = its session, `seq` = its place in the
session; one namespace per conversation. The data is read in place (never copied). Per
conversation:
- memories, how many the small-talk rule sets aside (`engramdb.topics.smalltalk`);
- `db.topics(ns, refresh=True)`: its time (after one warm-up call on the first conversation), the
  topics, the largest topic's share of the conversation's memories (target <= 15%), the share of
  the memories that are not small talk in a topic (target >= 50%);
- each label, whether any label word is a speaker's name (or a short form of one) or filler
  (stop, small-talk or discourse words), and the share of a topic's members holding each label
  word (mean over words and topics: "label words occur in most members"), and the share of a
  topic's members holding at least one label word (mean over topics);
- `db.topics.themes(ns)`: themes, their mean silhouette (target: themes in every namespace at
  >= 0.5 with MiniLM), the memories in a theme, and (notes, documents) the themes' purity against
  the known grouping, as the topics'.

Command: `python bench/eval_topics_raw.py [--profile default|minilm] [--json PATH] [--labels]
[--corpus locomo|notes|docs]` (the minilm profile embeds the texts with MiniLM, cached as
bench/eval_locomo.py does). `--corpus notes|docs` measures the same on one namespace of short
notes or document chunks with a known grouping (bench/topic_corpora.py: Debian package
descriptions by Section, standard-library docstring paragraphs by module), and each topic's
purity against it (the share of a topic's members in its commonest group, over all members).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import engramdb
from engramdb.spaces.analyzer import normalize, tokenize
from engramdb.topics.smalltalk import SmallTalk

DATA = Path("/work/shared/data/locomo10.json")
TARGET_LARGEST, TARGET_COVERED, TARGET_SILHOUETTE = 0.15, 0.5, 0.5


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's turns in order, as records a user would add."""
    out = []
    k = 1
    while f"session_{k}" in conv:
        for seq, t in enumerate(conv[f"session_{k}"]):
            out.append({"content": t["text"], "role": t["speaker"], "session_id": f"session_{k}", "seq": seq})
        k += 1
    return out


def _minilm(texts: list[str], prefix: str = "locomo10-raw") -> np.ndarray:
    """MiniLM rows of the texts, cached in bench/_corpus.py's cache (as the other LoCoMo benches do)."""
    import hashlib

    import _corpus
    key = hashlib.blake2b("\n".join(texts).encode(), digest_size=8).hexdigest()
    return np.asarray(_corpus._embed_cached(f"{prefix}-minilm-{key}.npy", lambda: texts), np.float32)


def measure(recs: list[dict[str, Any]], names: set[str], profile: str, ns: str, db: Any, warm: bool,
            groups: list[str] | None = None, prefix: str = "locomo10-raw") -> dict[str, Any]:
    """The figures of one namespace's records (`names`: its speakers; `groups`: each record's
    known group, for the topics' purity)."""
    if profile == "minilm":
        vecs = _minilm([r["content"] for r in recs], prefix)
        main = db.schema.main
        recs = [{**r, "vectors": {main: v}} for r, v in zip(recs, vecs)]
    ids = list(db.add_many([{**r, "namespace": ns} for r in recs]))
    text = {i: r["content"] for i, r in zip(ids, recs)}
    group = dict(zip(ids, groups or []))
    rule = SmallTalk(names)
    small = {i for i in ids if rule.is_small_talk(text[i])}
    if warm:
        db.topics(ns, refresh=True)
    t0 = time.perf_counter()
    topics = db.topics(ns, refresh=True)
    took = time.perf_counter() - t0
    inside = {m for t in topics for m in t.members}
    content = [i for i in ids if i not in small]
    labels, named, filler, holds, anyword = [], 0, 0, [], []
    for t in topics:
        words = [w.strip() for w in t.label.split("/") if w.strip()]
        labels.append(f"{t.label} ({t.size})")
        named += any(rule.is_name(w) for w in words)
        filler += any(rule.is_filler(w) and not rule.is_name(w) for w in words)
        toks = [set(tokenize(normalize(text[m]))) for m in t.members]
        for w in words:
            lw = w.lower()
            holds.append(np.mean([lw in tk for tk in toks]))
        anyword.append(np.mean([any(w.lower() in tk for w in words) for tk in toks]))
    themes = db.topics.themes(ns, refresh=True)
    sils = [th.silhouette for th in themes]
    purity = theme_purity = None
    if group and themes:
        theme_purity = round(sum(max(Counter(group[m] for m in t.members).values()) for t in themes)
                             / sum(len(t.members) for t in themes), 4)
    if group and topics:  # members in their topic's commonest group, over every member of a topic
        purity = round(sum(max(Counter(group[m] for m in t.members).values()) for t in topics)
                       / sum(t.size for t in topics), 4)
    return {"purity": purity, "groups": len(set(group.values())),"memories": len(ids), "small_talk": len(small), "topics": len(topics),
            "largest_share": round(max((t.size for t in topics), default=0) / len(ids), 4),
            "content_in_topic": round(sum(i in inside for i in content) / max(1, len(content)), 4),
            "small_talk_in_topic": sum(i in inside for i in small),
            "labels_with_name": named, "labels_with_filler": filler,
            "label_word_in_members": round(float(np.mean(holds)), 3) if holds else None,
            "members_with_a_label_word": round(float(np.mean(anyword)), 3) if anyword else None,
            "topics_ms": round(took * 1e3, 1), "themes": len(themes),
            "theme_silhouette_mean": round(float(np.mean(sils)), 4) if sils else None,
            "in_a_theme": sum(len(t.members) for t in themes), "theme_purity": theme_purity,
            "theme_labels": [f"{t.label} ({len(t.members)}, {t.silhouette:.2f})" for t in themes], "labels": labels}


def themes_cpu(runs: list[tuple[str, list[dict[str, Any]], set[str], list[str] | None]], profile: str,
               prefixes: list[str], n: int = 2000, rounds: int = 5) -> float:
    """Median CPU milliseconds (process time, BLAS held to one thread) of `db.topics.themes(ns,
    refresh=True)` over the first `n` records of the runs in one namespace, after one warm-up."""
    from threadpoolctl import threadpool_limits

    db = engramdb.open(None, profile=profile)
    recs: list[dict[str, Any]] = []
    for (_, rs, _, _), prefix in zip(runs, prefixes):
        if profile == "minilm":  # each run's cached rows, as measure() embeds them
            vecs = _minilm([r["content"] for r in rs], prefix)
            rs = [{**r, "vectors": {db.schema.main: v}} for r, v in zip(rs, vecs)]
        recs += rs
    db.add_many([{**r, "namespace": "cpu"} for r in recs[:n]])
    db.topics.themes("cpu", refresh=True)
    took = []
    with threadpool_limits(1):
        for _ in range(rounds):
            t0 = time.process_time()
            db.topics.themes("cpu", refresh=True)
            took.append(time.process_time() - t0)
    return round(float(np.median(took)) * 1e3, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--labels", action="store_true", help="print every topic's label")
    ap.add_argument("--corpus", choices=("locomo", "notes", "docs"), default="locomo",
                    help="LoCoMo's conversations, or bench/topic_corpora.py's notes or document chunks")
    ap.add_argument("--themes-cpu", action="store_true",
                    help="only the CPU of themes at 2,000 memories: LoCoMo's first 2,000 turns in one namespace, "
                         "or the notes then the document chunks")
    args = ap.parse_args(argv)
    db = engramdb.open(None, profile=args.profile)
    if args.corpus == "locomo":
        runs = [(f"conv-{k}", turns(c["conversation"]), {c["conversation"]["speaker_a"], c["conversation"]["speaker_b"]},
                 None) for k, c in enumerate(json.loads(args.data.read_text()))]
    else:
        import topic_corpora
        recs, groups = topic_corpora.notes() if args.corpus == "notes" else topic_corpora.documents()
        runs = [(args.corpus, recs, set(), groups)]
    if args.themes_cpu:
        if args.corpus == "locomo":
            prefixes = ["locomo10-raw"] * len(runs)
        else:
            import topic_corpora
            runs = [("notes", *topic_corpora.notes()[:1], set(), None), ("docs", *topic_corpora.documents()[:1], set(), None)]
            prefixes = ["topics-notes", "topics-docs"]
        print(f"themes at 2,000 memories ({args.corpus}, {args.profile}): {themes_cpu(runs, args.profile, prefixes)} ms "
              "CPU, one BLAS thread, median of 5")
        return 0
    rows = {}
    for k, (ns, recs, names, groups) in enumerate(runs):
        r = rows[ns] = measure(recs, names, args.profile, ns, db, warm=k == 0, groups=groups,
                               prefix="locomo10-raw" if groups is None else f"topics-{args.corpus}")
        print(f"{ns}: {r['memories']} memories ({r['small_talk']} small talk), {r['topics']} topics, largest "
              f"{r['largest_share']:.1%}, content in a topic {r['content_in_topic']:.1%}, small talk in one "
              f"{r['small_talk_in_topic']}, labels named {r['labels_with_name']} filler {r['labels_with_filler']}, "
              f"label word in members {r['label_word_in_members']} (a member holds one: "
              f"{r['members_with_a_label_word']}), {r['topics_ms']} ms, themes {r['themes']} "
              f"(silhouette {r['theme_silhouette_mean']}, {r['in_a_theme']} memories"
              + (f", theme purity {r['theme_purity']})" if r["theme_purity"] is not None else ")")
              + (f", purity {r['purity']} ({r['groups']} groups)" if r["groups"] else ""))
        if args.labels:
            print("   " + " | ".join(r["labels"]))
            print("   themes: " + " | ".join(r["theme_labels"]))
    ok = all(r["largest_share"] <= TARGET_LARGEST and r["content_in_topic"] >= TARGET_COVERED
             and not r["labels_with_name"] and not r["labels_with_filler"] for r in rows.values())
    print(f"targets (largest <= 15%, content in a topic >= 50%, labels free of names and filler): "
          f"{'met' if ok else 'not met'}")
    themed = all(r["themes"] and r["theme_silhouette_mean"] >= TARGET_SILHOUETTE for r in rows.values())
    print(f"themes target (themes in every namespace, mean silhouette >= {TARGET_SILHOUETTE}): "
          f"{'met' if themed else 'not met'} ({sum(bool(r['themes']) for r in rows.values())} of {len(rows)} with themes)")
    if args.json:
        args.json.write_text(json.dumps({"profile": args.profile, "conversations": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
