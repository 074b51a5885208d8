"""Topics by weighted agreement of per-space clusterings (C4).

Each voting space clusters a namespace's current memories on its own (HDBSCAN with at least
`MIN_CLUSTER` memories a cluster: the C++ kernel `kernels.hdbscan`, scikit-learn's labels but
for a fixed order of tied edges) over its own distance: 1 - cosine for dense spaces (and
for multivector spaces, on each memory's mean token vector), the Hamming fraction for binary
codes, 1 - Jaccard for sparse term sets. Two memories are together in a space when that space
puts them in one cluster; their *agreement* is the sum of the category weights of the spaces
that do (semantic 1.0, relational and structural 0.5; temporal spaces never vote). A topic is a
connected group of memories whose pairs agree at the threshold or more; its confidence is the
mean agreement of its agreeing pairs over the most the schema allows.

Chat turns (issue 29): `topics_capped`, what the store runs, refines each space's clustering
first (a cluster of more than `CAP` of the memories is clustered again on its own members and
replaced by the clusters inside it, when there are two or more), splits a topic the agreeing
pairs chain past the cap the same way, then lets each memory in no topic join a topic while that
topic has room: the nearest of those whose best terms it holds (with `terms`: the words a label
shows, of the topic as clustered), else its nearest when nearer to it than `JOIN` of its mean
distance to every memory; what that leaves in no topic is clustered again on its own (the same
spaces and agreement; `REST_ROUNDS` times at most) and joined the same way.

Who votes: every non-temporal space, except one whose embedder is a projection of the main
space's (the HDC codes of the dense vectors): it would repeat the main space's vote.

The threshold: SPEC C4 writes 2.5 for the 13-space profile (a maximum of 8.5): two semantic
spaces and one more. For any schema it is the larger of 2.5/8.5 of its maximum and the heaviest
voter's weight plus the lightest's, so a topic always needs at least two spaces to agree. The
default profile (dense 1.0, tokens 1.0, lexical 0.5; maximum 2.5) needs 1.5.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import Protocol

import numpy as np

from .._requests_first import give_way
from ..kernels import (
    cluster_sums,
    distances_from_cosines,
    group_sums,
    hamming_distances,
    hdbscan,
    jaccard_from_overlaps,
    row_sums_out,
)
from ..kernels.sets import unique
from ..spaces.protocol import Embedding, SparseBatch, TokenBatch
from ..spaces.schema import Space
from .scratch import POOL, Lease

MIN_CLUSTER = 3
JOIN = 0.9  # a memory in no topic joins its nearest when nearer to it than 0.9 of its mean distance to all
CAP, MIN_SPLIT, SPLITS = 0.15, 20, 4  # a topic over 15% of the memories (and 20 or more) is split, 4 levels at most
REST_ROUNDS = SPLITS  # times what a join leaves in no topic is clustered again on its own, at most
SPEC_THRESHOLD, SPEC_MAXIMUM = 2.5, 8.5
# Term overlaps by a dense product when its n^2 x terms multiply-adds cost less than this many
# times the sum of df^2 pairs counted otherwise (BLAS runs each a few hundred times faster).
DENSE_OVER_SPARSE = 200.0
GEMM_DIMS = 192  # cosines of vectors of at most this many dimensions by gemm, not syrk (`_cosine_distances`)

# Held around the large matrix products a topics run makes (on the store's worker thread), and
# taken by a fork: OpenBLAS's fork handler shuts its thread pool down, and a product running on
# another thread at that moment waited for it for ever (the parent's worker hung in the product;
# a test forking beside a topics run found it). A fork waits for the product under way (~20 ms).
BLAS_FORK_GUARD = threading.Lock()


def _fork_waits() -> None:
    BLAS_FORK_GUARD.acquire()


def _fork_done() -> None:
    BLAS_FORK_GUARD.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_fork_waits, after_in_parent=_fork_done, after_in_child=_fork_done)


@dataclass(frozen=True)
class SpaceClusters:
    """One space's clustering of the memories: a label per memory (-1: in no cluster)."""

    space: str
    weight: float
    labels: np.ndarray  # int64 (n,)


class Terms(Protocol):
    """The words of the memories being clustered (`labels.Rows`): what a join reads."""

    def top(self, members: Sequence[int]) -> Collection[str]:
        """The terms a label of these memories shows."""

    def content(self, i: int) -> Collection[str]:
        """Memory i's terms that may label a topic."""


def threshold(weights: Sequence[float]) -> float:
    """The agreement a pair needs to share a topic (see the module docstring)."""
    ws = sorted((w for w in weights if w > 0), reverse=True)
    if len(ws) < 2:
        return float("inf")  # one voter cannot agree with anything
    return max(sum(ws) * SPEC_THRESHOLD / SPEC_MAXIMUM, ws[0] + ws[-1])


def distances(space: Space, vectors: Embedding, out: np.ndarray | None = None,
              sums: np.ndarray | None = None) -> np.ndarray:
    """The pairwise distance matrix of one space's vectors (float32, symmetric, zero diagonal);
    written into `out` (n x n float32, C-contiguous, its contents ignored) when given. `sums`
    (float64, n): receives each row's sum, exact, made in the C++ pass that finishes the matrix
    while its rows are in cache (a pass of numpy's means over the three cold matrices cost a
    2,000-memory refresh 8-11 ms, issue 29)."""
    n = len(vectors)
    if out is not None and (out.shape != (n, n) or out.dtype != np.float32 or not out.flags.c_contiguous):
        raise ValueError(f"out must be a C-contiguous float32 ({n}, {n}) matrix, got {out.dtype} {out.shape}")
    # checked here for every kind alike, as the kernels check it: the binary space's numpy sum
    # wrote into whatever it was given (an int64 array truncated each sum, a float32 one rounded it)
    row_sums_out(sums, n)
    if isinstance(vectors, SparseBatch):
        d = _jaccard_distances(vectors, out, sums)
    elif isinstance(vectors, TokenBatch):
        d = _cosine_distances(_token_means(vectors), out, sums)
    elif space.kind == "binary":
        codes = np.ascontiguousarray(vectors, np.uint8)  # a binary space's dim is whole bytes
        d = np.divide(hamming_distances(codes, codes).astype(np.float32), np.float32(space.dim), out=out)
        if sums is not None:  # the diagonal is 0 (a code's distance to itself)
            np.sum(d, axis=1, dtype=np.float64, out=sums)
    else:
        d = _cosine_distances(np.asarray(vectors, np.float32), out, sums)
    # Each construction is symmetric as computed (u @ u.T is one BLAS syrk; the overlap and Hamming
    # formulas treat i, j alike), so no (d + d.T) / 2 pass over the matrix is needed; and none is
    # negative (the cosines' are clipped at 0 as they are made; 1 - Jaccard and Hamming fractions
    # are in [0, 1]), so no clipping pass either.
    made: np.ndarray = np.ascontiguousarray(d, np.float32)
    np.fill_diagonal(made, 0.0)
    return made


def _jaccard_distances(batch: SparseBatch, out: np.ndarray | None = None,
                       sums: np.ndarray | None = None) -> np.ndarray:
    """1 - Jaccard of every pair of term sets. The overlaps come from a dense product when few
    terms are widely shared (cheaper per pair), else from the pairs each term's rows make."""
    n = len(batch)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(batch.indptr))
    terms, cols = np.unique(batch.indices, return_inverse=True)  # ids span 2^31: number them densely
    df = np.bincount(cols, minlength=len(terms)).astype(np.float64)
    sizes = np.diff(batch.indptr).astype(np.float32)
    if n * n * len(terms) <= DENSE_OVER_SPARSE * float(df @ df):
        m = np.zeros((n, max(len(terms), 1)), np.float32)
        m[rows, cols] = 1.0
        # gemm for few terms, as for few dimensions in `_cosine_distances` (60 terms at 2,000 notes:
        # 6.6 -> 3.9 ms); the overlaps are whole numbers, exact in any order of additions
        with BLAS_FORK_GUARD:
            inter: np.ndarray = np.matmul(m, np.ascontiguousarray(m.T) if m.shape[1] <= GEMM_DIMS else m.T, out=out)
    else:
        a, b = _group_pairs(cols, rows)
        inter = np.empty((n, n), np.float32) if out is None else out
        np.copyto(inter, np.bincount(a * n + b, minlength=n * n).reshape(n, n), casting="unsafe")
        inter += inter.T  # each pair was counted once, as (lower row, higher row)
    # 1 - overlap / union in place, in one pass in the C++ core (numpy's four passes over the
    # matrix and a fresh n x n union took 16 ms at 2,000 memories): the same float32 arithmetic
    jaccard_from_overlaps(inter, sizes, sums)
    return inter


def _token_means(batch: TokenBatch) -> np.ndarray:
    """Each memory's mean token vector (zeros for a memory without tokens). The sums run in
    float64, each memory's tokens added in order (as `np.add.reduceat` would), by the C++ core's
    `cluster_sums` (each token added to its memory's row as it comes): the same additions in the
    same order as the position-by-position numpy adds this replaced, at a fifth of their cost
    (issue 29)."""
    off = np.asarray(batch.offsets, np.int64)
    sizes = np.diff(off)
    tokens = np.asarray(batch.tokens)
    if not len(tokens) or not len(off) or off[0] == off[-1]:
        return np.zeros((len(sizes), tokens.shape[1] if tokens.ndim == 2 else 0), np.float32)
    # the kernel takes C-contiguous float32 rows numbered from 0: a batch's own tokens are (no
    # copy), a window of a larger batch or other dtypes are made so (they were refused naming
    # `vectors` and `labels`, which no caller passed)
    tokens = np.ascontiguousarray(tokens[off[0]:off[-1]], np.float32)
    sums = cluster_sums(tokens, np.repeat(np.arange(len(sizes), dtype=np.int64), sizes), len(sizes)).sums
    out: np.ndarray = (sums / np.maximum(sizes, 1)[:, None]).astype(np.float32)
    return out


def _cosine_distances(x: np.ndarray, out: np.ndarray | None = None, sums: np.ndarray | None = None) -> np.ndarray:
    """1 - cosine of every pair of rows, clipped at 0, in place in the product's own buffer (`out`
    when given; zero rows: 1); `sums`: each row's sum but its diagonal entry's (`distances`)."""
    n = np.linalg.norm(x, axis=1, keepdims=True)
    u = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    # u @ u.T is BLAS's syrk (half the products, then a mirror copy); for few dimensions the copy
    # outweighs the half saved and a plain gemm is faster (128-d at 2,000 rows: 9.2 -> 7.5 ms),
    # with the same figures (OpenBLAS adds each dot product in the same order either way)
    with BLAS_FORK_GUARD:
        d: np.ndarray = np.matmul(u, np.ascontiguousarray(u.T) if x.shape[1] <= GEMM_DIMS else u.T, out=out)
    distances_from_cosines(d, sums)  # 1 - cosine, clipped at 0: one pass in the C++ core
    return d


def cluster(space: Space, vectors: Embedding) -> SpaceClusters:
    """HDBSCAN (min cluster 3) of one space's memories over its distances, in the C++ core."""
    return cluster_spaces([(space, vectors)])[0]


def cluster_spaces(spaces: Sequence[tuple[Space, Embedding]], most: float | None = None,
                   kept: list[np.ndarray] | None = None, lease: Lease | None = None,
                   means: list[np.ndarray] | None = None) -> list[SpaceClusters]:
    """`cluster` of every (space, vectors) pair, in the given order. While one space's HDBSCAN
    runs on a worker thread (the kernel releases the GIL), the next space's distances are computed
    (their matrix products already use every core). With `most`, each space's clusters of more
    than that many memories are refined (`topics_capped`); `kept` receives each distance matrix, made in
    `lease`'s buffers when given (`scratch`), and `means` each matrix's row means (float64)."""
    if not spaces:
        return []
    n = len(spaces[0][1])
    if n < MIN_CLUSTER:
        return [SpaceClusters(sp.name, sp.weight, np.full(n, -1, np.int64)) for sp, _ in spaces]
    with ThreadPoolExecutor(max_workers=1) as pool:
        runs = []
        for sp, x in spaces:
            sums = np.empty(n, np.float64) if means is not None else None
            d = distances(sp, x, lease.square(n) if lease is not None else None, sums)
            if kept is not None:
                kept.append(d)
            if sums is not None and means is not None:
                means.append(np.divide(sums, n, out=sums))  # the diagonal's 0 counted, as a row's mean
            runs.append(pool.submit(hdbscan, d, MIN_CLUSTER) if most is None else pool.submit(_refined, d, most))
        return [SpaceClusters(sp.name, sp.weight, run.result()) for (sp, _), run in zip(spaces, runs)]


def topics_capped(spaces: Sequence[tuple[Space, Embedding]], cap: float = CAP,
                  terms: Terms | None = None) -> list[tuple[list[int], float]]:
    """`topics_of` the spaces' clusterings, each space's refined first: a cluster of more than
    `cap` of the memories (and at least `MIN_SPLIT`) is clustered again on its own members over
    the same distances and, when that finds two clusters or more, replaced by them (its members in
    none become noise in that space), down to `SPLITS` levels. Why: HDBSCAN's excess-of-mass
    choice keeps the root-most stable cluster, and on a chat's turns, which loosely share a family,
    a pet or a job, that is half the conversation in every space (issue 29); inside it, the denser
    groups stand out. A cluster that holds no two groups stays whole. `terms`: the memories'
    words, for the join (see `_joined`).

    What the join leaves in no topic (at least `MIN_SPLIT` memories) is then clustered on its own,
    as a split cluster's members are; its topics are added to the others (as they stand, joined
    members included) and what is still in none joins them as before; until the rest holds no
    topic, `REST_ROUNDS` times at most. Why (issue 29): on a chat's turns the topics
    as clustered held 7-22% of the turns that are not small talk; the join filled the few topics
    to the cap and left half a conversation out, though what was left held threads of its own
    (LoCoMo: "dance / studio", "fashion / customers / store" beside a full "support / dreams"):
    among themselves, without the denser groups that outranked them, HDBSCAN finds them."""
    n = len(spaces[0][1]) if spaces else 0
    if n < MIN_CLUSTER:
        return []
    with POOL.lease() as lease:  # the distance matrices in buffers kept between refreshes
        return _capped(spaces, n, max(cap * n, MIN_SPLIT), terms, lease)


def _capped(spaces: Sequence[tuple[Space, Embedding]], n: int, most: float, terms: Terms | None,
            lease: Lease) -> list[tuple[list[int], float]]:
    """`topics_capped`'s work, its distance matrices in `lease`'s buffers."""
    mats: list[np.ndarray] = []
    means: list[np.ndarray] = []  # each space's row means, made with its matrix (read by the joins)
    found = topics_of(cluster_spaces(spaces, most, mats, lease, means), n)
    for _ in range(SPLITS):  # agreeing pairs may chain the refined clusters past the cap again
        out: list[tuple[list[int], float]] = []
        for members, conf in found:
            inner = _split(spaces, mats, members) if len(members) > most else []
            out.extend(inner if len(inner) >= 2 else [(members, conf)])
            give_way()  # a worker's run steps aside for requests (engramdb/_requests_first.py)
        if len(out) == len(found):
            break
        found = out
    weights = [sp.weight for sp, _ in spaces]
    give_way()
    joined = _joined(found, mats, weights, n, terms, means)
    for _ in range(REST_ROUNDS):  # the rest, clustered on its own, may hold topics of its own
        inside = np.zeros(n, bool)
        for members, _ in joined:
            inside[members] = True
        rest = np.flatnonzero(~inside).tolist()
        give_way()
        fresh = _split(spaces, mats, rest, most) if len(rest) >= MIN_SPLIT else []
        if not fresh:
            break
        joined = _joined(joined + fresh, mats, weights, n, terms, means)
    return joined


def _split(spaces: Sequence[tuple[Space, Embedding]], mats: Sequence[np.ndarray],
           members: list[int], most: float | None = None) -> list[tuple[list[int], float]]:
    """The topics among `members` alone (indices into the whole); with `most`, each space's
    clusters of more than that many are refined (`_refined`)."""
    ix = np.asarray(members, np.int64)
    sub = [SpaceClusters(sp.name, sp.weight, _refined(_square(d, ix), len(ix) - 1 if most is None else most))
           for (sp, _), d in zip(spaces, mats)]
    return [([members[i] for i in m], c) for m, c in topics_of(sub, len(members))]


def _joined(found: list[tuple[list[int], float]], mats: Sequence[np.ndarray], weights: Sequence[float],
            n: int, terms: Terms | None, means: Sequence[np.ndarray]) -> list[tuple[list[int], float]]:
    """The topics, with each memory in none joining one, nearest first, while the topic holds
    fewer than `CAP` of the memories: with `terms`, the nearest topic whose best terms as
    clustered (the words its label would show) it holds one of; else (or without `terms`) the
    topic it is nearest when that is under `JOIN` of its mean distance to every memory (nearer to
    the topic than to the namespace at large). Nearness is the mean distance to the topic's
    members, averaged over the spaces by weight. Why: the refined clusterings leave most of a
    split cluster in none, and on chat turns each space's noise is most of the namespace (issue
    29: a third to a half of what is not small talk was in no topic); and a memory that holds a
    topic's words belongs with it however it is worded, where one that joined by nearness alone
    rarely holds the label's words (LoCoMo: label words in a quarter of a topic's members).
    `means`: each matrix's row means (made with it: `cluster_spaces`)."""
    inside = np.zeros(n, bool)
    for members, _ in found:
        inside[members] = True
    rest = np.flatnonzero(~inside)
    if not found or not len(rest):
        return found
    near, background = _nearness(found, mats, weights, rest, means)
    out = [(list(m), c) for m, c in found]
    room = max(int(CAP * n), MIN_SPLIT)
    cols = np.arange(len(rest))
    best = np.argmin(near, axis=0)
    gap = near[best, cols] / np.maximum(background, 1e-9)
    ok = gap <= JOIN
    if terms is not None:
        tops = [terms.top(members) for members, _ in found]
        vocab: dict[str, int] = {}  # the topics' best terms, numbered
        for best_terms in tops:
            for term in best_terms:
                vocab.setdefault(term, len(vocab))
        labelled = np.zeros((len(found), len(vocab)), np.float32)  # topic x best term
        labelled[np.repeat(np.arange(len(found)), [len(b) for b in tops]),
                 [vocab[term] for b in tops for term in b]] = 1.0
        # every memory's terms numbered in one pass (-1: no topic's best term), not a loop per term
        contents = [terms.content(j) for j in rest.tolist()]
        vs = np.array([vocab.get(term, -1) for term in chain.from_iterable(contents)], np.int64)
        ks = np.repeat(np.arange(len(rest)), [len(c) for c in contents])
        has = np.zeros((len(rest), len(vocab)), np.float32)  # memory x best term it holds
        has[ks[vs >= 0], vs[vs >= 0]] = 1.0
        # a memory holds one of a topic's best terms: counts of 0/1 products (whole numbers: exact);
        # a numpy assignment per memory and term took 16 ms at 2,000 memories
        with BLAS_FORK_GUARD:
            holds = (labelled @ has.T) > 0
        worded = holds.any(axis=0)
        if worded.any():
            best_worded = np.argmin(np.where(holds, near, np.inf), axis=0)
            best = np.where(worded, best_worded, best)
            gap = np.where(worded, near[best, cols] / np.maximum(background, 1e-9), gap)
            ok |= worded
    for j in np.argsort(gap, kind="stable").tolist():  # the nearest first, while the topic has room
        t = int(best[j])
        if ok[j] and len(out[t][0]) < room:
            out[t][0].append(int(rest[j]))
    return sorted(((sorted(m), c) for m, c in out), key=lambda t: (-len(t[0]), t[0][0]))


def _nearness(found: list[tuple[list[int], float]], mats: Sequence[np.ndarray], weights: Sequence[float],
              rest: np.ndarray, means: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each memory of `rest`'s mean distance to each topic's members (topics x rest) and to every
    memory, averaged over the spaces by weight. A topic's sums are in float64 by the C++ core
    (`kernels.group_sums`, one pass over each row's member columns: numpy's gathers, float64 copy
    and reduceat over a topic's few columns took 14 ms at 2,000 memories, issue 29); their order
    of additions does not matter: every distance here is a float32 multiple of 2^-24 (1 - a
    float32 cosine or Jaccard in [0, 2]) or a Hamming fraction, so any sum of a few thousand is
    exact in float64. A row's mean distance to every memory is its sum over n, exact for the same
    reason: made with the matrix (`distances`' `sums`), in `means`."""
    total = float(sum(weights))
    order = np.concatenate([members for members, _ in found]).astype(np.int64)  # topic by topic
    sizes = np.array([len(members) for members, _ in found], np.float64)
    starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    near = np.zeros((len(rest), len(found)))
    background = np.zeros(len(rest))
    for d, w, mean in zip(mats, weights, means, strict=True):
        background += mean[rest] * (w / total)
        near += group_sums(d, rest, order, starts) / sizes * (w / total)
    return near.T, background


def _refined(d: np.ndarray, most: float) -> np.ndarray:
    """HDBSCAN labels over `d`, each cluster of more than `most` members split as `topics_capped` says."""
    labels = hdbscan(d, MIN_CLUSTER)
    for _ in range(SPLITS):
        kinds, sizes = np.unique(labels[labels >= 0], return_counts=True)
        big = kinds[sizes > most]
        if not len(big):
            break
        top = int(labels.max()) + 1
        split = False
        for k in big.tolist():
            ix = np.flatnonzero(labels == k)
            inner = hdbscan(_square(d, ix), MIN_CLUSTER)
            if len(unique(inner[inner >= 0])) < 2:
                continue
            labels[ix] = np.where(inner >= 0, inner + top, -1)
            top += int(inner.max()) + 1
            split = True
        if not split:
            break
    return labels


def _square(d: np.ndarray, ix: np.ndarray) -> np.ndarray:
    """d[ix][:, ix], contiguous: `np.take` gathers columns about 3x faster than fancy indexing."""
    out: np.ndarray = np.take(np.take(d, ix, axis=0), ix, axis=1)
    return out


def _group_pairs(groups: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of entries sharing a group, as (item, later item) arrays, without a loop over
    groups: entries are sorted by (group, item), and each pairs with the rest of its group."""
    order = np.lexsort((items, groups))
    g, it = groups[order], np.asarray(items, np.int64)[order]
    if not len(g):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.r_[starts[1:], len(g)]
    after = np.repeat(ends, ends - starts) - np.arange(len(g)) - 1  # later entries of its group
    first = np.repeat(np.arange(len(g)), after)
    block = np.repeat(np.cumsum(after) - after, after)  # where each entry's partners begin
    second = first + 1 + (np.arange(len(first)) - block)
    return it[first], it[second]


def _pairs_within(labels: np.ndarray) -> np.ndarray:
    """Every pair (i < j) of memories one cluster holds, as i * n + j."""
    inside = np.flatnonzero(labels >= 0)
    a, b = _group_pairs(labels[inside], inside)
    out: np.ndarray = a * len(labels) + b
    return out


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected components of the graph with edges (a, b): each node's smallest member's index.
    Hook every edge's larger root onto the smaller, then jump pointers to the roots; repeat
    until no edge joins two roots (a few rounds, each a pass over the edges)."""
    lab = np.arange(n, dtype=np.int64)
    while True:
        la, lb = lab[a], lab[b]
        low = np.minimum(la, lb)
        new = lab.copy()
        np.minimum.at(new, la, low)
        np.minimum.at(new, lb, low)
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, lab):
            return lab
        lab = new


def topics_of(clusterings: Sequence[SpaceClusters], n: int) -> list[tuple[list[int], float]]:
    """(member indices, confidence) of each topic, biggest first (see the module docstring)."""
    weights = [c.weight for c in clusterings]
    need, top = threshold(weights), sum(weights)
    keys, ws = [], []
    for c in clusterings:  # every pair two memories of one cluster make, with that space's weight
        pairs = _pairs_within(c.labels)
        keys.append(pairs)
        ws.append(np.full(len(pairs), c.weight))
    if not keys:
        return []
    pairs, inv = np.unique(np.concatenate(keys), return_inverse=True)
    agree = np.bincount(inv, weights=np.concatenate(ws))
    strong = agree >= need - 1e-9
    a, b = pairs[strong] // n, pairs[strong] % n
    comp = _components(n, a, b)
    # every component at once (a loop over them was a pass over all memories and edges each:
    # 9 ms of 11 at 2,000 memories); a mean agreement is a sum of multiples of 0.5, exact in any order
    size = np.bincount(comp, minlength=n)
    edges = np.bincount(comp[a], minlength=n)
    total = np.bincount(comp[a], weights=agree[strong], minlength=n)
    by_comp = np.argsort(comp, kind="stable")  # each component's members together, ascending
    ends = np.cumsum(size)
    out = [(by_comp[ends[k] - size[k]:ends[k]].tolist(), float(total[k] / edges[k]) / top)
           for k in np.flatnonzero((edges > 0) & (size >= MIN_CLUSTER)).tolist()]
    return sorted(out, key=lambda t: (-len(t[0]), t[0][0]))


__all__ = ["CAP", "MIN_CLUSTER", "SpaceClusters", "Terms", "cluster", "cluster_spaces", "distances", "threshold", "topics_capped",
           "topics_of"]
