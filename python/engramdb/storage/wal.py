"""The write-ahead log (S6): an acknowledged write survives `kill -9`.

File layout: a header, then frames. The header is `EGWAL002 | u32 length | u32 crc32(json) |
json`, the JSON naming whose log it is: `store` (the store's id), `seq` (the number in its name),
`generation` (the manifest generation it was made in) and `replaces` (the logs whose frames it
took over: a repair's salvage). Logs written before format 6 have the bare 8-byte header
`EGWAL001` and no identity; they are still read. A frame is
`b"EGF1" | u32 length | u32 crc32(payload) | payload`, little-endian, where the payload is one
Arrow IPC stream (schema + record batches), or from format 6 several back to back (a supersede's
new versions and its edge: one write, one frame). `append` writes a whole frame and fsyncs before it
returns, so a write is acknowledged only once it is on disk. Recovery reads frames until the first
one a crash tore (a partial header, a short payload, a zero-filled tail) and truncates the file
there: every acknowledged frame survives, a torn one was never acknowledged. A whole frame that
fails its CRC, or a bad frame with an intact one after it, is damage, not a torn write: CorruptFile
names it and nothing is truncated (a read-only salvage reads the frames before it).
"""

from __future__ import annotations

import errno
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..model.errors import CorruptFile
from . import disk

HEADER = b"EGWAL001"  # a log without an identity (before format 6)
HEADER_V2 = b"EGWAL002"
_HEAD = struct.Struct("<8sII")
HEADER_MAX = 1 << 16  # an identity is a few hundred bytes; more is not a header this version wrote
FRAME_MAGIC = b"EGF1"
_FRAME = struct.Struct("<4sII")
_ZERO_TAIL = 16  # zero bytes ending the last frame's payload that mark it torn, not damaged


def encode_header(identity: dict[str, Any] | None) -> bytes:
    """The header of a new log naming `identity` (the bare v1 header when None)."""
    if identity is None:
        return HEADER
    body = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return _HEAD.pack(HEADER_V2, len(body), zlib.crc32(body)) + body


def read_header(data: bytes, path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, int]:
    """(identity, where the frames start) of a log's first bytes: None for a v1 log; ({}, 0) for
    a log whose header a crash cut short while it was being made (it holds no frame)."""
    if data[:8] == HEADER:
        return None, len(HEADER)
    if data[:8] != HEADER_V2:
        if len(data) < 8 and (HEADER.startswith(data) or HEADER_V2.startswith(data)):
            return {}, 0  # a crash while the header was written: an empty log
        raise WalError(path, f"not an engramdb write-ahead log (header {data[:8]!r}, expected {HEADER_V2!r})")
    if len(data) < _HEAD.size:
        return {}, 0
    _, length, crc = _HEAD.unpack_from(data)
    body = data[_HEAD.size:_HEAD.size + length]
    if length > HEADER_MAX - _HEAD.size:
        raise WalError(path, f"its header claims {length:,} bytes: damaged")
    if len(body) < length:
        if FRAME_MAGIC in data[_HEAD.size:]:  # frames follow: the header was whole, its length field changed
            raise WalError(path, "its header's length field is damaged")
        return {}, 0  # cut short while it was being made: no frame follows
    if zlib.crc32(body) != crc:
        raise WalError(path, "its header fails its CRC-32 (damaged)")
    try:
        identity = json.loads(body)
    except ValueError:
        raise WalError(path, "its header passes its CRC but is not JSON") from None
    if not isinstance(identity, dict):
        raise WalError(path, "its header is not a JSON object")
    return identity, _HEAD.size + length


def listed_header(data: bytes, path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """`read_header` of a log a manifest lists: it was whole when it was listed, so a header that
    is missing or cut short is damage (WalError), never an empty log."""
    identity, start = read_header(data[:HEADER_MAX], path)
    if start == 0:
        raise WalError(path, "its header is missing or cut short (the log was whole when the manifest listed it)")
    return identity


class WalError(CorruptFile):
    """The log cannot be read at all (not a torn tail: a wrong header or an unreadable file)."""


def encode_frame(*tables: pa.Table) -> bytes:
    """The bytes of one frame holding `tables` (one Arrow IPC stream each, back to back: a write
    that changes memories and edges together, a supersede, is one frame, durable whole or not)."""
    sink = pa.BufferOutputStream()
    for table in tables:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    payload: bytes = sink.getvalue().to_pybytes()
    return _FRAME.pack(FRAME_MAGIC, len(payload), zlib.crc32(payload)) + payload


def decode_payload(payload: bytes) -> list[pa.Table]:
    """The tables inside a frame payload, in order."""
    reader = pa.BufferReader(pa.py_buffer(payload))
    tables = []
    while reader.tell() < len(payload):
        tables.append(pa.ipc.open_stream(reader).read_all())
    if not tables:
        raise ValueError("an empty frame")
    return tables


class WriteAheadLog:
    """Append-only, fsynced frames of Arrow tables in one file.

    Writes go through the I/O seam (storage/disk.py) unbuffered, at the offset where the intact
    log ends: a failed append is cut back off the file before the error is raised, and when even
    the cut fails the log refuses further appends until a cut succeeds, so no byte of a write that
    raised can become durable behind a later one. `identity` (the store's id, the log's number,
    the generation it was made in, the logs it replaces) goes into a new log's header; an existing
    log's is read back as `identity` (None for a log written before logs carried one)."""

    def __init__(self, path: str | os.PathLike[str], identity: dict[str, Any] | None = None, *,
                 create: bool | None = None) -> None:
        """Open the log at `path`: `create=True` makes a new one (never over an existing file),
        False opens an existing one (FileNotFoundError when it is missing), None either."""
        self.path = Path(path)
        if create is None:
            create = not self.path.exists()
        if self.path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "a write-ahead log path is a folder", str(self.path))
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self._fd: int | None = disk.open_fd(self.path, flags)
        self._broken = ""  # why appends are refused (a failed cut), "" while the log is whole
        try:
            size = os.fstat(self._fd).st_size
            head = os.pread(self._fd, HEADER_MAX, 0) if size else b""
            torn = size == 0 or read_header(head, self.path)[1] == 0
            if torn and create is False and identity is not None:
                # a log the manifest lists was whole when it was listed: an empty or cut header is damage
                raise WalError(self.path, "its header is missing or cut short (the log was whole when the manifest "
                               "listed it): its frames cannot be trusted")
            if torn:  # new, or a header a crash cut short while the log was being made
                header = encode_header(identity)
                if size:
                    disk.truncate(self._fd, 0, self.path)
                disk.write_at(self._fd, header, 0, self.path)
                disk.fsync(self._fd, self.path)
                disk.fsync_dir(self.path.parent)
                self._end = len(header)
                self.identity: dict[str, Any] | None = identity if identity is not None else {}
            else:
                self.identity, self._end = read_header(head, self.path)
        except BaseException:
            disk.close(self._fd)
            self._fd = None
            raise

    def append(self, *tables: pa.Table) -> int:
        """Write one frame holding `tables` and fsync it; returns the file size after the frame.
        When the write or the fsync fails (a full disk, an I/O error) the frame is cut off again
        and the error raised: the write was not acknowledged, and the log stays a sequence of
        whole frames."""
        frame = encode_frame(*tables)
        fd = self._descriptor()
        if self._broken:
            self._cut()  # the last failed append's bytes first; raises again while it cannot
        try:
            disk.write_at(fd, frame, self._end, self.path)
            disk.fsync(fd, self.path)
        except BaseException:
            try:
                self._cut()
            except OSError:
                pass  # the log now refuses appends until a cut succeeds (see _cut)
            raise
        self._end += len(frame)
        return self._end

    def _cut(self) -> None:
        """Truncate the file back to the intact log's end, durably; when that fails, remember why:
        every later append tries the cut again first and raises while it fails."""
        fd = self._descriptor()
        try:
            disk.truncate(fd, self._end, self.path)
            disk.fsync(fd, self.path)
        except OSError as exc:
            self._broken = str(exc)
            raise OSError(exc.errno, f"{self.path}: a failed write could not be cut off the log ({exc}); "
                          "writes are refused until it can be (or the store is reopened)") from None
        self._broken = ""

    def _descriptor(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        return self._fd

    def recover(self) -> list[pa.Table]:
        """All intact frames, in order; a torn tail is cut off the file."""
        fd = self._descriptor()
        data = _read_all(fd)
        tables, good_end = decode_frames(data, self.path)
        self._end = max(good_end, self._end)
        if good_end < len(data):
            disk.truncate(fd, self._end, self.path)
            disk.fsync(fd, self.path)
        return tables

    def size(self) -> int:
        """Bytes in the log (its intact frames and header)."""
        return self._end

    def close(self) -> None:
        """Close the file (frames are already on disk). Idempotent."""
        if self._fd is not None:
            disk.close(self._fd)
            self._fd = None


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    parts, at = [], 0
    while at < size:
        chunk = os.pread(fd, size - at, at)
        if not chunk:
            break
        parts.append(chunk)
        at += len(chunk)
    return b"".join(parts)


def read_frames(path: str | os.PathLike[str]) -> tuple[list[pa.Table], int]:
    """(tables of the intact frames, byte offset where the intact part ends)."""
    return decode_frames(Path(path).read_bytes(), path)


def decode_frames(data: bytes, path: str | os.PathLike[str], *, strict: bool = True) -> tuple[list[pa.Table], int]:
    """`read_frames` of a log's bytes (`path` names it in errors). `strict=False` (salvage): the
    intact frames before any damage, without raising for the damage."""
    try:
        _, pos = read_header(data[:HEADER_MAX], path)
    except WalError:
        if strict or FRAME_MAGIC not in data:
            raise
        pos = data.find(FRAME_MAGIC)  # salvage: the frames after a damaged header
    if pos == 0:
        return [], 0
    tables = []
    while pos < len(data):
        damage = _frame_damage(data, pos)
        if damage == "torn":
            break  # a crash tore the last write: never acknowledged, cut off
        if damage is not None:
            if not strict:
                break
            raise CorruptFile(Path(path), f"the frame at byte {pos} {damage}")
        _, length, _ = _FRAME.unpack_from(data, pos)
        start, end = pos + _FRAME.size, pos + _FRAME.size + length
        try:
            tables.extend(decode_payload(data[start:end]))
        except (pa.ArrowException, OSError, ValueError) as exc:
            if not strict:
                break
            raise CorruptFile(Path(path), f"frame at byte {pos} passes its CRC but holds no Arrow table ({exc})") \
                from None
        pos = end
    return tables, pos


def _frame_damage(data: bytes, pos: int) -> str | None:
    """Why the frame at `pos` cannot be read: None (it is whole), "torn" (what a crash during its
    append leaves: a partial header, a short payload, or zeros the file system filled in), or
    a description of damage. Appends are sequential and fsynced, so a whole-length frame whose
    CRC fails, or a bad frame with an intact one after it, was acknowledged and then damaged."""
    if len(data) - pos < _FRAME.size:
        return "torn" if not _intact_frame_after(data, pos + 1) else "has a damaged header"
    magic, length, crc = _FRAME.unpack_from(data, pos)
    start, end = pos + _FRAME.size, pos + _FRAME.size + length
    if magic != FRAME_MAGIC:
        if not data[pos:].strip(b"\0"):
            return "torn"
        return "has a damaged header (no frame magic)"
    if end > len(data):
        if zlib.crc32(data[start:]) == crc or _intact_frame_after(data, pos + 1):
            return "has a damaged length"  # the payload is whole: the length field is what changed
        return "torn"
    if zlib.crc32(data[start:end]) != crc:
        if end == len(data) and not data[max(start, end - _ZERO_TAIL):end].strip(b"\0"):
            # the last frame, its payload ending in zeros: a file system that extended the file
            # before the data reached it (a crash mid-append); an Arrow stream ends 0xFFFFFFFF 0x0
            return "torn"
        return "fails its CRC-32 (its bytes changed after it was written)"
    return None


def _intact_frame_after(data: bytes, start: int) -> bool:
    """True when a frame that passes its CRC starts anywhere at or after `start`."""
    at = data.find(FRAME_MAGIC, start)
    while at >= 0:
        if at + _FRAME.size <= len(data):
            _, length, crc = _FRAME.unpack_from(data, at)
            end = at + _FRAME.size + length
            if end <= len(data) and zlib.crc32(data[at + _FRAME.size : end]) == crc:
                return True
        at = data.find(FRAME_MAGIC, at + 1)
    return False
