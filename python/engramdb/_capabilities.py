"""What the native core runs on: `engramdb.capabilities()`."""

from __future__ import annotations

import os
import platform
from typing import Any

from ._version import __version__
from .kernels import dispatch


def capabilities() -> dict[str, Any]:
    """Describe the native core: active instruction set and why, what is compiled and runnable.

    Keys: `isa` (active), `available` (runnable here, best first), `compiled` (in this build),
    `forced` (the ENGRAMDB_ISA override or None), `note` (why an override was not honoured, or
    None), `machine`, `version`, `kernels` (the kernel families), `gil_released` (always True).
    """
    return {
        "isa": dispatch.active_isa(),
        "available": dispatch.available_isas(),
        "compiled": dispatch.compiled_isas(),
        "forced": dispatch.forced_isa(),
        "note": dispatch.forced_note(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "version": __version__,
        "kernels": ["dense", "centroids", "sparse", "hamming", "maxsim"],
        "gil_released": True,
    }
