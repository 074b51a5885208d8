"""The spool: writes that arrive while another process holds the writer's lock (hooks, C8).

Coding-agent hooks run as parallel processes beside a long-lived writer (an MCP server, the agent's
own process). A capture must neither fail nor wait for the lock, so it writes its records to
`<store>/spool/` as one file, whole or not at all, and the next writer ingests the folder (under
its lock, once). The file is written under a temporary name (`<name>.tmp`) that its writer holds
an exclusive `flock` on until it is renamed into place: a temporary file older than GRACE_S that
the writer can lock (`finish`) was left by a process that died, and is finished (renamed, when its records are whole)
or removed (when they are not: it was never acknowledged), so no capture that reached the disk
whole is stranded and no stray file stays. This module needs neither Arrow nor numpy: a hook
spools in milliseconds. Exactly once: every record carries the id it was given at capture time,
the writer skips ids it already holds (a crash between storing and unlinking replays harmlessly),
and only then unlinks the file. A file whose checksum fails, or whose records do not decode (a
malformed time), is renamed `*.damaged` (one the writer refuses, `*.rejected`): never ingested,
never deleted. Anything in the folder that is not a file (a directory named `x.json`) is left
alone: the store opens whatever the folder holds.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ..model.errors import StoreError
from . import disk

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; a temporary file is judged by its bytes alone
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("engramdb.storage")
FOLDER = "spool"
FORMAT = 1
TMP = ".tmp"
GRACE_S = 10.0  # a temporary file younger than this is a writer's at work (it spools in milliseconds)
_TIMES = ("valid_from", "valid_until", "expired_at", "forgotten_at")  # the record times add_many takes


def _jsonable(record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    for k in _TIMES:
        if isinstance(out.get(k), datetime):
            out[k] = out[k].isoformat()
    return out


def _write(store: Path, records: list[dict[str, Any]], suffix: str) -> Path:
    """One spool file, whole or not at all: the records as JSON with their CRC-32, named by time
    first so the writer takes files in the order they were made (see the module docstring)."""
    folder = store / FOLDER
    if folder.is_symlink():
        raise StoreError(f"{folder} is a symbolic link: the spool is a folder the store made; nothing is written "
                         "through a link (remove it)")
    disk.mkdir(folder, parents=True)
    body = json.dumps(records, ensure_ascii=False, sort_keys=True)
    raw = json.dumps({"format": FORMAT, "crc32": zlib.crc32(body.encode()), "records": body}).encode()
    path = folder / f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"
    tmp = path.with_name(path.name + TMP)
    fd = disk.open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held until renamed: `finish` leaves a living writer's file alone
        disk.write_at(fd, raw, 0, tmp)
        disk.fsync(fd, tmp)
        disk.replace(tmp, path)
    except BaseException:
        try:
            disk.unlink(tmp)
        except OSError:
            pass  # a temporary file nobody holds: `finish` takes care of it
        raise
    finally:
        disk.close(fd)
    try:
        disk.fsync_dir(folder)
    except OSError:
        pass  # the rename is visible to the writer either way; a crash of the machine may undo it
    return path


def torn(store: Path) -> bool:
    """True when the spool holds a temporary file (a writer at work, or one that died)."""
    folder = _folder(store)
    return folder is not None and any(p.name.endswith(TMP) for p in folder.iterdir())


@contextmanager
def exclusive(store: Path) -> Iterator[None]:
    """Hold the spool's own lock (a flock on the spool folder itself: no file to leave behind)
    across processes: what a capture with ids the caller chose holds while it checks the waiting
    records and adds its own, so two captures of one id cannot both pass the check."""
    folder = store / FOLDER
    if folder.is_symlink():
        raise StoreError(f"{folder} is a symbolic link: nothing is written through a link (remove it)")
    disk.mkdir(folder, parents=True)
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def finish(store: Path) -> int:
    """Settle the temporary files writers that died left (see the module docstring): a whole one
    takes its place, a torn one goes. Returns how many were settled; a file another process is
    still writing is left alone."""
    folder = _folder(store)
    if folder is None:
        return 0
    settled = 0
    now = time.time()
    for tmp in sorted(p for p in folder.iterdir() if p.name.endswith(TMP) and not p.is_symlink() and p.is_file()):
        try:
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # renamed or removed meanwhile
        if 0 <= now - os.fstat(fd).st_mtime < GRACE_S:  # a writer may have made it a moment ago, before
            os.close(fd)  # its flock (a time ahead of the clock is a clock stepped back: judged now)
            continue
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its writer is alive
            final = tmp.with_name(tmp.name[: -len(TMP)])
            if _open(tmp) is not None and not final.exists():
                disk.replace(tmp, final)  # whole: it was about to be renamed when its writer died
            else:
                disk.unlink(tmp)  # torn (never acknowledged), or a copy of a file already in place
            settled += 1
        finally:
            os.close(fd)
    return settled


def _open(path: Path) -> Any:
    """A spool file's decoded records (any JSON), or None when its envelope or checksum fails."""
    try:
        outer = json.loads(path.read_bytes())
        body = outer["records"]
        if outer.get("format") != FORMAT or zlib.crc32(body.encode()) != outer["crc32"]:
            return None
        return json.loads(body)
    except (ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError):  # OSError: unreadable
        return None


def put(store: Path, records: list[dict[str, Any]]) -> Path:
    """Write `records` (each with its "id") as one spool file; returns its path. Records must be
    JSON-able apart from datetimes in valid_from / valid_until."""
    return _write(store, [_jsonable(r) for r in records], ".json")


def _read(path: Path) -> list[dict[str, Any]] | None:
    """A spool file's records, or None when it is damaged."""
    records = _open(path)
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str)
                                                for r in records):
        return None
    try:
        for r in records:
            for k in _TIMES:
                if isinstance(r.get(k), str):
                    r[k] = datetime.fromisoformat(r[k])
    except ValueError:  # a checksum-valid file whose time is malformed: damaged, set aside like one
        return None
    return records


def waiting(store: Path) -> dict[str, dict[str, Any]]:
    """The records waiting in the spool by id (what a capture checks its ids against); damaged
    files are left for the writer to set aside."""
    out: dict[str, dict[str, Any]] = {}
    for path in pending(store):
        for r in _read(path) or ():
            out.setdefault(r["id"], r)
    return out


def jsonable(record: dict[str, Any]) -> dict[str, Any]:
    """A record as a spool file holds it (its times as ISO text), to compare with a waiting one."""
    out: dict[str, Any] = json.loads(json.dumps(_jsonable(record), sort_keys=True))
    return out


def _folder(store: Path) -> Path | None:
    """The spool folder, or None when there is none, or it is a symbolic link: the spool's files
    are the store's own, and nothing is read, renamed or removed through a link."""
    folder = store / FOLDER
    if folder.is_symlink() or not folder.is_dir():
        return None
    return folder


def _files(store: Path, *suffixes: str) -> list[Path]:
    """The spool's plain files (never a link, never a folder) with one of these suffixes, oldest first."""
    folder = _folder(store)
    if folder is None:
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in suffixes and not p.is_symlink() and p.is_file())


def pending(store: Path) -> list[Path]:
    """The spool files waiting, oldest first."""
    return _files(store, ".json")


def _set_aside(path: Path, suffix: str) -> None:
    """Rename a file the writer will not take in (`<name>.damaged`, `.rejected`), to a name that
    is free (`.damaged.1`, ...): kept for whoever wants to look at it, never in the way."""
    target = path.with_suffix(suffix)
    n = 1
    while target.exists() or target.is_symlink():
        target, n = path.with_suffix(f"{suffix}.{n}"), n + 1
    disk.replace(path, target)


def drain(store: Path, apply: Callable[[list[dict[str, Any]]], None], *, limit: int = 1000) -> dict[str, int]:
    """Hand the records of up to `limit` waiting files to `apply` (the writer, which skips ids it
    holds) as one batch, one fsync however many hooks spooled, then unlink the files. A damaged
    file is renamed `*.damaged`; when the writer refuses the batch, the files are tried one by
    one and a refused one is renamed `*.rejected`. Returns counts of files and records."""
    done = {"files": 0, "records": 0, "damaged": 0, "rejected": 0}
    finish(store)  # what writers that died left under a temporary name: whole ones are taken in too
    batch: list[tuple[Path, list[dict[str, Any]]]] = []
    for path in pending(store)[:limit]:
        records = _read(path)
        if records is None:
            _set_aside(path, ".damaged")
            done["damaged"] += 1
        else:
            batch.append((path, records))
    if not batch:
        return done
    try:
        apply([r for _, records in batch for r in records])
        kept = batch
    except ValueError:  # checked at capture, so only a schema changed since: find the file, keep it aside
        kept = []
        for path, records in batch:
            try:
                apply(records)
                kept.append((path, records))
            except ValueError:
                _set_aside(path, ".rejected")
                done["rejected"] += 1
    for path, records in kept:
        disk.unlink(path, missing_ok=False)
        done["files"] += 1
        done["records"] += len(records)
    return done


# ------------------------------------------------------------------------------ readers' access rows
# A read-only store (a hook beside an MCP server, a service's reader) logs its searches and context
# injections here, so the writer's ratings learn from them (E1): the same envelope, `*.access`.
ACCESS_SUFFIX = ".access"
TAKING_SUFFIX = ".taking"  # an access file being added to the log: one left behind was cut short


def put_access(store: Path, rows: list[dict[str, Any]]) -> Path:
    """Write access-log rows (each with "kind", "query_id" and "at", a datetime) as one spool file."""
    return _write(store, [{**r, "at": r["at"].isoformat()} for r in rows], ACCESS_SUFFIX)


def _read_access(path: Path) -> list[dict[str, Any]] | None:
    """A spooled file's access rows, or None when it is damaged."""
    rows = _open(path)
    if not isinstance(rows, list) or not all(_access_row(r) for r in rows):
        return None
    try:
        for r in rows:
            r["at"] = datetime.fromisoformat(r["at"])
            if r["at"].tzinfo is None:
                return None
    except ValueError:
        return None
    return rows


_ACCESS_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,), "query_id": (str,), "at": (str,), "namespace": (str,), "session_id": (str, type(None)),
    "query": (str, type(None)), "strategy": (str, type(None)), "memory_id": (str, type(None)),
    "rank": (int, type(None)), "score": (float, int, type(None)), "used": (bool,),
    "latency_ms": (float, int, type(None))}


def _access_row(r: object) -> bool:
    """A row the access log can take as it is: known fields of the right types and ranges, text
    UTF-8 can encode (a file written by another program, or damaged past its checksum, is refused
    whole)."""
    return isinstance(r, dict) and all(k in r for k in ("kind", "query_id", "at", "namespace")) and all(
        k in _ACCESS_TYPES and isinstance(v, _ACCESS_TYPES[k]) and _in_range(k, v) for k, v in r.items())


def _in_range(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return key == "used"
    if isinstance(value, int):
        return 0 <= value < 2**62 if key == "rank" else abs(value) < 2**53
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return value.isascii() or _encodes(value)
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def drain_access(store: Path, apply: Callable[[list[dict[str, Any]], bool], None]) -> dict[str, int]:
    """Hand every waiting file's access rows to `apply(rows, replay)` (the writer's log, which
    makes them durable), then unlink the files; a damaged one is renamed `*.damaged`. Each file
    is renamed `*.taking` first: one found under that name was cut short after `apply` may have
    logged it, so its rows come with `replay` True (the log skips those it holds); the common case
    costs the log no lookup."""
    done = {"files": 0, "rows": 0, "damaged": 0}
    finish(store)
    fresh, again = [], []
    for path in _files(store, ACCESS_SUFFIX, TAKING_SUFFIX):
        rows = _read_access(path)
        if rows is None:
            _set_aside(path, ".damaged")
            done["damaged"] += 1
        elif path.suffix == TAKING_SUFFIX:
            again.append((path, rows))
        else:
            taking = path.with_suffix(TAKING_SUFFIX)
            if taking.exists() or taking.is_symlink():  # a name in the way (not ours to move): this file aside
                log.warning("%s: its name while it is taken in, %s, is taken; set aside", path, taking.name)
                _set_aside(path, ".damaged")
                done["damaged"] += 1
                continue
            disk.replace(path, taking)
            fresh.append((taking, rows))
    for batch, replay in ((again, True), (fresh, False)):
        if not batch:
            continue
        try:
            apply([r for _, rows in batch for r in rows], replay)
        except (ValueError, TypeError, OverflowError, UnicodeError) as exc:
            # rows the log refuses (another program's file, past the checks above): file by file, and
            # a refused one set aside, never replayed at every open
            for path, rows in list(batch):
                try:
                    apply(rows, replay)
                except (ValueError, TypeError, OverflowError, UnicodeError):
                    log.warning("%s: access rows the log refuses (%s), set aside", path, exc)
                    _set_aside(path, ".damaged")
                    done["damaged"] += 1
                    (again if replay else fresh).remove((path, rows))
    for path, rows in again + fresh:
        disk.unlink(path, missing_ok=False)
        done["files"] += 1
        done["rows"] += len(rows)
    return done


def access_pending(store: Path) -> bool:
    return bool(_files(store, ACCESS_SUFFIX, TAKING_SUFFIX))


def quiet(store: Path) -> bool:
    """True when the spool holds nothing a writer takes in (no capture, no access rows, no
    temporary file): one listing of the folder, where `pending`, `access_pending` and `torn`
    list it three times (a writer asks at every add). False may still mean nothing to do: the
    three say exactly what."""
    folder = _folder(store)
    if folder is None:
        return True
    # by the name's end, not os.path.splitext: it gives no extension to `..json`, where the checks'
    # Path.suffix gives ".json" (a capture they take in); a name's end finds all they find, and more
    wanted = (".json", ACCESS_SUFFIX, TAKING_SUFFIX, TMP)
    try:
        with os.scandir(folder) as entries:
            return not any(e.name.endswith(wanted) for e in entries)
    except OSError:
        return False  # gone or replaced since `_folder` looked (not quiet: the three checks say what is there)


__all__ = ["ACCESS_SUFFIX", "FOLDER", "TAKING_SUFFIX", "access_pending", "drain", "drain_access", "exclusive", "finish",
           "jsonable", "pending", "put", "put_access", "quiet", "torn", "waiting"]
