"""Repair: rebuild a lost or damaged manifest from the store's own self-describing files.

Every segment, edges and archive file says what it is, where its rows go and which files it
replaces (storage/describe.py), and its body has a checksum. A repair reads them all: the files
no sound file replaces are the store; sorted by their order they are the manifest's lists; the
WAL no file replaces is the live WAL; the spaces come from a segment (or the marker). A file a
rewrite wrote whose companions are missing (`requires`) is an unfinished rewrite: the files it
would replace stay.

Repair itself deletes nothing: the files it leaves out that are provably the store's own and
superseded (replaced by a sound file, or pieces of an unfinished rewrite) are named in the journal,
so the next open removes them as crash debris. It stops (a "blocker") where rebuilding would lose or guess: a damaged file
nothing replaces, a file written before descriptions, two live WALs, two files in one place. With
`accept_loss=True` it goes on without the damaged files (renamed `<name>.damaged`, never deleted)
and a damaged WAL's intact frames are copied to a fresh WAL. A damaged manifest is kept as
`manifest.json.damaged`. `open()` runs a repair by itself when the manifest is lost or damaged
and nothing blocks it, with a warning.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.errors import CorruptFile, FormatError, NewerFormat, StoreError
from . import disk
from .checksum import file_digest
from .columns import FORMAT_VERSION
from .describe import read_description, seq_of
from .folder import MANIFEST, MARKER, mark_spaces, write_marker
from .identity import highest_number, lineage, marker_id, refusal
from .journal import Journal
from .manifest import PREVIOUS, Manifest, parse_manifest, write_manifest
from .segment import mapped
from .wal import HEADER_MAX, WriteAheadLog, decode_frames, read_header

log = logging.getLogger("engramdb.storage")

_ARROW = re.compile(r"^(seg|edges|archive)-(\d+)\.arrow$")
_WAL = re.compile(r"^wal-(\d+)\.log$")
_LISTS = {"seg": "segments", "edges": "edges", "archive": "archives"}


@dataclass
class Found:
    """One store file as a repair sees it."""

    name: str
    kind: str  # "seg", "edges", "archive", "wal"
    desc: dict[str, Any] | None = None
    spaces: dict[str, Any] | None = None
    problem: str = ""  # "" when sound
    frames: int = 0  # WAL only
    torn: bool = False  # WAL only: its header was cut short as it was made, so it holds no frame

    @property
    def described(self) -> bool:
        return self.desc is not None or self.kind == "wal"


@dataclass
class Plan:
    """What a repair would write, and what stops it."""

    manifest: Manifest | None
    found: dict[str, Found]
    live: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)  # replaced by sound files (left in place)
    unfinished: list[str] = field(default_factory=list)  # rewrites whose companions are missing
    damaged: list[str] = field(default_factory=list)  # damaged and replaced by nothing: lost
    foreign: list[str] = field(default_factory=list)  # another store's files: left out, left alone
    torn: list[str] = field(default_factory=list)  # logs cut short as they were made: empty, left out
    store_id: str = ""  # whose store this is (storage/repair.py `identity`)
    blockers: list[str] = field(default_factory=list)
    wal_salvage: str | None = None  # a damaged live WAL whose intact frames would be copied

    def report(self) -> dict[str, Any]:
        """The plan as plain data (what `repair` returns and the CLI prints)."""
        m = self.manifest
        return {
            "ok": not self.blockers,
            "blockers": list(self.blockers),
            "segments": [e["file"] for e in m.segments] if m else [],
            "edges": [e["file"] for e in m.edges] if m else [],
            "archives": [e["file"] for e in m.archives] if m else [],
            "wal": m.wal if m else None,
            "superseded": sorted(self.superseded),
            "unfinished": sorted(self.unfinished),
            "damaged": sorted(self.damaged),
            "foreign": sorted(self.foreign),
            "torn": sorted(self.torn),
            "files": {n: (f.problem or "ok") for n, f in sorted(self.found.items())},
        }


def survey(folder: Path) -> dict[str, Found]:
    """Every file in `folder` named like a store data file, read and checked."""
    found: dict[str, Found] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if (m := _ARROW.match(path.name)) is not None:
            found[path.name] = _arrow(path, m.group(1))
        elif _WAL.match(path.name):
            found[path.name] = _wal(path)
    return found


def _readable_manifests(folder: Path) -> list[tuple[str, Manifest]]:
    """The manifest and its previous generation, each as (file name, manifest), when they read:
    what the repair may learn from them (which store, what they listed, how far generations went)."""
    out = []
    for name in (MANIFEST, PREVIOUS):
        try:
            out.append((name, parse_manifest((folder / name).read_bytes(), folder / name)))
        except (OSError, StoreError, FormatError):
            continue
    return out


def identity(folder: Path, found: dict[str, Found]) -> tuple[str, set[str]]:
    """(this store's id, the ids whose files are its own: its own and the stores it was copied
    from). The id is the manifest's (or its previous generation's) when one reads, else the one
    most of the files claim, else the marker's: a marker put in from another store, or lost and
    made again, never decides whose files these are."""
    manifests = [m for _, m in _readable_manifests(folder)]
    sid = next((m.store_id for m in manifests if m.store_id), "")
    if not sid:
        claims = Counter(f.desc.get("store") for f in found.values() if f.desc is not None and not f.problem
                         and f.desc.get("store"))
        top = claims.most_common(2)
        if top and (len(top) == 1 or top[0][1] > top[1][1]):
            sid = str(top[0][0])
    mid = marker_id(folder)
    sid = sid or mid or ""
    own = {sid} | {i for m in manifests for i in m.copied_from}
    if mid == sid:
        own |= lineage(folder)
    return sid, own - {""}


def _arrow(path: Path, kind: str) -> Found:
    try:
        with open(path, "rb") as handle:
            desc, spaces, problem = read_description(mapped(handle))
    except OSError as exc:
        return Found(path.name, kind, problem=f"unreadable ({exc})")
    if desc is not None and not problem and (desc.get("kind") != kind or desc.get("seq") != seq_of(path.name)):
        problem = f"its description names {desc.get('kind')}-{desc.get('seq')}, not this file"
    return Found(path.name, kind, desc=desc, spaces=spaces, problem=problem)


def _wal(path: Path) -> Found:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Found(path.name, "wal", problem=f"unreadable ({exc})")
    try:
        identity, start = read_header(data[:HEADER_MAX], path)
    except CorruptFile as exc:
        return Found(path.name, "wal", problem=str(exc))
    if start == 0:  # a crash as a checkpoint made its new log: nothing was ever written to it
        return Found(path.name, "wal", torn=True)
    desc = {"store": identity.get("store", ""), "replaces": list(identity.get("replaces", []))} if identity else None
    try:
        frames, _ = decode_frames(data, path)
    except CorruptFile as exc:
        return Found(path.name, "wal", desc=desc, problem=str(exc))
    return Found(path.name, "wal", desc=desc, frames=len(frames))


def plan(folder: str | Path) -> Plan:
    """What a repair of `folder` would do (nothing is written)."""
    path = Path(folder)
    found = survey(path)
    _torn_or_damaged(path, found)
    sid, own = identity(path, found)
    # another store's files (copied in) are not this store's: left where they are, out of the plan;
    # a sound one blocks, since it may be this store's whose lineage was lost (a backup's marker)
    foreign = {n: f.desc["store"] for n, f in found.items()
               if own and f.desc is not None and f.desc.get("store") and f.desc["store"] not in own}
    found = {n: f for n, f in found.items() if n not in foreign}
    p = Plan(manifest=None, found=found, foreign=sorted(foreign), store_id=sid)
    for n, other in sorted(foreign.items()):
        p.blockers.append(f"{n} says it is store {other}'s file, not this store's ({sid or 'unknown'}) nor a store's "
                          "it was copied from: left out, its rows would be lost if it is this store's after all "
                          "(copied into it by a backup whose marker was lost?)")
    arrow = {n: f for n, f in found.items() if f.kind != "wal"}
    sound = {n for n, f in arrow.items() if f.desc is not None and not f.problem}
    # a file is usable when every file it requires is usable, or replaced by a usable file (an
    # archive rewritten since), to a fixed point; a checkpoint whose WAL grew since is not
    usable = {n for n in sound if not _wal_grew(path, arrow[n].desc)}  # type: ignore[arg-type]
    while True:
        replaced = {r for n in usable for r in arrow[n].desc["replaces"]}  # type: ignore[index]
        lacking = {n for n in usable
                   if not all(r in usable or r in replaced for r in arrow[n].desc["requires"])}  # type: ignore[index]
        if not lacking:
            break
        usable -= lacking
    p.unfinished = sorted((sound - usable) - replaced)
    # a log a salvage wrote replaces the damaged log it took the frames of (storage/wal.py)
    replaced |= {r for f in found.values() if f.kind == "wal" and not f.problem and f.desc
                 for r in f.desc["replaces"]}
    p.superseded = sorted(n for n in found if n in replaced)
    p.damaged = sorted(n for n, f in found.items() if f.problem and n not in replaced and f.kind != "wal")
    live = sorted(usable - replaced)
    legacy = sorted(n for n, f in arrow.items() if f.desc is None and not f.problem and n not in replaced)
    # a log whose header a crash cut short holds nothing: never the live one (a manifest listing it
    # would be refused at open: a listed log was whole); the next open removes it if journaled
    p.torn = sorted(n for n, f in found.items() if f.torn)
    wals = sorted(n for n, f in found.items() if f.kind == "wal" and n not in replaced and not f.torn)
    for n in p.damaged:
        p.blockers.append(f"{n} is damaged ({found[n].problem}) and no sound file holds its rows: they would be lost")
    if legacy and not _previous(path, p, legacy, live):
        p.blockers.append(f"{', '.join(legacy)} were written before files described themselves: their place "
                          f"cannot be read from them, and no intact {PREVIOUS} lists them (restore the manifest "
                          "from a backup)")
    vanished = _vanished(path, found, replaced)
    for n, where in sorted(vanished.items()):
        p.blockers.append(f"{n}, listed by {where}, is gone and no file replaces it: its rows would be lost "
                          "(a copy cut short? a file deleted?)")
    for n in p.unfinished:  # its rows are in the plan only if what it would replace is live
        gone = [r for r in arrow[n].desc["replaces"] if r not in live and r not in wals]  # type: ignore[index]
        if gone or not arrow[n].desc["replaces"]:  # type: ignore[index]
            needs = ", ".join(arrow[n].desc["requires"])  # type: ignore[index]
            p.blockers.append(f"{n} is part of an unfinished rewrite (it needs {needs}), and what it replaces "
                              f"({', '.join(gone) or 'nothing'}) is not live: its rows would be lost")
    if len(wals) > 1:
        p.blockers.append(f"several write-ahead logs are live ({', '.join(wals)}): which one holds the newest "
                          "writes cannot be told")
    wal = wals[-1] if wals else None
    if wal is not None and found[wal].problem:
        p.blockers.append(f"the write-ahead log {wal} is damaged ({found[wal].problem})")
        p.wal_salvage = wal
    lists: dict[str, list[dict[str, Any]]] = {"segments": [], "edges": [], "archives": []}
    by_place: dict[tuple[str, int], str] = {}
    for n in sorted(live, key=lambda n: (arrow[n].desc["order"], arrow[n].desc["seq"])):  # type: ignore[index]
        desc = arrow[n].desc
        assert desc is not None
        place = (arrow[n].kind, int(desc["order"]))
        if place in by_place:
            p.blockers.append(f"{by_place[place]} and {n} both claim place {place[1]} among the {place[0]} files")
        by_place[place] = n
        entry = {"file": n, "rows": int(desc["rows"]), "order": int(desc["order"]), **file_digest(path / n)}
        lists[_LISTS[arrow[n].kind]].append(entry)
    p.live = live + ([wal] if wal else [])
    spaces = _spaces(path, [arrow[n] for n in live if arrow[n].kind == "seg"], p)
    if p.manifest is not None:  # the previous generation, whole (see _previous)
        return p
    seqs = [seq_of(n) for n in found] + [seq_of(r) for f in arrow.values() if f.desc
                                         for r in f.desc["replaces"] + f.desc["requires"]]
    next_seq = max(max(seqs, default=0), highest_number(path)) + 1  # never a number given before
    if wal is None or p.wal_salvage is not None:
        wal, next_seq = f"wal-{next_seq:06d}.log", next_seq + 1
    epoch = max((int(arrow[n].desc["epoch"]) for n in live), default=0)  # type: ignore[index]
    p.manifest = Manifest(format_version=FORMAT_VERSION, segments=lists["segments"], edges=lists["edges"],
                          archives=lists["archives"], next_segment=next_seq, spaces=spaces or {},
                          created_by="engramdb repair", wal=wal, row_epoch=epoch + 1,  # +1: derived indexes rebuild
                          wal_header=2 if found.get(wal) is None or found[wal].desc is not None else 1,
                          store_id=sid, generation=_last_generation(path, arrow),
                          copied_from=sorted(own - {sid}))
    return p


def _torn_or_damaged(folder: Path, found: dict[str, Found]) -> None:
    """A log whose header is not whole is empty debris only when a crash cut it short as it was
    made: the journal names it (a new log is journaled before it is made) and no manifest lists it
    (a listed log was whole). Any other such log was cut short later (a copy cut short, damage):
    it held frames, so it is a damaged log (the repair stops; `accept_loss` salvages). A new
    store's first log is journaled too (storage/engine.py), and the journal cleared once the first
    manifest lists it."""
    journaled = Journal(folder).names()
    listed = {m.wal for _, m in _readable_manifests(folder)}
    for n, f in found.items():
        if f.torn and (n not in journaled or n in listed):
            f.torn = False
            f.problem = ("its header is cut short, and it was not a log a crash cut short as it was made "
                         + ("(a manifest lists it)" if n in listed else "(the journal does not name it)")
                         + ": the writes it held are lost")


def _last_generation(folder: Path, arrow: dict[str, Found]) -> int:
    """The highest generation any file or manifest here was written for: the rebuilt manifest
    comes after all of them (generations only grow)."""
    gens = [int(f.desc.get("generation", 0)) for f in arrow.values() if f.desc is not None]
    gens += [m.generation for _, m in _readable_manifests(folder)]
    return max(gens, default=0)


def _vanished(folder: Path, found: dict[str, Found], replaced: set[str]) -> dict[str, str]:
    """Files the manifest, or its previous generation, lists that are neither here nor replaced
    by a file that is (name -> which manifest lists it): a repair cannot see a file that is gone
    unless something names it. Every rewrite replaces each file it drops with one that names it,
    an empty one if nothing is left; an empty file (compaction drops them) holds nothing to lose."""
    out: dict[str, str] = {}
    for name, m in _readable_manifests(folder):
        what = "the manifest" if name == MANIFEST else "the previous manifest"
        listed = [e["file"] for e in m.segments + m.edges + m.archives if e.get("rows") != 0] + [m.wal]
        for n in listed:  # an empty file held nothing to lose
            if n not in found and n not in replaced:
                out.setdefault(n, f"{what} ({name})")
    return out


def _wal_grew(folder: Path, desc: dict[str, Any]) -> bool:
    """True when a checkpoint's file replaces a WAL that is larger now than when it was written:
    that checkpoint failed and writes went on into the WAL, which holds everything."""
    if "wal_bytes" not in desc:
        return False
    for name in desc["replaces"]:
        try:
            if (folder / name).stat().st_size > int(desc["wal_bytes"]):
                return True
        except FileNotFoundError:
            continue
    return False


def _previous(folder: Path, p: Plan, legacy: list[str], live: list[str]) -> bool:
    """Adopt the previous manifest generation when it lists every file written before descriptions
    and is whole: its own checksum, every file it lists intact, its WAL sound, and no described
    file written after it still live. Sets p.manifest; False when it cannot be used."""
    try:
        prev = parse_manifest((folder / PREVIOUS).read_bytes(), folder / PREVIOUS)
    except (OSError, StoreError, FormatError):
        return False
    listed = {e["file"]: e for e in prev.segments + prev.edges + prev.archives}
    if not set(legacy) <= listed.keys() or not set(live) <= listed.keys():
        return False
    wal = p.found.get(prev.wal)
    if wal is None or wal.problem:
        return False
    for name, entry in listed.items():
        try:
            got = file_digest(folder / name)
        except OSError:
            return False
        if "xxh3" in entry and (got["xxh3"] != entry["xxh3"] or got["bytes"] != entry.get("bytes")):
            return False
    prev.row_epoch += 1  # derived indexes rebuild
    prev.created_by = "engramdb repair (previous generation)"
    p.manifest = prev
    p.live = sorted(listed) + [prev.wal]
    return True


def _spaces(folder: Path, segments: list[Found], p: Plan) -> dict[str, Any] | None:
    """The store's spaces: every live segment says them; the marker holds them too."""
    said = {json.dumps(f.spaces, sort_keys=True) for f in segments if f.spaces is not None}
    if len(said) > 1:
        p.blockers.append("the live segments disagree about the store's spaces")
        return None
    if said:
        return dict(json.loads(said.pop()))
    try:
        marker = json.loads((folder / MARKER).read_text())
        if isinstance(marker.get("spaces"), dict):
            return dict(marker["spaces"])
    except (OSError, ValueError):
        pass
    return None


def repair(folder: str | Path, *, accept_loss: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """Rebuild the manifest of the store at `folder` from its files (see the module docstring).

    Returns the plan's report (`ok`, the files listed, what was superseded, damaged or left
    out). Raises StoreError when something blocks the repair, unless `accept_loss` (or
    `dry_run`, which writes nothing and reports the blockers).
    """
    path = Path(folder)
    if not path.is_dir() or not ((path / MARKER).exists() or (path / MANIFEST).exists()):
        raise StoreError(f"{path} is not an engramdb store folder (no {MARKER}, no {MANIFEST}): nothing to repair")
    from .lock import WriterLock  # held while repairing: no writer may commit meanwhile

    lock = None if dry_run else WriterLock(path)
    try:
        why = needs_repair(path)
        if why is None:
            return {"ok": True, "path": str(path), "needed": False, "blockers": [],
                    "note": f"{MANIFEST} is intact and agrees with the files beside it: nothing to repair "
                            "(`engramdb verify` checks every file)"}
        return repair_locked(path, why, accept_loss=accept_loss, dry_run=dry_run)
    finally:
        if lock is not None:
            lock.release()


def repair_locked(path: Path, why: str, *, accept_loss: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """`repair` for a caller holding the writer's lock (an opening writer): `why` the manifest
    needs it."""
    p = plan(path)
    report = p.report()
    report.update(path=str(path), needed=True, why=why)
    if dry_run:
        return report
    if p.blockers and not accept_loss:
        raise StoreError(f"{path} needs a repair ({why}) that would lose data: " + "; ".join(p.blockers)
                         + ". Nothing was changed. Restore from a backup, or run `engramdb repair --accept-loss "
                         f"--path {path}` to rebuild from the intact files")
    if p.manifest is None or not p.manifest.spaces:
        raise StoreError(f"{path}: no segment and no marker says the store's spaces; nothing was changed")
    _apply(path, p)
    report["written"] = MANIFEST
    return report


def _apply(path: Path, p: Plan) -> None:
    """Write the plan. Each step leaves a folder that a repair run again (after a crash at any
    step) plans the same way: files are set aside by rename, the salvaged log is made under a
    temporary name and renamed whole (its header names the log it replaces), the manifest last."""
    m = p.manifest
    assert m is not None
    for name in p.damaged:  # out of the store's names, kept for whoever wants to look at them
        _set_aside(path / name, ".damaged")
    if p.wal_salvage is not None or not (path / m.wal).exists():
        # made whole under a temporary name: a log cut short here would not be journaled, so the
        # next repair would take it for a live log cut short (writes lost) and stop
        frames: list[Any] = []
        identity: dict[str, Any] = {"store": m.store_id, "seq": seq_of(m.wal), "generation": m.generation + 1}
        if p.wal_salvage is not None:
            frames, _ = decode_frames((path / p.wal_salvage).read_bytes(), path / p.wal_salvage, strict=False)
            identity["replaces"] = [p.wal_salvage]
        tmp = path / (m.wal + ".tmp")
        disk.unlink(tmp)  # what a repair cut short left
        fresh = WriteAheadLog(tmp, identity, create=True)
        try:
            for table in frames:
                fresh.append(table)
        finally:
            fresh.close()
        disk.replace(tmp, path / m.wal)
        disk.fsync_dir(path)
    for name in p.superseded:  # a damaged log a salvage replaced: kept aside, like other damage
        if p.found[name].problem and (path / name).exists():
            _set_aside(path / name, ".damaged")
    current = path / MANIFEST
    if current.exists():
        _set_aside(current, ".damaged")
    if m.store_id and marker_id(path) != m.store_id:  # a marker lost, or another store's put in
        if (path / MARKER).exists():
            _set_aside(path / MARKER, ".foreign")
        write_marker(path, m.store_id, m.copied_from)
        mark_spaces(path, m.spaces)
    # files a sound file replaces, and pieces of unfinished rewrites, are the store's own and not
    # part of it: the journal names them, so the next open removes them as debris (left alone they
    # would come back to life once whatever replaced them is compacted away)
    # The old journal's names stay debris when no whole file bears them: a file a crash left
    # half-written (its `.tmp`, a log cut short) was journaled before it was made, and nothing
    # else says it is the store's own. A whole file the plan left out (a second live log under
    # accept_loss, a file from before descriptions) may hold rows: never named (kept to look at),
    # like damaged and foreign files.
    journal = Journal(path)
    kept = [n for n in journal.names() if n not in p.live and n not in p.foreign and n != m.wal
            and (n not in p.found or p.found[n].torn)]  # m.wal: a log made here may take a journaled name
    journal.replace(sorted({*kept, *p.torn, *(n for n in p.superseded + p.unfinished
                                     if n not in p.live and not p.found[n].problem)}), m.generation + 1)
    write_manifest(path, m)
    log.info("repaired %s: a manifest rebuilt from %d files", path, len(p.live))


def _set_aside(path: Path, suffix: str) -> None:
    target = path.with_name(path.name + suffix)
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.name}{suffix}.{n}"), n + 1
    disk.replace(path, target)


def needs_repair(folder: Path) -> str | None:
    """Why `folder` needs a repair, or None: a lost or damaged manifest, one that does not agree
    with the files beside it (a listed file or the live log missing, another store's log, files
    newer than the manifest: storage/identity.py), or a damaged live log."""
    why = damaged_manifest(folder)
    if why is not None:
        return why
    m = parse_manifest((folder / MANIFEST).read_bytes(), folder / MANIFEST)
    why = refusal(folder, m, Journal(folder))
    if why is None:
        try:  # the live log: a damaged one is salvaged (its intact frames kept) with accept_loss
            decode_frames((folder / m.wal).read_bytes(), folder / m.wal)
        except CorruptFile as exc:
            why = f"its write-ahead log is damaged ({exc})"
    return why


def damaged_manifest(folder: Path) -> str | None:
    """Why `folder`'s manifest needs a repair (lost, or damaged), or None when it reads."""
    try:
        data = (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        return f"its {MANIFEST} is missing"
    except OSError as exc:
        return f"its {MANIFEST} is unreadable ({exc})"
    try:
        parse_manifest(data, folder / MANIFEST)
    except CorruptFile as exc:
        return str(exc)
    except NewerFormat:
        return None  # not damage: this reader is too old, and says so when it opens
    except FormatError as exc:
        return str(exc)
    return None
