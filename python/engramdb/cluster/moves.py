"""Moving a namespace between shards (`Cluster.move_namespace`, `Cluster.rebalance`).

A move copies the namespace from each shard that holds it to its new shard through the two
shards' actors, then checks the copy and only then purges the old one:

1. the old shard exports the namespace (`db.admin.export`, Arrow: every version with its
   number and times, every space's vectors, the edges), and the new shard imports it in one
   write (`db.admin.import_`: same ids, all or nothing);
2. both shards describe the namespace as its JSONL export (one line per memory, its history and
   edges); every memory of the old copy must be on the new shard as it was (or at a later
   version: written there since, after an interrupted move);
3. the old shard purges the namespace.

Run again after an interruption at any step, it finishes the move: a namespace the new shard
already holds whole is not imported twice, one the old shard no longer holds is done. A new shard
holding part of the namespace (its own writes since routing changed, mixed with the copy) is
refused, naming the namespace, and nothing is purged. This client's writes to the namespace wait
for the move; other clients must not write it meanwhile (move during a quiet period, or from the
one client that writes it).
"""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

from ..model.errors import StoreError
from .rendezvous import Router, check_namespace
from .shard import Version


class _Shards(Protocol):
    router: Router
    _moving: dict[str, threading.Lock]

    def namespaces(self) -> dict[str, dict[str, int]]: ...
    def _call(self, shard: str, method: str, *args: Any) -> Any: ...
    def _note(self, shard: str, version: Version) -> None: ...


def _kept(new: str | None, old: str) -> bool:
    """The memory `old` (a JSONL line) is on the new shard: the same line, or a later version."""
    if new is None:
        return False
    return new == old or int(json.loads(new).get("version", 0)) > int(json.loads(old).get("version", 0))


def move_namespace(c: _Shards, namespace: str, to: str | None) -> dict[str, Any]:
    """`Cluster.move_namespace` (see the module docstring)."""
    check_namespace(namespace)
    dest = c.router.check_shard(to) if to is not None else c.router.hashed(namespace)
    holders = sorted(s for s, held in c.namespaces().items() if namespace in held and s != dest)
    report: dict[str, Any] = {"namespace": namespace, "to": dest, "from": holders, "copied": 0, "purged": 0}
    lock = c._moving.setdefault(namespace, threading.Lock())
    with lock:
        try:
            for src in holders:
                old: dict[str, str] = c._call(src, "fingerprint", namespace)
                new: dict[str, str] = c._call(dest, "fingerprint", namespace)
                common = old.keys() & new.keys()
                if not common:
                    data = c._call(src, "export_namespace", namespace)
                    try:
                        copied, version = c._call(dest, "import_namespace", data)
                    except StoreError as exc:  # e.g. an id given by a caller that the new shard holds already
                        raise StoreError(f"namespace {namespace!r}: shard {dest!r} refused the copy from shard {src!r} "
                                         f"({exc}); nothing was copied or purged. Ids given by callers are unique "
                                         "per shard only: a namespace whose ids another namespace holds on the new "
                                         "shard cannot move there") from None
                    c._note(dest, version)
                    report["copied"] += copied
                    new = c._call(dest, "fingerprint", namespace)
                elif len(common) != len(old):
                    raise StoreError(f"namespace {namespace!r}: shard {dest!r} holds {len(common)} of the {len(old)} "
                                     f"memories shard {src!r} holds; a move copies a namespace whole, so it cannot go "
                                     "on (nothing was purged): export and import the missing ones by hand")
                lost = sorted(mid for mid, line in old.items() if not _kept(new.get(mid), line))
                if lost:
                    raise StoreError(f"namespace {namespace!r}: the copy on shard {dest!r} differs from shard {src!r}'s "
                                     f"for {len(lost)} memories (e.g. {lost[0]!r}); nothing was purged")
                removed, version = c._call(src, "purge_namespace", namespace)
                c._note(src, version)
                report["purged"] += removed
            if dest != c.router.hashed(namespace):
                c.router.pin(namespace, dest)
            else:
                c.router.pins.pop(namespace, None)
        finally:
            c._moving.pop(namespace, None)
    return report


def rebalance(c: _Shards) -> dict[str, Any]:
    """`Cluster.rebalance`: every namespace held off its routed shard moved there."""
    out = {}
    for shard, held in sorted(c.namespaces().items()):
        for namespace in held:
            if c.router.route(namespace) != shard and namespace not in out:
                out[namespace] = move_namespace(c, namespace, c.router.route(namespace))
    return out


__all__ = ["move_namespace", "rebalance"]
