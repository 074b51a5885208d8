"""What a hook process (and a hooks' resident reader) sets up before it imports the engine.

pyarrow imports pandas, when it is installed, the first time it converts a Python list or casts a
column (its pandas shim looks for pandas objects): 150-400 ms on a 2-core machine, in every hook
process that opens a store, for a library engramdb never uses. A process that runs nothing but a
hook (`engramdb hook EVENT`, `python -m engramdb.agents.resident`) therefore makes `import pandas`
fail there, so pyarrow records "no pandas" and goes on without it. Nothing else is changed, and no
other process is: a user's own program that imports engramdb keeps pandas as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

UNUSED = ("pandas",)  # top-level packages a hook process never needs


class _Unused(importlib.abc.MetaPathFinder):
    """Refuses the packages of UNUSED (and their submodules) as if they were not installed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] in UNUSED:
            raise ModuleNotFoundError(f"{fullname} is not used by an engramdb hook process", name=fullname)
        return None


def without_unused_imports() -> None:
    """Make this process's `import pandas` fail (see the module docstring); does nothing when pandas
    is imported already (a hook run inside a process that uses it) or when this was done before."""
    if any(name in sys.modules for name in UNUSED) or any(isinstance(f, _Unused) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Unused())


__all__ = ["without_unused_imports"]
