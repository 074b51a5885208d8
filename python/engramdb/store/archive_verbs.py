"""Archival (J7): old memories' content moved to archive files, vectors and trees kept, and back.

Mixed into `Store`: the verbs run under the writer's lock, checkpoint first (archival rewrites
committed segments), and leave the work to storage/rewrites.py; where a namespace has a centroid
tree, whole leaves go together and the tree records which are archived.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..hierarchy.tree import CentroidTree
from ..model.errors import StoreError
from ..model.memory import as_utc, micros
from ..storage import rewrites

if TYPE_CHECKING:
    from .facade import Store


class Archiving:
    """Archival of old memories' text (J7), behind `db.lifecycle`."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def archive(self, older_than: datetime | None = None, *, namespace: str | None = None,
                ids: Iterable[str] | None = None) -> dict[str, Any]:
        """`LifecycleVerbs.archive`."""
        if (older_than is None) == (ids is None):
            raise ValueError("archive needs older_than= or ids=, not both")
        engine = self._db._engine
        if ids is not None:
            wanted = set([ids] if isinstance(ids, str) else ids)
            with engine.writing():
                if self._db.path is None:
                    raise StoreError("archive needs a store folder: the archive is a file")
                engine.checkpoint()
                view = engine.view
                unknown = sorted(i for i in wanted if view.loc_of(i) is None)
                if unknown:
                    raise StoreError(f"no memory with id {unknown[0]!r} to archive")
                name = rewrites.archive(engine, {i for i in wanted if i not in view.archived})
                if name:
                    self._db._indexes.text_changed(engine.view)
                return {"memories": len(wanted - set(view.archived)) if name else 0, "leaves": 0, "file": name}
        cutoff = micros(as_utc("older_than", older_than))  # type: ignore[arg-type]
        with engine.writing():
            if self._db.path is None:
                raise StoreError("archive needs a store folder: the archive is a file")
            engine.checkpoint()
            view = engine.view
            current = list(view.current())
            locs = [loc for _, loc in current]
            spaces = view.namespaces_at(locs) if namespace is not None else [None] * len(locs)
            old = {mid for (mid, _), learned, ns in zip(current, view.column_at("learned_at", locs).tolist(), spaces)
                   if learned < cutoff and mid not in view.archived and (namespace is None or ns == namespace)}
            chosen: set[str] = set()
            leaves: list[tuple[CentroidTree, int]] = []
            treed: set[str] = set()
            main = self._db.schema[self._db.schema.main]
            tree = self._db._indexes.tree(main, view) if main.kind == "dense" and self._db.admin.index_kind == "tree" else None
            if tree is not None:
                chosen, leaves, treed = tree.old_leaves(view, old, set(view.archived), namespace)
            for mid in old:
                loc = view.loc_of(mid)
                if loc is not None and view.namespace_at(loc) not in treed:
                    chosen.add(mid)
            name = rewrites.archive(engine, chosen)
            if name is None:
                return {"memories": 0, "leaves": 0, "file": None}
            self._db._indexes.text_changed(engine.view)
            if tree is not None:
                tree.set_archived(leaves)
            return {"memories": len(chosen), "leaves": len(leaves), "file": name}

    def unarchive(self, ids: Iterable[str] | None = None) -> int:
        """`LifecycleVerbs.unarchive`."""
        engine = self._db._engine
        with engine.writing() as view:
            which = set(view.archived) if ids is None else set(ids)
            unknown = sorted(which - set(view.archived))
            if unknown:
                raise StoreError(f"not archived: {unknown[:5]}")
            if not which or self._db.path is None:
                return 0
            engine.checkpoint()
            n = rewrites.unarchive(engine, which)
            self._db._indexes.text_changed(engine.view)
            main = self._db.schema[self._db.schema.main]
            if main.kind == "dense" and self._db.admin.index_kind == "tree":
                self._db._indexes.tree(main, engine.view).set_archived(None)
            return n

    def is_archived(self, id: str) -> bool:
        """`LifecycleVerbs.is_archived`."""
        return id in self._db._engine.view.archived
