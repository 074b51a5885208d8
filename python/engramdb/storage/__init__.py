"""Storage: the only layer that touches the store folder (segments, WAL, manifest, lock, edge and
archive files, derived-file I/O, export and import) and the snapshots (`View`) every read takes."""

from .engine import Engine
from .view import View

__all__ = ["Engine", "View"]
