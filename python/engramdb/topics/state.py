"""Topics' history between runs (C4), saved beside the indexes: `index/topics-state.arrow`.

One row per topic of the last run of each namespace (namespace, topic id, members, runs, created,
main-space centroid); the next topic number per namespace and the merges `merge_concepts` made
ride in the file's metadata (inside the CRC-checked bytes); the JSON sidecar holds the format and
the data file's size and CRC-32. Derived data: a missing
or damaged state starts the topics' history over (new ids, no stability yet); nothing else is lost.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow_numpy import table_of
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from .results import Previous, Topic, Topics
from .themes import Theme

STATE_FORMAT = 1
DATA, SIDE = "topics-state.arrow", "topics-state.json"
_SCHEMA = pa.schema([("namespace", pa.string()), ("topic_id", pa.string()), ("members", pa.list_(pa.string())),
                     ("runs", pa.int64()), ("created_us", pa.int64()), ("centroid", pa.list_(pa.float64()))])


def _store(files: DerivedFiles, data: str, side: str, table: pa.Table) -> None:
    """The data file first, then its sidecar (format, size, CRC-32)."""
    entry = files.write(data, table_bytes(table))
    files.write_sidecar(side, {"format": STATE_FORMAT, **entry})


def _stored(files: DerivedFiles, data: str, side: str, schema: pa.Schema, *older: pa.Schema) -> pa.Table | str:
    """The table saved under `data` (with `schema`'s columns, or one of the `older` ones), or why
    there is none to trust (missing, damaged, another format, other columns)."""
    meta = files.read_sidecar(side)
    if isinstance(meta, str):
        return meta
    if meta.get("format") != STATE_FORMAT:
        return f"format {meta.get('format')!r}"
    raw = files.read(data, meta)
    if isinstance(raw, str):
        return raw
    try:
        table = bytes_table(raw)
    except Exception as exc:  # noqa: BLE001 - a derived file is never trusted
        return f"unreadable ({type(exc).__name__})"
    found = table.schema.remove_metadata()
    return table if any(found.equals(s) for s in (schema, *older)) else "unexpected columns"


def save(files: DerivedFiles, prev: dict[str, Previous], merges: dict[str, dict[str, str]]) -> None:
    """Write the state (data file first, then its sidecar)."""
    if not files.writable:
        return
    rows: dict[str, list[Any]] = {name: [] for name in _SCHEMA.names}
    for ns, p in sorted(prev.items()):
        for tid, (members, centroid, runs, created) in sorted(p.topics.items()):
            for name, value in (("namespace", ns), ("topic_id", tid), ("members", sorted(members)), ("runs", runs),
                                ("created_us", created),
                                ("centroid", None if centroid is None else [float(v) for v in centroid])):
                rows[name].append(value)
    table = table_of(rows, _SCHEMA).replace_schema_metadata({
        "next_id": json.dumps({ns: p.next_id for ns, p in prev.items()}), "merges": json.dumps(merges)})
    _store(files, DATA, SIDE, table)


def load(files: DerivedFiles) -> tuple[dict[str, Previous], dict[str, dict[str, str]], str]:
    """The saved state, and "adopted" or why it starts over."""
    table = _stored(files, DATA, SIDE, _SCHEMA)
    if isinstance(table, str):
        return {}, {}, table
    try:
        extra = table.schema.metadata or {}
        out: dict[str, Previous] = {ns: Previous(next_id=int(n))
                                    for ns, n in json.loads(extra[b"next_id"]).items()}
        for ns, tid, members, runs, created, centroid in zip(*(table.column(c).to_pylist() for c in _SCHEMA.names)):
            p = out.setdefault(str(ns), Previous())
            p.topics[str(tid)] = (frozenset(members), None if centroid is None else np.asarray(centroid, np.float64),
                                  int(runs), int(created))
        merges = {str(ns): {str(a): str(b) for a, b in m.items()} for ns, m in json.loads(extra[b"merges"]).items()}
        return out, merges, "adopted"
    except Exception as exc:  # noqa: BLE001 - a derived file is never trusted
        return {}, {}, f"unreadable ({type(exc).__name__})"


THEMES_DATA, THEMES_SIDE = "themes.arrow", "themes.json"
_THEMES = pa.schema([("namespace", pa.string()), ("stamp", pa.string()), ("label", pa.string()),
                     ("members", pa.list_(pa.string())), ("silhouette", pa.float64()), ("confidence", pa.float64())])


def save_themes(files: DerivedFiles, themes: dict[str, tuple[str, list[Theme]]]) -> None:
    """Write every namespace's themes (H8: stored and listable) with the stamp of the namespace's
    state they were found in; a namespace without themes keeps a row with no members."""
    if not files.writable:
        return
    rows: dict[str, list[Any]] = {name: [] for name in _THEMES.names}
    for ns, (stamp, found) in sorted(themes.items()):
        for t in found or [Theme("", (), 0.0, 0.0)]:
            for name, value in zip(_THEMES.names, (ns, stamp, t.label, list(t.members), t.silhouette, t.confidence)):
                rows[name].append(value)
    _store(files, THEMES_DATA, THEMES_SIDE, table_of(rows, _THEMES))


def load_themes(files: DerivedFiles) -> dict[str, tuple[str, list[Theme]]]:
    """The stored themes per namespace (empty when missing or damaged: themes are recomputed)."""
    table = _stored(files, THEMES_DATA, THEMES_SIDE, _THEMES)
    if isinstance(table, str):
        return {}
    try:
        out: dict[str, tuple[str, list[Theme]]] = {}
        for ns, stamp, label, members, sil, conf in zip(*(table.column(c).to_pylist() for c in _THEMES.names)):
            found = out.setdefault(str(ns), (str(stamp), []))[1]
            if members:
                found.append(Theme(str(label), tuple(members), float(sil), float(conf)))
        return out
    except Exception:  # noqa: BLE001 - a derived file is never trusted
        return {}


RESULTS_DATA, RESULTS_SIDE = "topics.arrow", "topics.json"
_RESULTS = pa.schema([("namespace", pa.string()), ("stamp", pa.string()), ("churn", pa.float64()),
                      ("entropy", pa.float64()), ("sampled", pa.int64()), ("topic_id", pa.string()),
                      ("label", pa.string()), ("members", pa.list_(pa.string())), ("confidence", pa.float64()),
                      ("phase", pa.string()), ("stability", pa.float64()), ("centroid_stability", pa.float64()),
                      ("runs", pa.int64()), ("created_us", pa.int64())])
# with each topic's unit main-space centroid: a reader's first context finds the query's nearest
# topic without reading every member's vector (a second at 100,000 memories)
_RESULTS_CENTROIDS = _RESULTS.append(pa.field("centroid", pa.list_(pa.float32())))


def save_results(files: DerivedFiles, results: dict[str, tuple[str, Topics]]) -> None:
    """Write every namespace's last topics as a run returned them, stamped with the namespace's
    state, so another process (a reader: hooks, a service's workers) lists them without clustering."""
    if not files.writable:
        return
    rows: dict[str, list[Any]] = {name: [] for name in _RESULTS_CENTROIDS.names}
    for ns, (stamp, found) in sorted(results.items()):
        cents = found.centroids if found.centroids is not None and len(found.centroids) == len(found) else None
        for i, t in enumerate(found or [Topic("", ns, "", (), 0.0)]):
            values = (ns, stamp, found.churn, found.entropy, found.sampled, t.id, t.label, list(t.members),
                      t.confidence, t.phase, t.stability, t.centroid_stability, t.runs, t.created_us,
                      cents[i].tolist() if cents is not None and found else None)
            for name, value in zip(_RESULTS_CENTROIDS.names, values):
                rows[name].append(value)
    _store(files, RESULTS_DATA, RESULTS_SIDE, table_of(rows, _RESULTS_CENTROIDS))


def load_results(files: DerivedFiles) -> dict[str, tuple[str, Topics]]:
    """The stored topics per namespace (empty when missing or damaged: they are computed again)."""
    table = _stored(files, RESULTS_DATA, RESULTS_SIDE, _RESULTS_CENTROIDS, _RESULTS)
    if isinstance(table, str):
        return {}
    try:
        out: dict[str, tuple[str, Topics]] = {}
        cents: dict[str, list[Any]] = {}
        for r in table.to_pylist():
            ns = str(r["namespace"])
            if ns not in out:
                found = Topics([], float(r["churn"]), float(r["entropy"]))
                found.sampled = r["sampled"]
                out[ns] = (str(r["stamp"]), found)
            if r["members"]:
                out[ns][1].append(Topic(str(r["topic_id"]), ns, str(r["label"]), tuple(r["members"]),
                                        float(r["confidence"]), str(r["phase"]), r["stability"],
                                        r["centroid_stability"], int(r["runs"]), int(r["created_us"])))
                cents.setdefault(ns, []).append(r.get("centroid"))
        for ns, rows in cents.items():  # all or none: a file written before centroids were kept has none
            if all(c is not None for c in rows) and len({len(c) for c in rows}) == 1:
                out[ns][1].centroids = np.asarray(rows, np.float64)
        return out
    except Exception:  # noqa: BLE001 - a derived file is never trusted
        return {}


def purge(files: DerivedFiles, namespaces: set[str], ids: set[str], whole: set[str]) -> bool:
    """Take purged memories out of the three topic files: the stored topics and themes of every
    namespace in `namespaces` (they are computed again when next asked: their labels came from the
    purged text), the history of every namespace in `whole` (purged entirely: topic ids, merges and
    all), and elsewhere the history's topics that held one of `ids` (their centroids averaged the
    purged vectors; the topic numbering goes on, so no id is given twice). A file that cannot be
    read is written again without its rows, rather than kept with what it may hold. Returns
    whether anything was written."""
    if not files.writable or not (namespaces or whole):
        return False
    wrote = False
    results = load_results(files)
    if any(ns in results for ns in namespaces) or (not results and files.exists(RESULTS_DATA)):
        save_results(files, {ns: r for ns, r in results.items() if ns not in namespaces})
        wrote = True
    themes = load_themes(files)
    if any(ns in themes for ns in namespaces) or (not themes and files.exists(THEMES_DATA)):
        save_themes(files, {ns: t for ns, t in themes.items() if ns not in namespaces})
        wrote = True
    prev, merges, state = load(files)
    if forget(prev, merges, ids, whole) or (state != "adopted" and files.exists(DATA)):
        save(files, prev, merges)
        wrote = True
    return wrote


def forget(prev: dict[str, Previous], merges: dict[str, dict[str, str]], ids: set[str], whole: set[str]) -> bool:
    """Take purged memories out of a topic history, in place: the namespaces in `whole` entirely,
    elsewhere the topics that held one of `ids`. Returns whether anything went."""
    changed = False
    for ns in list(prev):
        if ns in whole:
            del prev[ns]
            changed = True
            continue
        held = [tid for tid, (members, _, _, _) in prev[ns].topics.items() if members & ids]
        for tid in held:
            del prev[ns].topics[tid]
        changed = changed or bool(held)
    for ns in whole & set(merges):
        del merges[ns]
        changed = True
    return changed


__all__ = ["forget", "load", "load_results", "load_themes", "purge", "save", "save_results", "save_themes"]
