"""Which shard holds a namespace: rendezvous (highest random weight) hashing over shard names.

Every (shard, namespace) pair gets a weight from a stable hash (BLAKE2b: the same on every
machine and Python process; Python's own `hash` of a str is salted per process) and a namespace
lives on the shard of the highest weight. Adding a shard moves exactly the namespaces whose new
highest weight is the new shard's; removing one moves only the namespaces it held. No ring, no
virtual nodes, no state: the shard names are the whole map.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

_SHARD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def check_namespace(value: object) -> str:
    """A namespace argument: a non-empty str (TypeError or ValueError naming the value)."""
    if not isinstance(value, str):
        raise TypeError(f"namespace must be a str, got {type(value).__name__} {value!r:.80}")
    if not value:
        raise ValueError("namespace must not be empty")
    return value


def check_shard_name(value: object) -> str:
    """A shard's name: 1-63 of letters, digits, `_`, `.`, `-` (it names a Ray actor and a backup folder)."""
    if not isinstance(value, str) or not _SHARD_NAME.match(value):
        raise ValueError(f"shard name must be 1-63 letters, digits, '_', '.' or '-' (starting with a letter or "
                         f"digit), got {value!r:.80}")
    return value


def weight(shard: str, namespace: str) -> int:
    """The rendezvous weight of `namespace` on `shard`: 64 bits of BLAKE2b over both names."""
    digest = hashlib.blake2b(shard.encode("utf-8", "surrogatepass") + b"\x00"
                             + namespace.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Router:
    """Namespaces to shards by rendezvous hashing, with optional pins (a namespace placed on a
    named shard whatever its weights say: what `Cluster.move_namespace(ns, to=...)` records)."""

    def __init__(self, shards: Iterable[str], pins: Mapping[str, str] | None = None) -> None:
        self.shards: tuple[str, ...] = tuple(sorted(check_shard_name(s) for s in shards))
        if not self.shards:
            raise ValueError("a cluster needs at least one shard")
        if len(set(self.shards)) != len(self.shards):
            raise ValueError(f"shard names must be distinct, got {list(self.shards)}")
        self.pins: dict[str, str] = {}
        for ns, shard in (pins or {}).items():
            self.pin(ns, shard)

    def check_shard(self, shard: object) -> str:
        """`shard` when it is one of this router's shards, else ValueError naming it and the known ones."""
        if not isinstance(shard, str) or shard not in self.shards:
            raise ValueError(f"unknown shard {shard!r:.80}; the shards are {list(self.shards)}")
        return shard

    def pin(self, namespace: str, shard: str) -> None:
        """Place `namespace` on `shard` from now on (in this router)."""
        self.pins[check_namespace(namespace)] = self.check_shard(shard)

    def hashed(self, namespace: str) -> str:
        """The shard rendezvous hashing gives `namespace` (pins aside)."""
        check_namespace(namespace)
        return max(self.shards, key=lambda s: (weight(s, namespace), s))

    def route(self, namespace: str) -> str:
        """The shard that holds `namespace`: its pin, else its highest-weight shard."""
        pinned = self.pins.get(check_namespace(namespace))
        return pinned if pinned is not None else self.hashed(namespace)


__all__ = ["Router", "check_namespace", "check_shard_name", "weight"]
