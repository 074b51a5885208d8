"""Maintenance over many store folders as Ray Data jobs (SPEC X2).

- `export_parquet`: every shard's memories to Parquet for analytics, one row per memory in plain
  columns (read from each folder read-only, beside its live writer);
- `verify_folders`: every folder checked file by file (`engramdb.verify`), one task per folder;
- `reembed`: a space's vectors computed again by an embedder held in a pool of Ray actors
  (`map_batches`), written back through each shard's actor (a job that changes a live shard goes
  through its one writer, never around it).

Each reads a folder by path inside its task; nothing but plain values crosses processes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import ray
import ray.data

from ..model.errors import StoreError
from ..spaces.protocol import Embedder
from ..store import open as open_store
from ..store import verify as verify_folder
from . import remote

# the columns of an exported memory, in order (times as ISO-8601 UTC strings, dicts as JSON text)
COLUMNS = ("shard", "id", "namespace", "content", "memory_type", "role", "session_id", "seq", "source", "confidence",
           "version", "versions", "learned_at", "valid_from", "valid_until", "forgotten_at", "superseded_by",
           "metadata")
_TEXT = {"shard", "id", "namespace", "content", "memory_type", "role", "session_id", "source", "learned_at",
         "valid_from", "valid_until", "forgotten_at", "superseded_by", "metadata"}


def _export_lines(path: str) -> Iterator[dict[str, Any]]:
    """The JSONL export of the store in `path` (read-only), one dict per memory."""
    where = tempfile.mkdtemp(prefix="engramdb-job-")
    try:
        file = Path(where) / "all.jsonl"
        with open_store(path, read_only=True, access_log=False, embedders={}) as db:
            db.admin.export(file)
        with file.open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line) if line.strip() else None
                if isinstance(row, dict) and "id" in row:
                    yield row
    finally:
        shutil.rmtree(where, ignore_errors=True)


def memory_rows(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The export rows of one shard ({"shard", "path"}): one per memory, its current version in
    the plain `COLUMNS` (every text column a str or None, numbers as numbers)."""
    out = []
    for m in _export_lines(str(item["path"])):
        row: dict[str, Any] = {"shard": str(item["shard"]), "versions": 1 + len(m.get("history") or [])}
        for col in COLUMNS[1:]:
            if col == "versions":
                continue
            v = m.get(col)
            row[col] = json.dumps(v, sort_keys=True) if col == "metadata" else v
        out.append({c: (None if row[c] is None else str(row[c])) if c in _TEXT else row[c] for c in COLUMNS})
    return out


def export_parquet(shards: Mapping[str, str | Path], dest: str | Path) -> int:
    """Every memory of every shard (`shards`: name -> folder) written under folder `dest` as
    Parquet files, one row per memory (`COLUMNS`); returns how many rows. Each folder is read
    read-only, so live shards keep serving while the job runs."""
    items = [{"shard": name, "path": str(Path(path).absolute())} for name, path in shards.items()]
    rows = ray.data.from_items(items).flat_map(_rows_or_error).materialize()  # every folder read before writing
    failed = rows.filter(lambda row: row["id"] is None).take(1)
    if failed:
        raise StoreError(f"shard {failed[0]['shard']!r}: {failed[0]['content']}; nothing was exported")
    rows.write_parquet(str(Path(dest).absolute()))
    return int(rows.count())


def _rows_or_error(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`memory_rows`, or one row (id None, the error in content) when the folder cannot be read
    whole: Ray Data gives the driver only the text of a task's error (a damaged file's CorruptFile
    does not even unpickle), so the error travels as data and `export_parquet` raises it."""
    try:
        return memory_rows(item)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, naming the shard
        return [{**dict.fromkeys(COLUMNS), "shard": str(item["shard"]), "versions": 0,
                 "content": f"{type(exc).__name__}: {exc}"}]


def _verify(item: dict[str, Any]) -> dict[str, Any]:
    got = verify_folder(item["path"])
    bad = {name: what for name, what in got.get("files", {}).items() if what != "ok"}
    return {"path": item["path"], "ok": bool(got.get("ok")), "problems": json.dumps(bad, sort_keys=True)}


def verify_folders(paths: list[str | Path]) -> dict[str, dict[str, Any]]:
    """Each store folder checked (`engramdb.verify`), one Ray task per folder; path -> {"ok",
    "problems": {file: what is wrong}}."""
    items = [{"path": str(Path(p).absolute())} for p in paths]
    done = ray.data.from_items(items).map(_verify).take_all()
    return {r["path"]: {"ok": bool(r["ok"]), "problems": json.loads(r["problems"])} for r in done}


class _Embed:
    """A Ray Data actor holding one embedder, made once per actor by `make`."""

    def __init__(self, make: Callable[[], Embedder]) -> None:
        self.embedder = make()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = np.asarray(self.embedder.embed([str(c) for c in batch["content"]]), np.float32)
        return {"shard": batch["shard"], "id": batch["id"], "vector": vectors}


def _current(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(shard, id, content) of a shard's current memories (not forgotten: they are not re-embedded)."""
    return [{"shard": r["shard"], "id": r["id"], "content": r["content"]} for r in memory_rows(item)
            if r["forgotten_at"] is None]


def reembed(cluster: Any, space: str, make_embedder: Callable[[], Embedder], *, batch_size: int = 256,
            actors: int = 1) -> dict[str, int]:
    """Compute `space`'s vectors again for every current memory of every shard of `cluster` (an
    `engramdb.cluster.Cluster`): `make_embedder()` runs once in each of `actors` Ray actors, which
    embed the memories in batches (`map_batches`); each batch is written through its shard's
    actor (`db.update(id, vectors=...)`: one new version per memory, the other spaces' vectors
    kept). `space` is one of the shards' schema (a store's spaces are fixed when it is made: a
    space meant to be filled later is declared with no embedder). Returns shard -> memories done."""
    if not isinstance(space, str) or not space:
        raise ValueError(f"space must be a space name, got {space!r:.80}")
    for shard in cluster.folders:  # before any embedding: a job of hours must not fail at its first write
        have = remote.call(shard, cluster.writer(shard), "spaces", timeout=cluster.timeout)
        if space not in have:
            raise ValueError(f"space {space!r} is not a space of shard {shard!r} (its spaces: {have}); a store's "
                             "spaces are fixed when it is made: declare the space (with no embedder) in its schema")
    items = [{"shard": name, "path": path} for name, path in cluster.folders.items()]
    ds = ray.data.from_items(items).flat_map(_current).map_batches(
        _Embed, fn_constructor_kwargs={"make": make_embedder}, batch_size=batch_size, concurrency=actors,
        batch_format="numpy")
    done = dict.fromkeys(cluster.folders, 0)
    for batch in ds.iter_batches(batch_size=batch_size, batch_format="numpy"):
        by_shard: dict[str, list[int]] = {}
        for i, shard in enumerate(batch["shard"].tolist()):
            by_shard.setdefault(str(shard), []).append(i)
        for shard, rows in by_shard.items():
            ids = [str(batch["id"][i]) for i in rows]
            vectors = [np.asarray(batch["vector"][i], np.float32) for i in rows]
            n, version = remote.call(shard, cluster.writer(shard), "set_vectors", space, ids, vectors,
                                     timeout=cluster.timeout)
            cluster._note(shard, version)
            done[shard] += n
    return done


__all__ = ["COLUMNS", "export_parquet", "memory_rows", "reembed", "verify_folders"]
