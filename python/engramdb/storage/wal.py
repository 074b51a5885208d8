"""The write-ahead log (S6): an acknowledged write survives `kill -9`.

File layout: an 8-byte header `EGWAL001`, then frames. A frame is
`b"EGF1" | u32 length | u32 crc32(payload) | payload`, little-endian, where the payload is one
Arrow IPC stream (schema + record batches). `append` writes a whole frame and fsyncs before it
returns, so a write is acknowledged only once it is on disk. Recovery reads frames until the first
one a crash tore (a partial header, a short payload, a zero-filled tail) and truncates the file
there: every acknowledged frame survives, a torn one was never acknowledged. A whole frame that
fails its CRC, or a bad frame with an intact one after it, is damage, not a torn write: CorruptFile
names it and nothing is truncated (a read-only salvage reads the frames before it).
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pyarrow as pa

from ..model.errors import CorruptFile

HEADER = b"EGWAL001"
FRAME_MAGIC = b"EGF1"
_FRAME = struct.Struct("<4sII")


class WalError(CorruptFile):
    """The log cannot be read at all (not a torn tail: a wrong header or an unreadable file)."""


def encode_frame(table: pa.Table) -> bytes:
    """The bytes of one frame holding `table`."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    payload: bytes = sink.getvalue().to_pybytes()
    return _FRAME.pack(FRAME_MAGIC, len(payload), zlib.crc32(payload)) + payload


def decode_payload(payload: bytes) -> pa.Table:
    """The table inside a frame payload."""
    return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()


class WriteAheadLog:
    """Append-only, fsynced frames of Arrow tables in one file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        fresh = not self.path.exists()
        self._fh = open(self.path, "ab+")  # noqa: SIM115 - kept open for the store's lifetime
        if fresh or self.path.stat().st_size == 0:
            self._fh.write(HEADER)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            _fsync_dir(self.path.parent)

    def append(self, table: pa.Table) -> int:
        """Write one frame and fsync it; returns the file size after the frame. When the write or
        the fsync fails (a full disk, an I/O error) the frame is cut off again and the error
        raised: the write was not acknowledged, and the log stays a sequence of whole frames."""
        frame = encode_frame(table)
        start = self._fh.tell()
        try:
            self._fh.write(frame)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except BaseException:
            self._cut(start)
            raise
        return self._fh.tell()

    def _cut(self, size: int) -> None:
        """Truncate back to `size` after a failed append (best effort: if even that fails, the
        next open finds a torn or damaged tail and says so)."""
        try:
            self._fh.seek(size)
            self._fh.truncate(size)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError:
            pass

    def recover(self) -> list[pa.Table]:
        """All intact frames, in order; a torn tail is cut off the file."""
        tables, good_end = read_frames(self.path)
        if good_end < self.path.stat().st_size:
            self._fh.truncate(good_end)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._fh.seek(0, os.SEEK_END)
        return tables

    def size(self) -> int:
        """Bytes in the log file."""
        return self.path.stat().st_size

    def close(self) -> None:
        """Close the file handle (frames are already on disk)."""
        self._fh.close()


def read_frames(path: str | os.PathLike[str]) -> tuple[list[pa.Table], int]:
    """(tables of the intact frames, byte offset where the intact part ends)."""
    return decode_frames(Path(path).read_bytes(), path)


def decode_frames(data: bytes, path: str | os.PathLike[str], *, strict: bool = True) -> tuple[list[pa.Table], int]:
    """`read_frames` of a log's bytes (`path` names it in errors). `strict=False` (salvage): the
    intact frames before any damage, without raising for the damage."""
    if len(data) < len(HEADER):
        if HEADER.startswith(data):  # a crash while writing the header: an empty log
            return [], 0
        raise WalError(path, f"not an engramdb write-ahead log (bad header {data[:8]!r})")
    if data[: len(HEADER)] != HEADER:
        raise WalError(path, f"not an engramdb write-ahead log (header {data[:8]!r}, expected {HEADER!r})")
    pos = len(HEADER)
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
            tables.append(decode_payload(data[start:end]))
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


def _fsync_dir(path: Path) -> None:
    """Make a directory entry (a created or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
