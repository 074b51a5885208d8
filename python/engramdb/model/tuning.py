"""`Tuning`: the engine's thresholds and sizes, one object passed through `engramdb.open`.

Every number here trades speed, memory or recall and was chosen by a benchmark (bench/RESULTS.md
names which). They are settings of one store, not module constants: tests and callers give a
store its own (`engramdb.open(path, tuning=Tuning(tree_min_rows=500))`) without touching others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Tuning:
    """Thresholds and sizes of one store (all optional; the defaults are the measured ones).

    - `checkpoint_rows`: WAL rows folded into a segment file at this size (and on close); a
      batch at least this large is written straight to a segment file.
    - `tree_min_rows`: a namespace gets a dense index (tree or HNSW) from this many committed
      memories; below it an exact scan is faster (bench/test_bench_hierarchy.py).
    - `tree_leaf_size`, `tree_fanout`: memories per leaf and children per node of a new tree.
    - `tree_probe`, `tree_beam`: leaves scanned per query and nodes kept per level (recall vs
      speed: bench/RESULTS.md "hierarchy"). 32 / 32 reach recall@10 >= 0.95 on real text (MiniLM
      vectors of 100,000 sentences; 8 / 16 gave 0.86 there, though 0.996 on clustered data).
    - `tree_rebuild_growth`: a tree grown to this multiple of its last batch build is rebuilt.
    - `hot_rows`: each namespace's newest committed memories, scanned directly on every index
      search, so a memory added a moment ago is found whatever leaf it joined (J5).
    - `search_threads`: threads one search may use for its independent methods (the dense index
      and BM25 of a hybrid search, say). 1 (default): every method on the calling thread, so each
      core answers its own query when searches run side by side. 2: a search that runs alone
      overlaps them on a small pool (sometimes lower latency one query at a time, on a shared
      2-core machine no better on the median); searches side by side still take one thread each
      (bench/test_bench_concurrency.py measures both).
    - `max_content_bytes`: the largest content a memory may hold, in UTF-8 bytes (1 MiB; every
      space holds a vector of it and the token space one per word: split long documents).
    - `progress_min`: texts in one embed call from which a progress bar is shown (on a terminal).
    - `embed_chunk`: texts per embed call when a long batch is embedded in chunks.
    - `search_cache`: repeated searches kept per store and reused on the same snapshot (K5; a
      write, or the clock passing a memory's validity boundary, retires them); 0 turns it off
      (what the latency benchmarks do, to time the search itself).
    - `background`: upkeep a request leaves behind (the topics of a namespace that moved, the
      trees of a namespace that crossed `tree_min_rows`, the indexes after a checkpoint) runs on
      the store's own thread, paced (store/background.py), so no search, context or add waits on
      it. False: on the caller's thread, when asked (`topics()`, `build_index()`, `close()`) and
      at each checkpoint: what a short-lived process such as a hook wants.
    """

    checkpoint_rows: int = 4_096
    tree_min_rows: int = 20_000
    tree_leaf_size: int = 64
    tree_fanout: int = 32
    tree_probe: int = 32
    tree_beam: int = 32
    tree_rebuild_growth: float = 2.0
    hot_rows: int = 100
    search_threads: int = 1
    max_content_bytes: int = 1 << 20
    progress_min: int = 5_000
    embed_chunk: int = 2_048
    search_cache: int = 256
    background: bool = True

    def __post_init__(self) -> None:
        least = {"tree_leaf_size": 2, "tree_fanout": 2, "hot_rows": 0, "search_cache": 0}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "background":
                if not isinstance(value, bool):
                    raise ValueError(f"tuning background must be True or False, got {value!r}")
                continue
            if f.name == "tree_rebuild_growth":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value <= 1:
                    raise ValueError(f"tuning {f.name} must be a number > 1, got {value!r}")
                continue
            if f.name == "search_threads" and value not in (1, 2):
                raise ValueError(f"tuning search_threads must be 1 or 2, got {value!r}")
            low = least.get(f.name, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"tuning {f.name} must be an int >= {low}, got {value!r}")

    def with_changes(self, **changes: Any) -> Tuning:
        """A copy with some settings replaced (checked like the constructor's)."""
        return replace(self, **changes)
