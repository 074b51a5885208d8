"""engramdb.cluster: namespaces sharded over store folders served by Ray actors (SPEC X1-X3).

    import engramdb.cluster
    cluster = engramdb.cluster.Cluster({"s0": "/data/s0", "s1": "/data/s1"})
    cluster.add("Alice moved to Lisbon", namespace="alice")
    hits = cluster.search("where does Alice live?", namespace="alice")

A namespace lives on one shard (rendezvous hashing, `rendezvous.py`); a shard is an ordinary store
folder with one writer, a Ray actor restarted by Ray and reopened from its WAL (`shard.py`,
`remote.py`), optionally with read-only replicas (`replica.py`). `Cluster` (`client.py`) routes
the verbs, `moves.py` moves namespaces between shards, `jobs.py` runs maintenance over many
folders as Ray Data jobs. Needs `pip install "engramdb[ray]"`.
"""

from __future__ import annotations

try:
    import ray  # noqa: F401 - the extra's presence, checked once here
except ImportError as exc:  # pragma: no cover - the extra is in the test extra
    raise ImportError('engramdb.cluster needs Ray: pip install "engramdb[ray]"') from exc

from .client import DEFAULT_TIMEOUT, Cluster
from .rendezvous import Router, weight
from .unavailable import ShardUnavailable

__all__ = ["DEFAULT_TIMEOUT", "Cluster", "Router", "ShardUnavailable", "weight"]
