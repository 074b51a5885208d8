"""Rewrites that replace files wholesale: compaction (S6), purge (S7) and archival (J7).

Each writes its new files first, then commits one manifest that lists them instead of the old
ones, then deletes the old ones, then publishes a view. A crash before the commit leaves the old
store (the new files are debris); after it, the old files are. Every rewrite runs under the
engine's lock; searches holding an older view keep reading the files they mapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..model.errors import StoreError
from .archive import restore_content, rows_of, strip_content
from .coalesce import holders
from .edge_files import table_to_edges
from .edge_log import EdgeLog
from .engine import Engine
from .ids import IdIndex
from .renumbering import Renumbering
from .segment import Segment, read_arrow
from .vectors import conform


def compact(engine: Engine) -> int:
    """Merge all committed segments (and the WAL) into one segment file; every version is kept.

    Returns the number of files merged. Keys stay the same (the files are concatenated in
    order), so derived indexes stay valid.
    """
    with engine.writing():
        engine.checkpoint()
        view = engine.view
        m = engine.manifest
        if engine.path is None or (len(view.segments) <= 1 and len(m.edges) <= 1
                                   and not any(e.get("rows") == 0 for e in m.archives)):
            return len(view.segments) if engine.path is not None else 0
        with engine.atomic():  # a failure leaves the committed files and the engine as they were
            old_segs = [str(s.file) for s in view.segments if s.file]
            old_edges = [e["file"] for e in m.edges]
            old = old_segs + old_edges
            table = pa.concat_tables([conform(s.checked(), engine.schema) for s in view.segments])
            merged = engine.new_segment(table, replaces=old_segs, requires=holders(table, view.archived),
                                        order=min((s.order for s in view.segments if s.order is not None), default=None))
            merged.sys_end = np.concatenate([s.sys_end for s in view.segments])
            m.segments = [merged.entry()]
            if m.edges:  # every edge row is kept (history), in one file
                edges = pa.concat_tables([read_arrow(engine.path / e["file"], e) for e in m.edges])
                m.edges = [engine.new_file("edges", edges, replaces=old_edges, order=min(e["order"] for e in m.edges))]
            # empty archive files (what a purge or unarchive left in place of one) go too
            empty = [e["file"] for e in m.archives if e.get("rows") == 0]
            m.archives = [e for e in m.archives if e.get("rows") != 0]
            engine.commit(old + empty)
        engine.publish(segments=(merged,))
        return len(old)


def purge(engine: Engine, ids: Iterable[str] = (), namespace: str | None = None) -> Renumbering:
    """Remove every row of these memories (or of a whole namespace) from every file, their edges
    and archived text too, in one atomic rewrite: one manifest commit, whatever the count.

    Segments without a purged row are kept as they are (the same files); in a rewritten one the
    other rows are copied unchanged. Rows are renumbered, so the row epoch moves on and every
    derived file is deleted before the commit. Returns how many versions were removed and where
    each row went.
    """
    with engine.writing() as view:
        gone = set(ids)
        for mid in sorted(gone):
            if view.key_of(mid) is None:
                raise StoreError(f"no memory with id {mid!r} to purge")
        if namespace is not None:
            gone |= {view.segments[si].ids[r] for si, r in view.current_locs(namespace, include_forgotten=True)}
        if not gone:
            return Renumbering(0, view.epoch, view.epoch, np.ones(view.rows, bool))
        engine.checkpoint()  # the WAL's rows folded into a segment, their keys unchanged
        view = engine.view
        keeps: list[np.ndarray] = []  # per segment, in key order
        with engine.atomic():  # a failure leaves the committed files and the engine as they were
            removed = 0
            kept: list[Segment] = []
            dropped: list[str] = []
            archived = dict(view.archived)
            held = {archived[mid] for mid in gone if mid in archived}
            for mid in gone:
                archived.pop(mid, None)
            if held and engine.path is not None:  # archives first: the segments below require them
                _write_archives(engine, _plan_archives(engine, archived, gone, held), dropped)
            for seg in view.segments:
                keep = ~rows_of(seg.checked(), gone) if len(gone) > 8 else \
                    np.fromiter((i not in gone for i in seg.ids), dtype=bool, count=len(seg))
                keeps.append(keep)
                if keep.all():
                    kept.append(seg)
                    continue
                removed += int((~keep).sum())
                table = seg.checked().filter(pa.array(keep))
                if seg.file is not None:
                    dropped.append(seg.file)
                if engine.path is None:
                    if table.num_rows == 0:
                        continue
                    new = Segment(table)
                else:
                    new = engine.new_segment(table, replaces=[str(seg.file)], order=seg.order,
                                             requires=holders(table, archived))
                # closures are within an id: the other rows keep theirs
                new.sys_end = seg.sys_end[keep]
                kept.append(new)
            edge_tables = _purge_edges(engine, gone, dropped)
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
        return Renumbering(removed, view.epoch, m.row_epoch, np.concatenate(keeps) if keeps else np.zeros(0, bool),
                           carries=not archived)


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
            # written even when empty: every file a rewrite drops is replaced by one that says so,
            # so a repair never mistakes a dropped file for a lost one (storage/repair.py)
            entries.append(engine.new_file("edges", t, replaces=[m.edges[i]["file"]], order=m.edges[i]["order"]))
        if t.num_rows:
            out.append(t)
    if engine.path is None:
        engine.edges_pending = out
    else:
        m.edges = entries
    return out


def _plan_archives(engine: Engine, archived: dict[str, str], ids: set[str], files: set[str]) -> list[tuple[dict[str, Any], pa.Table, str]]:
    """How the archive `files` are rewritten without the rows of `ids`: (old entry, the rows
    kept, the new file's name), names taken now so the segments
    written before them can require them; `archived` is updated to the new names."""
    assert engine.path is not None
    plan = []
    for e in engine.manifest.archives:
        if e["file"] not in files:
            continue
        table = read_arrow(engine.path / e["file"], e)
        keep = table.filter(pa.array(~rows_of(table, ids)))
        name = engine.next_file("archive")  # even when nothing is kept (see _purge_edges)
        for mid in set(keep.column("id").to_pylist()):
            archived[mid] = name
        plan.append((e, keep, name))
    return plan


def _write_archives(engine: Engine, plan: list[tuple[dict[str, Any], pa.Table, str]], dropped: list[str],
                    requires: Sequence[str] = ()) -> None:
    """Write a `_plan_archives` plan (old names go to `dropped`); the caller commits. `requires`:
    the segments the dropped content now lives in (unarchive), without which the new files are
    not whole."""
    rewritten = {e["file"]: (keep, name) for e, keep, name in plan}
    entries = []
    for e in engine.manifest.archives:
        if e["file"] not in rewritten:
            entries.append(e)
            continue
        keep, name = rewritten[e["file"]]
        dropped.append(e["file"])
        entries.append(engine.new_file("archive", keep, name=name, replaces=[e["file"]], order=e["order"],
                                       requires=requires))
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
        # the stripped segments need the archive file that holds their content (a repair takes
        # them only with it): its name comes first, its file after theirs
        archive_name = engine.next_file("archive")
        after = {**engine.view.archived, **dict.fromkeys(chosen, archive_name)}
        segments, dropped = _rewrite_segments(engine, strip, after)
        entry = engine.new_file("archive", pa.concat_tables(parts), name=archive_name)
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
        # the new archive files and the restored segments need each other (content moved from
        # one to the other): the archives' names first, then the segments, then the archives
        after = {k: v for k, v in archived.items() if k not in which}
        plan = _plan_archives(engine, after, which, set(files))
        segments, dropped = _rewrite_segments(engine, put_back, after)
        before = {x.file for x in engine.view.segments}
        _write_archives(engine, plan, dropped, requires=[str(s.file) for s in segments if s.file not in before])
        _commit_rewrite(engine, segments, dropped)
    engine.publish(segments=segments, archived=MappingProxyType(after))
    return len(which)


def _rewrite_segments(engine: Engine, change: Callable[[pa.Table], pa.Table | None],
                      archived: Mapping[str, str]) -> tuple[tuple[Segment, ...], list[str]]:
    """Each committed segment `change(table)` alters (same rows, same order: keys and trees stay
    valid) replaced by a new file; returns the new segments and the replaced files."""
    assert engine.path is not None
    out = list(engine.view.segments)
    dropped = []
    for i, seg in enumerate(out):
        new_table = change(seg.checked()) if seg.file else None
        if new_table is None:
            continue
        new = engine.new_segment(new_table, replaces=[str(seg.file)], order=seg.order,
                                 requires=holders(new_table, archived))
        new.sys_end = seg.sys_end.copy()
        dropped.append(str(seg.file))
        out[i] = new
    return tuple(out), dropped


def _commit_rewrite(engine: Engine, segments: tuple[Segment, ...], dropped: list[str]) -> None:
    engine.manifest.segments = [s.entry() for s in segments if s.file]
    engine.commit(dropped)  # committed: the replaced files are unlisted
