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
