"""What a store's open does so that a new process's first calls do not pay for the process's
start (issue 26: the first context after open, the first add)."""

from __future__ import annotations

import gc
from collections.abc import Mapping

from ..spaces.hdc import BinaryHDCEmbedder
from ..spaces.protocol import Embedder

_IMPORTS_AGED = False


def age_the_imports() -> None:
    """Once per process, at the first open (its store's own objects not made yet): one
    middle-generation collection, so the ~40,000 young objects of the package's imports are old
    and the collector's next such pass does not scan them all inside the first request (8-12 ms of
    a first context at 100,000 memories on a 2-core machine). Not when the program has switched the
    collector off; and never a store's own objects: made old, a closed store would wait for a full
    collection (found by the stop 44 adversary pass when every open collected)."""
    global _IMPORTS_AGED
    if not _IMPORTS_AGED:
        _IMPORTS_AGED = True
        if gc.isenabled():
            gc.collect(1)


def prepare_for_writes(embedders: Mapping[str, Embedder]) -> None:
    """What a writer's first add needs and a reader never does: the HDC projection (35-60 ms),
    made at a writer's open rather than inside that add or, on the worker, beside the first
    request. Only the package's own embedders: a caller's may have a method of that name that
    means something else."""
    for emb in embedders.values():
        if isinstance(emb, BinaryHDCEmbedder):
            emb.prepare()
