"""The names `Store` had before its verbs were grouped (0.1): each still works for one release,
with a DeprecationWarning naming its new home. See CHANGELOG.md."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store

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
    "last_dedup": ("_last_dedup", "the `.dedup` of what add_many returns"),
    "last_contradictions": ("_last_contradictions", "the `.contradictions` of what add_many returns"),
    "last_spool": ("_last_spool", "stats()['spool'] (or what db.admin.ingest_spool() returns)"),
}


def moved(db: Store, name: str) -> Any:
    """The attribute `name` under its new home, with a DeprecationWarning; AttributeError for a
    name that never was."""
    if name in MOVED:
        facet, new = MOVED[name]
        warnings.warn(f"Store.{name} is now Store.{facet}.{new} (the old name goes in the next release)",
                      DeprecationWarning, stacklevel=3)
        return getattr(getattr(db, facet), new)
    if name == "get_all":
        warnings.warn("Store.get_all(ns, limit=n) is now list(Store.list(ns, limit=n)) (the old name goes in the "
                      "next release)", DeprecationWarning, stacklevel=3)
        return lambda namespace, *, filters=None, limit=100: list(db.list(namespace, filters=filters, limit=limit))
    if name in LAST:
        private, instead = LAST[name]
        warnings.warn(f"Store.{name} is deprecated: use {instead}", DeprecationWarning, stacklevel=3)
        return db.__dict__.get(private)
    raise AttributeError(f"{type(db).__name__!r} object has no attribute {name!r}")


__all__ = ["LAST", "MOVED", "moved"]
