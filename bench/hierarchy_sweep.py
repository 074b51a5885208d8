#!/usr/bin/env python
"""Recall / latency / E-computations sweep: engramdb's centroid tree vs usearch HNSW vs faiss IVF.

    python bench/hierarchy_sweep.py --dataset clustered --n 100000 --exact --incremental  # HNSW build ~2-3 min
    python bench/hierarchy_sweep.py --dataset clustered --n 100000 --reuse-hnsw           # HNSW from the cache
    python bench/hierarchy_sweep.py --dataset clustered --n 1000000                       # no HNSW above 100K
    python bench/hierarchy_sweep.py --dataset minilm --n 100000 --reuse-hnsw --probes 32,64,128,160,192
    python bench/hierarchy_sweep.py --dataset minilm --n 100000 --reuse-hnsw --packed --probes 24,32 --beams 32 \
        --efs 40,48,56,64 --no-ivf                                                    # matched recall, packed

What it does, on n unit vectors of d = 384 and --queries fresh queries (100 by default):
  * exact truth: engramdb.kernels.topk(Q, X, 10, "cosine") (recall@10 is measured against it);
  * builds, each timed once with both cores: the tree (CentroidTree.build, leaf_size 64, fanout 32;
    its k-means kernels use their automatic thread count), usearch HNSW (Index(ndim, metric="cos",
    dtype="f32"), library defaults connectivity 16 / expansion_add 128, add(threads=cpu count); not
    above 100,000 vectors, where it takes minutes, or with --no-hnsw) and faiss IndexIVFFlat (inner
    product, nlist = round(sqrt(n)), train + add on X with OpenMP at the cpu count);
  * searches every query alone, one thread everywhere (tree kernels threads=1, usearch
    search(threads=1), faiss.omp_set_num_threads(1)), over a grid: tree probe x beam, HNSW
    expansion_search, IVF nprobe (--probes/--beams/--efs/--nprobes change it). Latency is, per query,
    the fastest of --reps passes, averaged over the queries. E-computations are the vectors scored against a query: tree centroids + memories
    (SearchStats.e_computations), IVF nlist + the sizes of the probed lists, HNSW usearch's own
    computed_distances count;
  * prints the grid, then for each method the setting reaching recall >= --target with the fewest
    E-computations (tree, IVF) or the lowest latency (HNSW), and the build times with their ratios.
--incremental also builds a tree on the first 1% and inserts the rest in batches of 1,000 (inserts/s),
then compares its recall with the batch-built tree's at every tree setting.

Datasets: "clustered" is bench/_data.py's recipe (1,000 Gaussian clusters, SIGMA 0.05) at any n (at
n = 100,000 it is exactly dense("clustered")); "minilm" and "locomo" are real sentence embeddings from
bench/_corpus.py, used only when its cache is already filled (this script never embeds).

The HNSW index built here is saved under ~/.cache/engramdb-bench/ (keyed by the data's hash and
the usearch version) so test_bench_hierarchy.py can search it without a build of minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _data
import engramdb.kernels as ek
from engramdb.hierarchy import CentroidTree, MatrixSource

K = 10
CACHE = Path.home() / ".cache" / "engramdb-bench"
TREE_PROBES = (1, 2, 4, 8, 16, 32)
TREE_BEAMS = (4, 8, 16, 32)
HNSW_EFS = (16, 32, 64, 128)
IVF_NPROBES = (1, 2, 4, 8, 16, 32)
HNSW_MAX_N = 100_000  # HNSW build takes ~140 s at 100K on 2 threads here; above that it is left out
INSERT_BATCH = 1_000
THREADS = os.cpu_count() or 1


class Unavailable(Exception):
    """A dataset whose cache is not filled (or that does not exist at that size)."""


# ------------------------------------------------------------------------------------------ data
def clustered(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """n rows + m queries by _data.dense("clustered")'s recipe (identical to it at n = 100,000)."""
    if n == _data.N and m <= _data.N_QUERIES:
        d = _data.dense("clustered")
        return d.X, np.ascontiguousarray(d.Q[:m])
    rng = np.random.default_rng(_data.SEED + 1)
    centers = _data._normalise(rng.standard_normal((_data.N_CENTERS, _data.D), dtype=np.float32))

    def draw(count: int) -> np.ndarray:
        labels = rng.integers(0, _data.N_CENTERS, count)
        out = np.empty((count, _data.D), np.float32)
        step = 100_000  # in chunks: one noise matrix of 1M x 384 would double the peak memory
        for a in range(0, count, step):
            pts = centers[labels[a : a + step]]
            pts += _data.SIGMA * rng.standard_normal(pts.shape, dtype=np.float32)
            out[a : a + step] = _data._normalise(pts)
        return out

    X = draw(n)
    Q = draw(m)
    return X, Q


def corpus_reason() -> str | None:
    """Why the real-text vectors cannot be used (None when bench/_corpus.py's cache is filled)."""
    try:
        import _corpus
    except ImportError as exc:
        return f"bench/_corpus.py is not importable ({exc})"
    for name in ("minilm-100000.npy", "minilm-queries-100000-200.npy"):
        if not (_corpus.CACHE / name).exists():
            return (
                f"{_corpus.CACHE / name} is not cached yet (bench/_corpus.py fills it; embedding takes long)"
            )
    return None


def locomo_reason() -> str | None:
    try:
        import _corpus
    except ImportError as exc:
        return f"bench/_corpus.py is not importable ({exc})"
    path = _corpus.CACHE / f"{_corpus.LOCOMO.stem}-minilm.npy"
    return None if path.exists() else f"{path} is not cached yet"


def load(dataset: str, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, 384), Q (m, 384)) float32 unit rows, C-contiguous; Unavailable when not cached."""
    if dataset == "clustered":
        return clustered(n, m)
    if dataset == "minilm":
        reason = corpus_reason()
        if reason:
            raise Unavailable(reason)
        import _corpus

        if n > 100_000:
            raise Unavailable(f"minilm has 100,000 cached vectors, not {n:,}")
        if m > 200:
            raise Unavailable(f"minilm has 200 cached queries, not {m}")
        # sentences are in a fixed hash order, so the first n of 100,000 are sentences(n), and the
        # held-out queries of 100,000 are held out of every prefix too
        X = _corpus.minilm_vectors(100_000)[:n]
        Q = _corpus.minilm_queries(200)[:m]
        return np.ascontiguousarray(X, dtype=np.float32), np.ascontiguousarray(Q, dtype=np.float32)
    if dataset == "locomo":
        reason = locomo_reason()
        if reason:
            raise Unavailable(reason)
        import _corpus

        V = np.asarray(_corpus.locomo_vectors(), dtype=np.float32)
        perm = np.random.default_rng(_data.SEED).permutation(len(V))  # m turns held out as queries
        return np.ascontiguousarray(V[np.sort(perm[m:])]), np.ascontiguousarray(V[np.sort(perm[:m])])
    raise ValueError(dataset)


def exact(X: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return np.asarray(ek.topk(Q, X, K, "cosine").indices)


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    return _data.recall_at_k([np.asarray(f, np.int64) for f in found], truth)


# ---------------------------------------------------------------------------------------- builds
def build_tree(
    X: np.ndarray, *, leaf_size: int = 64, fanout: int = 32, pca_dims: int | None = None, seed: int = 0
) -> tuple[CentroidTree, MatrixSource, float]:
    src = MatrixSource(X)
    t0 = time.perf_counter()
    tree = CentroidTree.build(
        src, np.arange(len(X)), leaf_size=leaf_size, fanout=fanout, pca_dims=pca_dims, seed=seed
    )
    return tree, src, time.perf_counter() - t0


def build_incremental(
    X: np.ndarray,
    *,
    first: float = 0.01,
    batch: int = INSERT_BATCH,
    leaf_size: int = 64,
    fanout: int = 32,
    seed: int = 0,
) -> tuple[CentroidTree, MatrixSource, float, float]:
    """(tree, source, build seconds of the first part, insert seconds of the rest)."""
    src = MatrixSource(X)
    n0 = max(2 * leaf_size, int(len(X) * first))
    t0 = time.perf_counter()
    tree = CentroidTree.build(src, np.arange(n0), leaf_size=leaf_size, fanout=fanout, seed=seed)
    t1 = time.perf_counter()
    for a in range(n0, len(X), batch):
        keys = np.arange(a, min(a + batch, len(X)))
        tree.insert(src, keys, X[keys])
    return tree, src, t1 - t0, time.perf_counter() - t1


def data_key(X: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(np.asarray(X.shape, np.int64).tobytes())
    h.update(memoryview(np.ascontiguousarray(X)).cast("B"))
    return h.hexdigest()


def hnsw_cache_path(X: np.ndarray) -> Path:
    import usearch

    return CACHE / f"hnsw-{len(X)}-{data_key(X)}-usearch{usearch.__version__}-cos-f32-m16-efc128.usearch"


def build_hnsw(X: np.ndarray, *, threads: int = THREADS, save: bool = True) -> tuple[Any, float]:
    """usearch HNSW over X (keys = row numbers), timed; saved to the cache for later searches."""
    from usearch.index import Index

    index = Index(ndim=X.shape[1], metric="cos", dtype="f32")
    t0 = time.perf_counter()
    index.add(np.arange(len(X), dtype=np.uint64), X, threads=threads)
    seconds = time.perf_counter() - t0
    if save:
        path = hnsw_cache_path(X)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        index.save(str(tmp))
        tmp.replace(path)
    return index, seconds


def cached_hnsw(X: np.ndarray) -> tuple[Any, float | None]:
    """(index, build seconds or None when it came from the cache)."""
    from usearch.index import Index

    path = hnsw_cache_path(X)
    if path.exists():
        index = Index.restore(str(path))
        if index is not None and len(index) == len(X):
            return index, None
    return build_hnsw(X)


def build_ivf(X: np.ndarray, *, nlist: int | None = None, threads: int = THREADS) -> tuple[Any, float]:
    """faiss IndexIVFFlat (inner product) with nlist = round(sqrt(n)) lists, train + add timed."""
    import faiss

    nlist = nlist or max(1, round(math.sqrt(len(X))))
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        quantizer = faiss.IndexFlatIP(X.shape[1])
        index = faiss.IndexIVFFlat(quantizer, X.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(X)
        index.add(X)
        seconds = time.perf_counter() - t0
    finally:
        faiss.omp_set_num_threads(before)
    return index, seconds


def ivf_list_sizes(index: Any) -> np.ndarray:
    inv = index.invlists
    return np.array([inv.list_size(i) for i in range(index.nlist)], np.int64)


# ---------------------------------------------------------------------------------------- search
# A searcher maps one query (d,) to (keys, E-computations or None).
Searcher = Callable[[np.ndarray], tuple[np.ndarray, "int | None"]]


def tree_searcher(tree: CentroidTree, src: MatrixSource, probe: int, beam: int) -> Searcher:
    def f(q: np.ndarray) -> tuple[np.ndarray, int | None]:
        keys, _, stats = tree.search(src, q, K, probe=probe, beam=beam)
        return keys, stats.e_computations

    return f


def hnsw_searcher(index: Any, ef: int) -> Searcher:
    def f(q: np.ndarray) -> tuple[np.ndarray, int | None]:
        index.expansion_search = ef
        m = index.search(q, K, threads=1)
        return m.keys, int(m.computed_distances)

    return f


def ivf_searcher(index: Any, nprobe: int, sizes: np.ndarray | None = None) -> Searcher:
    sizes = ivf_list_sizes(index) if sizes is None else sizes

    def f(q: np.ndarray) -> tuple[np.ndarray, int | None]:
        index.nprobe = nprobe
        _, ids = index.search(q[None, :], K)
        return ids[0], None

    def e(Q: np.ndarray) -> np.ndarray:
        _, lists = index.quantizer.search(Q, nprobe)
        return index.nlist + sizes[lists].sum(axis=1)

    f.e_batch = e  # type: ignore[attr-defined]
    return f


def exact_searcher(X: np.ndarray) -> Searcher:
    def f(q: np.ndarray) -> tuple[np.ndarray, int | None]:
        return ek.topk(q, X, K, "cosine", threads=1).indices, len(X)

    return f


@dataclass
class Point:
    method: str
    setting: str
    recall: float
    e_mean: float | None  # E-computations per query (mean)
    e_frac: float | None  # e_mean / n
    ms: float  # mean over queries of the per-query minimum over reps
    params: dict[str, Any] = field(default_factory=dict)


def measure(
    method: str,
    setting: str,
    fn: Searcher,
    Q: np.ndarray,
    truth: np.ndarray,
    n: int,
    *,
    reps: int = 3,
    params: dict[str, Any] | None = None,
) -> Point:
    """Recall, E-computations and single-query latency of fn over the queries (one at a time)."""
    for q in Q[: min(len(Q), 10)]:  # warm up
        fn(q)
    best = np.full(len(Q), np.inf)
    found: list[np.ndarray] = []
    es: list[int | None] = []
    for r in range(reps):
        for i, q in enumerate(Q):
            t0 = time.perf_counter()
            keys, e = fn(q)
            best[i] = min(best[i], time.perf_counter() - t0)
            if r == 0:
                found.append(np.asarray(keys, np.int64))
                es.append(e)
    e_batch = getattr(fn, "e_batch", None)
    if e_batch is not None:
        e_mean: float | None = float(np.mean(e_batch(Q)))
    elif all(e is not None for e in es):
        e_mean = float(np.mean([float(e) for e in es if e is not None]))
    else:
        e_mean = None
    return Point(
        method,
        setting,
        recall(found, truth),
        e_mean,
        None if e_mean is None else e_mean / n,
        1e3 * float(best.mean()),
        params or {},
    )


def pick(points: list[Point], target: float, by: str) -> Point | None:
    """The setting reaching recall >= target with the least `by` ("e" or "ms"); ties go to latency."""
    ok = [p for p in points if p.recall >= target]
    if not ok:
        return None
    if by == "e" and all(p.e_mean is not None for p in ok):
        return min(ok, key=lambda p: (p.e_mean, p.ms))
    return min(ok, key=lambda p: p.ms)


# ---------------------------------------------------------------------------------------- report
def fmt_e(p: Point) -> str:
    return "n/a" if p.e_mean is None else f"{p.e_mean:,.0f} ({100 * p.e_frac:.2f}%)"  # type: ignore[operator]


def print_points(points: list[Point]) -> None:
    print(f"{'method':<10} {'setting':<20} {'recall@10':>9} {'E/query (% of n)':>22} {'ms/query':>9}")
    for p in points:
        print(f"{p.method:<10} {p.setting:<20} {p.recall:>9.3f} {fmt_e(p):>22} {p.ms:>9.3f}")


def tree_shape(tree: CentroidTree) -> str:
    per = tree.nodes_per_level()
    leaves = tree.leaves()
    sizes = np.array([len(tree.members[int(i)]) for i in leaves])
    return (
        f"height {tree.height}, nodes per level {per}, leaf size mean {sizes.mean():.1f} "
        f"min {sizes.min()} max {sizes.max()}"
    )


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def git_head() -> str:
    import subprocess

    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(
            ["git", "-C", root, "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--", "python", "src"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (out[:90] or "?") + (" (+ uncommitted changes)" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=("clustered", "minilm", "locomo"), default="clustered")
    ap.add_argument("--n", type=int, default=100_000, help="vectors (10000, 100000, 1000000; locomo: all)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--target", type=float, default=0.95, help="recall@10 to reach")
    ap.add_argument("--reps", type=int, default=3, help="timed passes over the queries (fastest kept)")
    ap.add_argument("--leaf-size", type=int, default=64)
    ap.add_argument("--fanout", type=int, default=32)
    ap.add_argument("--pca-dims", type=int, default=None, help="cluster the tree in this many PCA dims")
    ap.add_argument("--probes", type=_ints, default=TREE_PROBES, help="tree probe grid, e.g. 1,2,4")
    ap.add_argument("--beams", type=_ints, default=TREE_BEAMS, help="tree beam grid")
    ap.add_argument("--efs", type=_ints, default=HNSW_EFS, help="HNSW expansion_search grid")
    ap.add_argument("--nprobes", type=_ints, default=IVF_NPROBES, help="IVF nprobe grid")
    ap.add_argument("--no-hnsw", action="store_true", help="leave HNSW out (its build takes minutes)")
    ap.add_argument("--packed", action="store_true", help="search the tree with packed leaves (CentroidTree.pack)")
    ap.add_argument(
        "--reuse-hnsw",
        action="store_true",
        help="search the HNSW index a previous run cached for these vectors (its build is not timed)",
    )
    ap.add_argument("--no-ivf", action="store_true")
    ap.add_argument("--exact", action="store_true", help="also time the exact engramdb scan (threads=1)")
    ap.add_argument(
        "--incremental",
        action="store_true",
        help="also build by inserts (1%% first, then batches of 1,000) and compare recall",
    )
    ap.add_argument("--json", help="write every measured point and the build times here")
    args = ap.parse_args(argv)

    try:
        import faiss
    except ImportError:  # pragma: no cover
        faiss = None
    if faiss is not None:
        faiss.omp_set_num_threads(1)

    try:
        X, Q = load(args.dataset, args.n, args.queries)
    except Unavailable as exc:
        print(f"dataset {args.dataset} unavailable: {exc}", file=sys.stderr)
        return 2
    n = len(X)
    print(f"# engramdb {git_head()}")
    print(
        f"# {args.dataset}: {n:,} x {X.shape[1]} vectors, {len(Q)} queries, top-{K}, target recall "
        f"{args.target}; load average {os.getloadavg()[0]:.2f}; threads: builds {THREADS}, searches 1"
    )
    t0 = time.perf_counter()
    truth = exact(X, Q)
    print(f"exact truth: {time.perf_counter() - t0:.2f} s")

    builds: dict[str, float] = {}
    points: list[Point] = []
    tree, src, builds["tree"] = build_tree(
        X, leaf_size=args.leaf_size, fanout=args.fanout, pca_dims=args.pca_dims
    )
    print(f"tree build: {builds['tree']:.2f} s; {tree_shape(tree)}")
    if args.packed:
        t0 = time.perf_counter()
        held = tree.pack(src)
        print(f"packed leaves: {held / 1e6:.0f} MB in {time.perf_counter() - t0:.2f} s (tree rows below are packed)")
    for probe in args.probes:
        for beam in args.beams:
            points.append(
                measure(
                    "tree",
                    f"probe={probe} beam={beam}",
                    tree_searcher(tree, src, probe, beam),
                    Q,
                    truth,
                    n,
                    reps=args.reps,
                    params={"probe": probe, "beam": beam},
                )
            )
    if args.exact:
        points.append(measure("exact", "threads=1", exact_searcher(X), Q, truth, n, reps=1))

    hnsw_note = ""
    if args.no_hnsw or n > HNSW_MAX_N:
        hnsw_note = "--no-hnsw" if args.no_hnsw else f"n > {HNSW_MAX_N:,}"
    else:
        try:
            if args.reuse_hnsw:
                index, seconds = cached_hnsw(X)
            else:
                index, seconds = build_hnsw(X)
        except ImportError:  # pragma: no cover
            hnsw_note = "usearch not installed"
        else:
            if seconds is None:
                print(f"hnsw: cached index {hnsw_cache_path(X).name} (build not timed in this run)")
            else:
                builds["hnsw"] = seconds
                print(f"hnsw build: {seconds:.2f} s (threads={THREADS})")
            for ef in args.efs:
                points.append(
                    measure(
                        "hnsw",
                        f"ef={ef}",
                        hnsw_searcher(index, ef),
                        Q,
                        truth,
                        n,
                        reps=args.reps,
                        params={"ef": ef},
                    )
                )
            del index
    if faiss is not None and not args.no_ivf:
        ivf, builds["ivf"] = build_ivf(X)
        sizes = ivf_list_sizes(ivf)
        print(f"ivf build (nlist={ivf.nlist}, train + add): {builds['ivf']:.2f} s (threads={THREADS})")
        for nprobe in args.nprobes:
            if nprobe <= ivf.nlist:
                points.append(
                    measure(
                        "ivf",
                        f"nprobe={nprobe}",
                        ivf_searcher(ivf, nprobe, sizes),
                        Q,
                        truth,
                        n,
                        reps=args.reps,
                        params={"nprobe": nprobe, "nlist": int(ivf.nlist)},
                    )
                )

    print()
    print_points(points)
    print()
    print(f"## at recall@10 >= {args.target} ({args.dataset}, n = {n:,})")
    best: dict[str, Point | None] = {}
    for method, by in (("tree", "e"), ("tree", "ms"), ("hnsw", "ms"), ("ivf", "e"), ("exact", "ms")):
        mine = [p for p in points if p.method == method]
        if not mine:
            continue
        p = pick(mine, args.target, by)
        label = f"{method} ({'fewest E' if by == 'e' else 'fastest'})"
        best[f"{method}_{by}"] = p
        if p is None:
            top = max(mine, key=lambda x: x.recall)
            print(f"{label:<20} not reached (best recall {top.recall:.3f} at {top.setting})")
        else:
            print(f"{label:<20} {p.setting:<20} recall {p.recall:.3f}  E {fmt_e(p):>18}  {p.ms:.3f} ms/query")
    tref = best.get("tree_ms")
    for peer in ("hnsw_ms", "ivf_e", "exact_ms"):
        pp = best.get(peer)
        if tref is not None and pp is not None:
            print(f"latency {peer.split('_')[0]} / tree (fastest settings at target): {pp.ms / tref.ms:.2f}x")
    if hnsw_note:
        print(f"hnsw: left out ({hnsw_note})")
    print()
    print("## build (s)")
    for name, s in builds.items():
        ratio = "" if name == "tree" else f"   tree / {name} = {builds['tree'] / s:.3f}"
        print(f"{name:<6} {s:8.2f}{ratio}")

    incremental: dict[str, Any] = {}
    if args.incremental:
        itree, isrc, t_first, t_ins = build_incremental(X, leaf_size=args.leaf_size, fanout=args.fanout)
        n0 = max(2 * args.leaf_size, int(n * 0.01))
        rate = (n - n0) / t_ins
        print()
        print(
            f"## incremental: build on the first {n0:,} ({t_first:.2f} s), insert {n - n0:,} in batches of "
            f"{INSERT_BATCH:,}: {t_ins:.2f} s = {rate:,.0f} inserts/s"
        )
        print(f"incremental tree: {tree_shape(itree)}")
        print(
            f"{'setting':<20} {'recall batch':>12} {'recall incr':>12} {'diff (pts)':>10} "
            f"{'E batch %':>9} {'E incr %':>9} {'ms batch':>9} {'ms incr':>9}"
        )
        rows = []
        for p in [p for p in points if p.method == "tree"]:
            fn = tree_searcher(itree, isrc, p.params["probe"], p.params["beam"])
            q = measure("tree-incr", p.setting, fn, Q, truth, n, reps=args.reps, params=p.params)
            rows.append(q)
            print(
                f"{p.setting:<20} {p.recall:>12.3f} {q.recall:>12.3f} {100 * (q.recall - p.recall):>10.1f} "
                f"{100 * p.e_frac:>9.2f} {100 * q.e_frac:>9.2f} {p.ms:>9.3f} {q.ms:>9.3f}"
            )  # type: ignore[operator]
        incremental = {
            "first": n0,
            "first_build_s": t_first,
            "insert_s": t_ins,
            "inserts_per_s": rate,
            "shape": tree_shape(itree),
            "points": [asdict(q) for q in rows],
        }

    if args.json:
        out = {
            "git_head": git_head(),
            "dataset": args.dataset,
            "n": n,
            "queries": len(Q),
            "target": args.target,
            "builds": builds,
            "tree_shape": tree_shape(tree),
            "points": [asdict(p) for p in points],
            "incremental": incremental,
            "args": vars(args),
        }
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
