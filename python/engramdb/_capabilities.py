"""What the native core runs on: `engramdb.capabilities()`."""

from __future__ import annotations

import os
import platform
from typing import Any

from . import _core
from ._version import __version__


def capabilities() -> dict[str, Any]:
    """Describe the native core: active instruction set and why, what is compiled and runnable.

    Keys: `isa` (active), `available` (runnable here, best first), `compiled` (in this build),
    `forced` (the ENGRAMDB_ISA override or None), `note` (why an override was not honoured, or
    None), `machine`, `version`, `kernels` (the kernel families), `gil_released` (always True).
    """
    return {
        "isa": _core.isa(),
        "available": list(_core.available_isas()),
        "compiled": list(_core.compiled_isas()),
        "forced": _core.forced_isa() or None,
        "note": _core.forced_note() or None,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "version": __version__,
        "kernels": ["dense", "centroids", "sparse", "hamming", "maxsim"],
        "gil_released": True,
    }
