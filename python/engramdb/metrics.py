"""`engramdb metrics --path PATH` (E9): a store's numbers in the Prometheus text exposition format.

Built with prometheus-client (`pip install engramdb[metrics]`) on a registry of its own, so a
service that embeds the store can also register `collector(store)` into its own registry and
serve it with its /metrics endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class StoreCollector:
    """A prometheus-client collector reading one open store at each scrape."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        stats = self.store.stats()
        board = self.store.admin.dashboard(top=0)
        mem = GaugeMetricFamily("engramdb_memories", "Current memories per namespace", labels=["namespace"])
        for ns, n in sorted(stats["namespaces"].items()):
            mem.add_metric([ns], n)
        yield mem
        for name, doc, value in (("engramdb_versions", "Stored versions of every memory", stats["versions"]),
                                 ("engramdb_segments", "Committed segment files", stats["segments"]),
                                 ("engramdb_wal_bytes", "Bytes in the write-ahead log", stats["wal_bytes"]),
                                 ("engramdb_edges", "Live edges", stats["edges"]),
                                 ("engramdb_rated_memories", "Memories with an ELO rating", board["log"]["ratings"])):
            yield GaugeMetricFamily(name, doc, value=value)
        for family, key in (("engramdb_elo_tier_memories", "elo_tiers"),
                            ("engramdb_lifecycle_tier_memories", "lifecycle_tiers")):
            g = GaugeMetricFamily(family, f"Current memories per {key.replace('_', ' ')[:-1]}", labels=["tier"])
            for t, n in board[key].items():
                g.add_metric([t], n)
            yield g
        act = board["activity"]
        yield CounterMetricFamily("engramdb_searches", "Logged searches", value=act["searches"])
        yield CounterMetricFamily("engramdb_feedback", "Feedback and injection rows logged", value=act["feedback"])
        lat = act.get("latency_ms")
        if lat:
            g = GaugeMetricFamily("engramdb_search_latency_seconds", "Search latency over the last 1,000 logged "
                                  "searches", labels=["quantile"])
            g.add_metric(["0.5"], lat["p50"] / 1e3)
            g.add_metric(["0.95"], lat["p95"] / 1e3)
            yield g
        yield GaugeMetricFamily("engramdb_access_log_damaged_files", "Access-log files left out as damaged",
                                value=len(board["log"]["log"]["damaged"]))


def exposition(store: Any) -> str:
    """The store's metrics as Prometheus text (raises ImportError naming the extra without it)."""
    try:
        from prometheus_client import CollectorRegistry, generate_latest
    except ImportError as exc:
        raise ImportError("engramdb metrics needs prometheus-client: pip install 'engramdb[metrics]'") from exc
    registry = CollectorRegistry()
    registry.register(StoreCollector(store))
    return str(generate_latest(registry).decode())


__all__ = ["StoreCollector", "exposition"]
