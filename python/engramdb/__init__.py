"""engramdb: an embeddable long-term memory engine for AI agents, with a C++ core.

The store arrives in a later release; today the package ships its native kernels
(`engramdb.kernels`) and reports what they run on (`engramdb.capabilities()`).
"""

from __future__ import annotations

from . import kernels
from ._capabilities import capabilities
from ._version import __version__

__all__ = ["__version__", "capabilities", "kernels"]
