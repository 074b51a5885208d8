"""Which instruction set the kernels run on (N6), and the memory-read ceiling of a scan."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from .. import _core
from .. import _validate as v


def read_bandwidth_probe(matrix: np.ndarray, *, threads: int | None = 1) -> float:
    """Sum every element with a plain streaming read: the memory-bandwidth ceiling of a scan.

    Time it beside `topk` with the same `threads` to see how close the scan runs to the memory.
    """
    m = v.matrix("matrix", matrix, (np.float32,), ndim=matrix.ndim if isinstance(matrix, np.ndarray) else 2)
    return float(_core.stream_sum(m, v.check_threads(threads)))


def active_isa() -> str:
    """The instruction set the kernels run on now."""
    return str(_core.isa())


def available_isas() -> list[str]:
    """Instruction sets this CPU can run, best first."""
    return list(_core.available_isas())


@contextlib.contextmanager
def use_isa(name: str) -> Iterator[str]:
    """Run the enclosed code on instruction set `name` (process-wide), then restore the previous one.

    Raises ValueError if `name` is not compiled in or not supported by this CPU.
    """
    before = active_isa()
    if not _core.set_isa(name):
        raise ValueError(f"instruction set {name!r} is not available here (available: {available_isas()})")
    try:
        yield name
    finally:
        _core.set_isa(before)


def compiled_isas() -> list[str]:
    """Instruction sets compiled into this build, best first."""
    return list(_core.compiled_isas())


def forced_isa() -> str | None:
    """The ENGRAMDB_ISA override as given, or None."""
    return _core.forced_isa() or None


def forced_note() -> str | None:
    """Why the ENGRAMDB_ISA override was not honoured, or None."""
    return _core.forced_note() or None
