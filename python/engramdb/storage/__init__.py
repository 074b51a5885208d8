"""Storage: the only layer that touches the store folder (segments, WAL, manifest, lock, edge and
archive files, derived-file I/O, export and import) and the snapshots (`View`) every read takes.

`Engine` and `View` are loaded on first use, so a module of this package that needs neither (the
spool, which a hook writes in milliseconds) is imported without Arrow or numpy."""

from __future__ import annotations

from typing import Any

__all__ = ["Engine", "View"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from .engine import Engine

        return Engine
    if name == "View":
        from .view import View

        return View
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
