"""Rewrites that replace files wholesale: compaction (S6), purge (S7) and archival (J7).

Each writes its new files first, then commits one manifest that lists them instead of the old
ones, then deletes the old ones, then publishes a view. A crash before the commit leaves the old
store (the new files are debris); after it, the old files are. Every rewrite runs under the
engine's lock; searches holding an older view keep reading the files they mapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model.errors import StoreError
from .archive import restore_content, rows_of, strip_content
from .edge_files import table_to_edges
from .edge_log import EdgeLog
from .engine import Engine
from .ids import IdIndex
from .segment import Segment, read_arrow, write_and_open, write_file


def compact(engine: Engine) -> int:
    """Merge all committed segments (and the WAL) into one segment file; every version is kept.

    Returns the number of files merged. Keys stay the same (the files are concatenated in
    order), so derived indexes stay valid.
    """
    with engine.writing():
        engine.checkpoint()
        view = engine.view
        m = engine.manifest
        if engine.path is None or (len(view.segments) <= 1 and len(m.edges) <= 1):
            return len(view.segments) if engine.path is not None else 0
        with engine.atomic():  # a failure leaves the committed files and the engine as they were
            old = [s.file for s in view.segments if s.file] + [e["file"] for e in m.edges]
            name = engine.next_file("seg")
            merged = write_and_open(engine.path / name, pa.concat_tables([s.table for s in view.segments]))
            merged.sys_end = np.concatenate([s.sys_end for s in view.segments])
            m.segments = [merged.entry()]
            if m.edges:  # every edge row is kept (history), in one file
                edges = pa.concat_tables([read_arrow(engine.path / e["file"], e) for e in m.edges])
                m.edges = [write_file(engine.path / engine.next_file("edges"), edges)]
            engine.commit(old)
        engine.publish(segments=(merged,))
        return len(old)


def purge(engine: Engine, ids: Iterable[str] = (), namespace: str | None = None) -> int:
    """Remove every row of these memories (or of a whole namespace) from every file, their edges
    and archived text too, in one atomic rewrite: one manifest commit, whatever the count.

    Segments without a purged row are kept as they are (the same files); in a rewritten one the
    other rows are copied unchanged. Rows are renumbered, so the row epoch moves on and every
    derived file is deleted before the commit. Returns how many versions were removed.
    """
    with engine.writing() as view:
        gone = set(ids)
        for mid in sorted(gone):
            if view.key_of(mid) is None:
                raise StoreError(f"no memory with id {mid!r} to purge")
        if namespace is not None:
            gone |= {mid for mid, (si, row) in view.current() if view.segments[si].namespace(row) == namespace}
        if not gone:
            return 0
        engine.checkpoint()
        view = engine.view
        with engine.atomic():  # a failure leaves the committed files and the engine as they were
            removed = 0
            kept: list[Segment] = []
            dropped: list[str] = []
            for seg in view.segments:
                keep = ~rows_of(seg.table, gone) if len(gone) > 8 else \
                    np.fromiter((i not in gone for i in seg.ids), dtype=bool, count=len(seg))
                if keep.all():
                    kept.append(seg)
                    continue
                removed += int((~keep).sum())
                table = seg.table.filter(pa.array(keep))
                if seg.file is not None:
                    dropped.append(seg.file)
                if table.num_rows == 0:
                    continue
                if engine.path is None:
                    new = Segment(table)
                else:
                    new = write_and_open(engine.path / engine.next_file("seg"), table)
                # closures are within an id: the other rows keep theirs
                new.sys_end = seg.sys_end[keep]
                kept.append(new)
            edge_tables = _purge_edges(engine, gone, dropped)
            archived = dict(view.archived)
            held = {archived[mid] for mid in gone if mid in archived}
            if held and engine.path is not None:
                for mid in gone:
                    archived.pop(mid, None)
                _rewrite_archives(engine, archived, gone, held, dropped)
            m = engine.manifest
            m.row_epoch += 1  # rows renumbered: every derived index is stale
            engine.files.clear()  # derived from the purged rows too: gone before the purge commits
            if engine.path is not None:
                m.segments = [s.entry() for s in kept]
                engine.commit(dropped)  # committed: the old files are unlisted
        log = EdgeLog()
        for t in edge_tables:
            log.append(table_to_edges(t))
        engine.publish(epoch=m.row_epoch, segments=tuple(kept), ids=IdIndex(), edges=log, edge_rows=len(log),
                       archived=MappingProxyType(archived))
        return removed


def _purge_edges(engine: Engine, ids: set[str], dropped: list[str]) -> list[pa.Table]:
    """Edge tables without any row touching `ids` (files rewritten, old names added to `dropped`)."""
    m = engine.manifest
    tables = engine.edges_pending if engine.path is None else \
        [read_arrow(engine.path / e["file"], e) for e in m.edges]
    out: list[pa.Table] = []
    entries = []
    for i, t in enumerate(tables):
        value_set = pa.array(sorted(ids), pa.string())
        touch = pc.or_(pc.is_in(t.column("src"), value_set=value_set), pc.is_in(t.column("dst"), value_set=value_set))
        if not pc.any(touch).as_py():
            out.append(t)
            if engine.path is not None:
                entries.append(m.edges[i])
            continue
        t = t.filter(pc.invert(touch))
        if engine.path is not None:
            dropped.append(m.edges[i]["file"])
            if t.num_rows:
                entries.append(write_file(engine.path / engine.next_file("edges"), t))
        if t.num_rows:
            out.append(t)
    if engine.path is None:
        engine.edges_pending = out
    else:
        m.edges = entries
    return out


def _rewrite_archives(engine: Engine, archived: dict[str, str], ids: set[str], files: set[str],
                      dropped: list[str]) -> None:
    """Rewrite the archive `files` without the rows of `ids` (old names go to `dropped`; ids still
    archived in them move to the new file). The caller commits the manifest."""
    assert engine.path is not None
    entries = []
    for e in engine.manifest.archives:
        if e["file"] not in files:
            entries.append(e)
            continue
        table = read_arrow(engine.path / e["file"], e)
        keep = table.filter(pa.array(~rows_of(table, ids)))
        dropped.append(e["file"])
        if keep.num_rows:
            entry = write_file(engine.path / engine.next_file("archive"), keep)
            new = entry["file"]
            entries.append(entry)
            for mid in set(keep.column("id").to_pylist()):
                archived[mid] = new
    engine.manifest.archives = entries


def archive(engine: Engine, chosen: set[str]) -> str | None:
    """Move the content of these memories (every version) to a new archive file; returns its name.

    The caller holds the writer's lock, has checkpointed, and chose the ids. Rows, vectors and
    keys stay: only the content column changes, in rewritten segment files.
    """
    assert engine.path is not None
    if not chosen:
        return None
    parts: list[pa.Table] = []

    def strip(table: pa.Table) -> pa.Table | None:
        mask = rows_of(table, chosen)
        if not mask.any():
            return None
        stripped, records = strip_content(table, mask)
        parts.append(records)
        return stripped

    with engine.atomic():  # a failure leaves the committed files and the engine as they were
        segments, dropped = _rewrite_segments(engine, strip)
        entry = write_file(engine.path / engine.next_file("archive"), pa.concat_tables(parts))
        name = str(entry["file"])
        engine.manifest.archives.append(entry)
        _commit_rewrite(engine, segments, dropped)
    archived = dict(engine.view.archived)
    archived.update(dict.fromkeys(chosen, name))
    engine.publish(segments=segments, archived=MappingProxyType(archived))
    return name


def unarchive(engine: Engine, which: set[str]) -> int:
    """Put archived content back into the segments (the caller holds the lock and checkpointed)."""
    assert engine.path is not None
    archived = dict(engine.view.archived)
    files = sorted({archived[i] for i in which})
    entries = {e["file"]: e for e in engine.manifest.archives}
    back = pa.concat_tables([read_arrow(engine.path / f, entries[f]) for f in files])
    back = back.filter(pa.array(rows_of(back, which)))

    def put_back(table: pa.Table) -> pa.Table | None:
        restored, n = restore_content(table, back)
        return restored if n else None

    with engine.atomic():  # a failure leaves the committed files and the engine as they were
        segments, dropped = _rewrite_segments(engine, put_back)
        _rewrite_archives(engine, archived, which, set(files), dropped)
        _commit_rewrite(engine, segments, dropped)
    for mid in which:
        del archived[mid]
    engine.publish(segments=segments, archived=MappingProxyType(archived))
    return len(which)


def _rewrite_segments(engine: Engine, change: Callable[[pa.Table], pa.Table | None]) -> tuple[tuple[Segment, ...], list[str]]:
    """Each committed segment `change(table)` alters (same rows, same order: keys and trees stay
    valid) replaced by a new file; returns the new segments and the replaced files."""
    assert engine.path is not None
    out = list(engine.view.segments)
    dropped = []
    for i, seg in enumerate(out):
        new_table = change(seg.table) if seg.file else None
        if new_table is None:
            continue
        new = write_and_open(engine.path / engine.next_file("seg"), new_table)
        new.sys_end = seg.sys_end.copy()
        dropped.append(str(seg.file))
        out[i] = new
    return tuple(out), dropped


def _commit_rewrite(engine: Engine, segments: tuple[Segment, ...], dropped: list[str]) -> None:
    engine.manifest.segments = [s.entry() for s in segments if s.file]
    engine.commit(dropped)  # committed: the replaced files are unlisted
