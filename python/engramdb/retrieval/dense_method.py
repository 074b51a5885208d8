"""The dense method: the k best rows of one space, through its index or by exact scan.

A namespace with `tuning.tree_min_rows` committed memories or more in a dense cosine space is
searched through its index (centroid tree, or HNSW) over the committed rows; its newest
`hot_rows` keys, any committed keys the index has not reached yet, and the WAL's rows are scanned
exactly, so a memory added a moment ago is always found (J5). Every other case is one exact scan
per segment with the filters inside the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from ..index.hnsw import HnswVersion
from ..index.segments_source import SegmentsSource
from ..index.tree_index import TreeVersion
from ..spaces.protocol import Embedding, SparseBatch, TokenBatch
from ..spaces.schema import Space
from ..storage.view import View
from .query_context import QueryContext

Scored = tuple[float, int, int]  # (score, segment, row)


def dense_found(ctx: QueryContext, sp: Space, qv: Any, k: int,
                strategy: str | None = None) -> tuple[list[Scored], dict[str, Any] | None]:
    """The k best (score, segment, row) of one space, best first, and what its index did (None
    when an exact scan answered)."""
    view = ctx.view
    found: list[Scored] = []
    info: dict[str, Any] | None = None
    exact_from = 0  # segments from here on are scanned exactly
    kind = strategy if strategy in ("tree", "hnsw") else \
        ctx.indexes.kind if strategy in (None, "dense_only") else "none"
    if kind in ("tree", "hnsw") and (sp.kind != "dense" or sp.metric != "cosine"):
        if strategy in ("tree", "hnsw"):
            raise ValueError(f"strategy {strategy!r} needs a dense cosine space; {sp.name!r} is "
                             f"{sp.kind} with metric {sp.metric!r}: use strategy='exact'")
        kind = "none"  # indexes rank by cosine: other metrics are scanned exactly
    if kind != "none":
        info = _index_search(ctx, kind, sp, qv, k, strategy in ("tree", "hnsw"), found)
        if info is not None:
            exact_from = view.committed
            ctx.index_stats = dict(info)
    for si in range(exact_from, len(view.segments)):
        mask = ctx.view.row_filter(si, ctx.namespace, ctx.known_us, ctx.t, types=ctx.types)
        if mask is None:
            continue
        for row, score in scan(sp, qv, view.vectors(si, sp.name), mask, k):
            found.append((score, si, row))
    best: dict[tuple[int, int], float] = {}
    for score, si, row in found:  # a row met twice (an index's hit and a newest row) counts once
        if score > best.get((si, row), -np.inf):
            best[(si, row)] = score
    return sorted(((s, si, row) for (si, row), s in best.items()), key=lambda x: (-x[0], x[1], x[2]))[:k], info


def _index_search(ctx: QueryContext, kind: str, sp: Space, qv: Any, k: int, forced: bool,
                  found: list[Scored]) -> dict[str, Any] | None:
    """Search the namespace's index over the committed rows into `found`; None when an exact scan
    should answer instead (a small namespace, or no index for it yet)."""
    view, ns, tuning = ctx.view, ctx.namespace, ctx.tuning
    rows = view.namespace_rows(ns, committed_only=True)
    if not forced and rows < tuning.tree_min_rows:
        return None
    version = _pinned(ctx, kind, sp)
    if version is None:
        return None
    if isinstance(version, TreeVersion):
        if ns not in version.trees:
            return None  # no tree yet (a small namespace): brute force answers
    elif ns not in version.namespaces:
        return None
    committed = view.committed_rows
    mask = view.key_mask(ns, ctx.known_us, ctx.t, ctx.at_now, ctx.types, committed_only=True)
    passing = int(np.count_nonzero(mask))  # the memories the filters let through (current versions only)
    if not forced and 2 * k >= passing:  # a k that takes half of them or more: the exact scan answers as
        return None  # fast, and fills it (a graph search for nearly every key misses a node it did not reach)
    # the index may be ahead of this snapshot (synced for a later one): it reads its own source,
    # and keys this snapshot lacks are refused
    src = version.source if version.covered > committed and version.source is not None else \
        committed_source(view, sp.name)
    if version.covered > committed:
        mask = np.concatenate([mask, np.zeros(version.covered - committed, bool)])
    q = np.asarray(qv, dtype=np.float32).reshape(-1)
    if isinstance(version, TreeVersion):
        # leaves enough to hold k twice over among the rows the filters pass (a k past what
        # `tree_probe` leaves hold returned only what they held: 455 hits for k = 1,000 in a namespace
        # of 795, 49 for k = 90 when a type filter passed 90 of 900)
        probe = max(tuning.tree_probe, -(-2 * k * rows // max(1, passing * tuning.tree_leaf_size)))
        keys, scores, st = version.trees[ns].search(src, q, k, probe=probe, beam=max(tuning.tree_beam, probe),
                                                     allowed=mask)
        info: dict[str, Any] = {"e_computations": st.e_computations, "centroids": st.centroids,
                                "memories": st.memories, "leaves": st.leaves}
    else:
        def allowed(keys: np.ndarray) -> np.ndarray:
            ok = keys < len(mask)
            ok[ok] = mask[keys[ok]]
            return ok

        got = version.query(ns, q, k, allowed)
        if got is None:
            return None  # a purge renumbered the graphs' keys since this snapshot pinned them
        keys, scores, info = got
    # the newest keys, and committed keys the index has not reached (a sync running elsewhere)
    hot = version.recent.get(ns, np.empty(0, np.int64))
    hot = hot[hot < committed]
    hot = hot[mask[hot]]
    gap = np.arange(version.covered, committed, dtype=np.int64)
    gap = gap[mask[gap]]
    direct = np.concatenate([hot, gap])
    if len(gap):
        src = committed_source(view, sp.name)
    hk, hs = src.topk(q, direct, k) if len(direct) else (np.empty(0, np.int64), np.empty(0, np.float32))
    if len(direct):  # the newest rows may also be in the index: scored once, exactly
        fresh = ~np.isin(keys, direct)
        keys, scores = keys[fresh], scores[fresh]
    seg_i, row_i = view.locate(np.concatenate([keys, hk]))
    found.extend(zip(np.concatenate([scores, hs]).astype(float).tolist(), seg_i.tolist(), row_i.tolist()))
    if "e_computations" in info:
        info["e_computations"] += len(direct)
        info["memories"] += len(direct)
    out = {"index": kind, "namespace": ns, "space": sp.name, **info, "hot_rows": len(hot)}
    if len(gap):
        out["unindexed_rows"] = len(gap)
    return out


def _pinned(ctx: QueryContext, kind: str, sp: Space) -> TreeVersion | HnswVersion | None:
    """The index version this snapshot searches: the first complete one it met, kept in the
    snapshot, so every search of one snapshot reads the same trees (a later insert copies them)."""
    view = ctx.view
    key = f"index:{kind}:{sp.name}"
    version = view.derived.get(key)
    if version is None:
        version = ctx.indexes.dense_version(sp, view, kind)
        if version is not None and version.covered >= view.committed_rows:
            view.derived[key] = version
    assert version is None or isinstance(version, (TreeVersion, HnswVersion))
    return version


def committed_source(view: View, space: str) -> SegmentsSource:
    """The vectors of one dense space over the snapshot's committed segments (made once per snapshot)."""
    key = f"source:{space}"
    src = view.derived.get(key)
    if src is None:
        src = view.derived[key] = SegmentsSource(view.committed_segments, view.schema, space)
    assert isinstance(src, SegmentsSource)
    return src


def dense_metric(sp: Space) -> kernels.Metric:
    """The kernels' name of a dense space's metric."""
    return "dot" if sp.metric == "dot" else "born" if sp.metric == "born" else "cosine"


def rescore_keys(ctx: QueryContext, sp: Space, qv: Any, keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of one dense space for the given global keys only (any order, repeats
    allowed), n best first, as arrays: the pipeline's dense stage over thousands of candidates,
    one native call across all segments (both cores when there are thousands)."""
    view = ctx.view
    mats = [np.asarray(seg.vectors(view.schema, sp.name)) for seg in view.segments]
    got = kernels.rescore_keys(qv, mats, keys, n, dense_metric(sp))
    return got.indices, got.scores


def scan(sp: Space, qv: Any, vecs: Embedding, mask: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, score) of the k best allowed rows of one segment, higher score = better."""
    if sp.kind == "dense":
        idx, sc = kernels.topk(np.asarray(qv)[0], np.asarray(vecs), k, dense_metric(sp), mask=mask, threads=1)
        return list(zip(idx.tolist(), sc.tolist()))
    if sp.kind == "binary":
        idx, dist = kernels.hamming_topk(np.asarray(qv)[0], np.asarray(vecs), k, mask=mask, threads=1)
        return [(r, 1.0 - d / sp.dim) for r, d in zip(idx.tolist(), dist.tolist())]
    if sp.kind == "sparse":
        assert isinstance(qv, SparseBatch) and isinstance(vecs, SparseBatch)
        ids, w = qv.row(0)
        kw = {"weights": vecs.weights, "query_weights": w} if sp.metric == "weighted_jaccard" else {}
        idx, sc = kernels.jaccard_topk(ids, vecs.indptr, vecs.indices, k, mask=mask, threads=1, **kw)
        return list(zip(idx.tolist(), sc.tolist()))
    assert isinstance(qv, TokenBatch) and isinstance(vecs, TokenBatch)
    rows = np.flatnonzero(mask)
    if qv.tokens.shape[0] == 0:
        return []
    # a shortlist: the kernel checks only its rows' offsets (a pass over the segment's would cost
    # more than the scoring)
    try:
        raw = kernels.maxsim(qv.tokens, vecs.tokens, vecs.offsets, rows, threads=1)
    except kernels.NonFiniteRow as e:
        raise ValueError(f"token vectors of row {e.row} contain NaN or inf") from None
    scores = raw / qv.tokens.shape[0]
    order = np.lexsort((rows, -scores))[:k]
    return [(int(rows[i]), float(scores[i])) for i in order]
