"""float64 numpy references for every kernel (the ground truth the native paths are held to)."""

from __future__ import annotations

import numpy as np


def dense_scores(q: np.ndarray, x: np.ndarray, metric: str) -> np.ndarray:
    """(q, n) float64 scores: dot, cosine (zero vectors score 0) or Born max(0, dot)^2."""
    q64 = np.atleast_2d(q).astype(np.float64)
    x64 = x.astype(np.float64)
    if metric == "cosine":
        qn = np.linalg.norm(q64, axis=1, keepdims=True)
        xn = np.linalg.norm(x64, axis=1, keepdims=True)
        q64 = np.divide(q64, qn, out=np.zeros_like(q64), where=qn > 0)
        x64 = np.divide(x64, xn, out=np.zeros_like(x64), where=xn > 0)
    s = q64 @ x64.T
    if metric == "born":
        s = np.maximum(s, 0.0) ** 2
    return s


def topk_order(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Indices of the k best per row: score descending, then index ascending."""
    out = []
    n = scores.shape[1]
    allowed = np.arange(n) if mask is None else np.flatnonzero(mask)
    for row in scores:
        s = row[allowed]
        order = np.lexsort((allowed, -s))[:k]
        out.append(allowed[order])
    return np.array(out, dtype=np.int64).reshape(scores.shape[0], min(k, allowed.size))


def dense_tolerance(q: np.ndarray, x: np.ndarray, metric: str) -> float:
    """Absolute error bound for float32 accumulation of the scores, with margin."""
    d = max(x.shape[1], 1)
    mag = float(np.abs(np.atleast_2d(q)).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) * d
    if metric == "cosine":
        mag = d**0.5
    elif metric == "born":
        mag = mag * 2 * max(mag, 1.0)
    return 1e-5 * max(mag, 1.0) * np.sqrt(d) / 4 + 1e-6


def hamming(q: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(q, n) Hamming distances of packed uint8 codes."""
    bits_q = np.unpackbits(np.atleast_2d(q), axis=1).astype(np.int64)
    bits_c = np.unpackbits(codes, axis=1).astype(np.int64)
    return (bits_q[:, None, :] != bits_c[None, :, :]).sum(axis=2)


def jaccard(query: set[int], sets: list[set[int]]) -> np.ndarray:
    out = np.zeros(len(sets))
    for i, s in enumerate(sets):
        union = len(query | s)
        out[i] = len(query & s) / union if union else 0.0
    return out


def weighted_jaccard(qw: dict[int, float], rows: list[dict[int, float]]) -> np.ndarray:
    out = np.zeros(len(rows))
    for i, r in enumerate(rows):
        keys = set(qw) | set(r)
        num = sum(min(qw.get(t, 0.0), r.get(t, 0.0)) for t in keys)
        den = sum(max(qw.get(t, 0.0), r.get(t, 0.0)) for t in keys)
        out[i] = num / den if den > 0 else 0.0
    return out


def maxsim(q: np.ndarray, tokens: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    q64 = q.astype(np.float64)
    out = np.zeros(offsets.size - 1)
    for t in range(offsets.size - 1):
        d = tokens[offsets[t] : offsets[t + 1]].astype(np.float64)
        out[t] = (d @ q64.T).max(axis=0).sum() if d.shape[0] else 0.0
    return out


def centroid_update(c: np.ndarray, counts: np.ndarray, nodes: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c64 = c.astype(np.float64).copy()
    n = counts.copy()
    for node, vec in zip(nodes, v.astype(np.float64)):
        c64[node] = (c64[node] * n[node] + vec) / (n[node] + 1)
        n[node] += 1
    return c64, n


def _unit(a: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(a, axis=1, keepdims=True)
    return np.divide(a, n, out=np.zeros_like(a), where=n > 0)


def spherical_kmeans(x: np.ndarray, cent: np.ndarray, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """Spherical k-means from `cent` (kernels.spherical_kmeans_loop's steps): cosine assignment
    (ties to the lower centroid), an emptied cluster re-seeded with the worst-fitting vector,
    mean directions; stops once at most n // 1000 labels change."""
    x64, c = x.astype(np.float64), cent.astype(np.float64)
    labels = np.full(len(x), -1, np.int64)
    for _ in range(iters):
        s = _unit(x64) @ _unit(c).T
        new = np.argmax(s, axis=1)
        changed = int((new != labels).sum())
        labels = new
        score = s[np.arange(len(x)), labels]
        sums = np.zeros_like(c)
        np.add.at(sums, labels, x64)
        empty = np.flatnonzero(np.bincount(labels, minlength=len(c)) == 0)
        if len(empty):
            worst = np.argsort(score, kind="stable")[: len(empty)]
            sums[empty] = x64[worst]
            labels[worst] = empty
        c = _unit(sums)
        if changed <= len(x) // 1000:
            break
    return c, labels


def bm25(q: np.ndarray, qc: np.ndarray, doc_terms: list[np.ndarray], doc_tf: list[np.ndarray], norm: np.ndarray,
         k1: float, n_total: int, df: np.ndarray) -> np.ndarray:
    """Lucene BM25 of every document from the formula, idf over n_total documents with the
    given document frequency of each query term."""
    out = np.zeros(len(doc_terms))
    for term, count, f in zip(q.tolist(), qc.tolist(), df.tolist()):
        idf = np.log(1 + (n_total - f + 0.5) / (f + 0.5))
        for i, (t, tf) in enumerate(zip(doc_terms, doc_tf)):
            hit = np.flatnonzero(t == term)
            if len(hit):
                x = float(tf[hit[0]])
                out[i] += count * idf * x * (k1 + 1) / (x + float(norm[i]))
    return out


def tree_search(q: np.ndarray, centroids: np.ndarray, children: list[list[int]], members: list[list[int]],
                root: int, height: int, rows: np.ndarray, allowed: np.ndarray | None, beam: int, probe: int,
                k: int) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int], set[int]]:
    """Top-K descent by cosine: the `beam` best children per level (the `probe` best at the leaf
    level; fewer are all kept unscored), then the k best allowed member keys of the kept leaves,
    ties to the lower id. Returns (keys, scores, (centroids, memories, leaves) scored, leaves)."""
    cs = dense_scores(q, centroids, "cosine")[0]
    frontier, n_cent = [root], 0
    for lvl in range(height - 1, 0, -1):
        cand = np.array([c for f in frontier for c in children[f]], np.int64)
        keep = probe if lvl == 1 else beam
        if len(cand) > keep:
            n_cent += len(cand)
            cand = cand[np.lexsort((cand, -cs[cand]))[:keep]]
        frontier = cand.tolist()
    keys = np.unique(np.array([m for leaf in frontier for m in members[leaf]], np.int64))
    if allowed is not None:
        keys = keys[allowed[keys]]
    ks = dense_scores(q, rows[keys], "cosine")[0] if len(keys) else np.zeros(0)
    order = np.lexsort((keys, -ks))[:k]
    return keys[order], ks[order], (n_cent, len(keys), len(frontier)), set(frontier)
