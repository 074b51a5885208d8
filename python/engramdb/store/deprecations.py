"""The names `Store` had before its verbs were grouped (0.1): each still works for one release,
with a DeprecationWarning naming its new home. See CHANGELOG.md."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .facade import Store

# old Store attribute -> (facet, its name there); a facet "" is the store itself
MOVED: dict[str, tuple[str, str]] = {
    "topic": ("topics", "get"),
    "themes": ("topics", "themes"),
    "divergence": ("topics", "divergence"),
    "merge_concepts": ("topics", "merge"),
    "voting_spaces": ("topics", "spaces"),
    "topics_state": ("topics", "state"),
    "importance_log": ("importance", "log"),
    "update_importance": ("importance", "refresh"),
    "tiers": ("importance", "tiers"),
    "pack": ("importance", "pack"),
    "consume_curiosity": ("curiosity", "consume"),
    **{name: ("lifecycle", name) for name in (
        "consolidate", "dream", "forget_concept", "forget_proposals", "confirm_forgotten", "purge_forgotten",
        "archive", "unarchive", "is_archived", "resolve_contradictions")},
    **{name: ("admin", name) for name in (
        "checkpoint", "compact", "build_index", "backup", "export", "import_", "snapshot", "settle", "dashboard",
        "ingest_spool", "infer_edges", "tree_recall", "type_clusters", "index_kind")},
}
# store-wide "last result" fields: the reports now come back from the call that made them
LAST: dict[str, tuple[str, str]] = {
    "last_dedup": ("_dedup_report", "the `.dedup` of what add_many returns"),
    "last_contradictions": ("_contradiction_report", "the `.contradictions` of what add_many returns"),
    "last_spool": ("_spool_report", "stats()['spool'] (or what db.admin.ingest_spool() returns)"),
}


class _Moved:
    """An old name on `Store` (the class): `db.<old>` warns and gives `db.<facet>.<new>`. A
    descriptor rather than `__getattr__`, so the name also resolves on the class (a subclass's
    `super().<old>()`, `mock.patch.object(Store, "<old>")`); it is not a method of `Store` (the
    class gives the descriptor itself) and type checkers never see it (it is set by `install`)."""

    def __init__(self, old: str, facet: str, new: str) -> None:
        self.old, self.facet, self.new = old, facet, new

    def __get__(self, db: Store | None, owner: type | None = None) -> Any:
        if db is None:
            return self
        # stacklevel 2: the line that used the old name (the interpreter calls __get__ from it)
        warnings.warn(f"Store.{self.old} is now Store.{self.facet}.{self.new} (the old name goes in the next "
                      "release)", DeprecationWarning, stacklevel=2)
        return getattr(getattr(db, self.facet), self.new)


class _Last:
    """An old store-wide "last result" field: warns, then gives what the last call recorded."""

    def __init__(self, old: str, private: str, instead: str) -> None:
        self.old, self.private, self.instead = old, private, instead

    def __get__(self, db: Store | None, owner: type | None = None) -> Any:
        if db is None:
            return self
        warnings.warn(f"Store.{self.old} is deprecated: use {self.instead}", DeprecationWarning, stacklevel=2)
        return db.__dict__.get(self.private)


class _GetAll:
    """mem0's `get_all`: the first `limit` of `list(namespace, filters=...)`, as a plain list."""

    def __get__(self, db: Store | None, owner: type | None = None) -> Any:
        if db is None:
            return self
        warnings.warn("Store.get_all(ns, limit=n) is now list(Store.list(ns, limit=n)) (the old name goes in the "
                      "next release)", DeprecationWarning, stacklevel=2)

        def get_all(namespace: str, *, filters: Any = None, limit: int = 100) -> list[Any]:
            return list(db.list(namespace, filters=filters, limit=limit))
        return get_all


def install(cls: type) -> None:
    """Put every old name on `cls` (the Store class)."""
    for old, (facet, new) in MOVED.items():
        setattr(cls, old, _Moved(old, facet, new))
    for old, (private, instead) in LAST.items():
        setattr(cls, old, _Last(old, private, instead))
    cls.get_all = _GetAll()  # type: ignore[attr-defined]


__all__ = ["LAST", "MOVED", "install"]
