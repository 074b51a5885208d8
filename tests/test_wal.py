"""S6: the write-ahead log: fsynced frames, torn tails cut, golden frames still readable."""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from engramdb import CorruptFile
from engramdb.model import Memory, validate_memory
from engramdb.storage.columns import memories_to_table, table_to_memories
from engramdb.storage.wal import HEADER, WalError, WriteAheadLog, decode_frames, encode_frame, read_frames

GOLDEN = Path(__file__).parent / "golden"
T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)


def golden_memories() -> list[Memory]:
    """The fixed records behind tests/golden/wal-v1.log (never change them)."""
    return [
        validate_memory(Memory(id="m1", namespace="alice", content="Alice moved to Lisbon.", session_id="s1", seq=0,
                               role="user", memory_type="fact", confidence=0.9, metadata={"lang": "en"},
                               valid_from=T0, learned_at=T0)),
        validate_memory(Memory(id="m2", namespace="alice", content="She works at a bakery.", session_id="s1", seq=1,
                               role="user", learned_at=T0, version=2, supersedes="m0",
                               provenance={"source_uri": "chat://s1"})),
    ]


def batch(i: int) -> list[Memory]:
    return [validate_memory(Memory(id=f"m{i}-{j}", namespace="ns", content=f"turn {i} part {j}")) for j in range(3)]


def test_frames_round_trip_and_survive_reopen(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal.log")
    for i in range(5):
        wal.append(memories_to_table(batch(i)))
    wal.close()
    again = WriteAheadLog(tmp_path / "wal.log")
    got = [table_to_memories(t) for t in again.recover()]
    assert got == [batch(i) for i in range(5)]


@pytest.mark.parametrize("cut", [1, 5, 11, 30, -1])
def test_a_torn_tail_is_cut_and_earlier_frames_kept(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "wal.log"
    wal = WriteAheadLog(path)
    wal.append(memories_to_table(batch(0)))
    end_of_first = wal.append(memories_to_table(batch(1)))
    wal.close()
    frame = encode_frame(memories_to_table(batch(2)))
    with open(path, "ab") as fh:  # a third frame, torn by a crash partway through
        fh.write(frame[: cut if cut > 0 else len(frame) - 1])
    again = WriteAheadLog(path)
    assert [table_to_memories(t) for t in again.recover()] == [batch(0), batch(1)]
    assert path.stat().st_size == end_of_first  # the torn bytes are gone
    again.append(memories_to_table(batch(3)))  # and appending continues cleanly
    again.close()
    assert [table_to_memories(t) for t in read_frames(path)[0]] == [batch(0), batch(1), batch(3)]


def two_frames(tmp_path: Path) -> tuple[Path, bytes]:
    """A WAL of two frames (batches 0 and 1): its path and its bytes."""
    path = tmp_path / "wal.log"
    wal = WriteAheadLog(path)
    wal.append(memories_to_table(batch(0)))
    wal.append(memories_to_table(batch(1)))
    wal.close()
    return path, path.read_bytes()


def test_a_damaged_frame_is_named_never_cut_off_silently(tmp_path: Path) -> None:
    path, clean = two_frames(tmp_path)
    frame = len(HEADER) + 12 + struct.unpack_from("<I", clean, len(HEADER) + 4)[0]  # where frame 2 starts
    for at, what in ((len(clean) - 5, "fails its CRC-32"),  # the last frame's payload: acknowledged, then changed
                     (len(HEADER) + 20, "fails its CRC-32"),  # the first frame's, with an intact one after it
                     (frame + 1, "damaged header"),  # the last frame's magic
                     (frame + 5, "damaged length")):  # its length: the payload is whole
        data = bytearray(clean)
        data[at] ^= 0x40
        path.write_bytes(bytes(data))
        with pytest.raises(CorruptFile, match=what):
            read_frames(path)
        salvaged, _ = decode_frames(bytes(data), path, strict=False)  # salvage: the intact frames before it
        assert [table_to_memories(t) for t in salvaged] == [batch(0)][: len(salvaged)]


def test_a_torn_last_write_is_cut_off(tmp_path: Path) -> None:
    path, clean = two_frames(tmp_path)
    for torn in (clean[:-7], clean + b"\0" * 4096, clean + b"EGF"):
        path.write_bytes(torn)
        tables, _ = read_frames(path)  # short payload, zero-filled tail, a partial header: never acknowledged
        assert [table_to_memories(t) for t in tables] == ([batch(0), batch(1)] if torn.startswith(clean) else [batch(0)])


def test_not_a_wal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    path.write_bytes(b"PK\x03\x04 something else")
    with pytest.raises(WalError, match="not an engramdb write-ahead log"):
        read_frames(path)
    path.write_bytes(HEADER[:3])  # a crash while the header was written: an empty log
    assert read_frames(path) == ([], 0)


def test_golden_v1_log_still_reads() -> None:
    tables, end = read_frames(GOLDEN / "wal-v1.log")
    assert end == (GOLDEN / "wal-v1.log").stat().st_size
    assert [m for t in tables for m in table_to_memories(t)] == golden_memories()


def test_acknowledged_frames_survive_sigkill(tmp_path: Path) -> None:
    """A writer killed at a random moment loses nothing it acknowledged."""
    path = tmp_path / "wal.log"
    code = textwrap.dedent(
        f"""
        from engramdb.model import Memory, validate_memory
        from engramdb.storage.columns import memories_to_table
        from engramdb.storage.wal import WriteAheadLog
        wal = WriteAheadLog({str(path)!r})
        i = 0
        while True:
            rows = [validate_memory(Memory(id=f"m{{i}}-{{j}}", namespace="ns", content="x" * (50 + j))) for j in range(20)]
            wal.append(memories_to_table(rows))
            print("ACK", i, flush=True)  # acknowledged: on disk before this line
            i += 1
        """
    )
    for delay in (0.0, 0.05, 0.2):
        if path.exists():
            path.unlink()
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = ""
        while not first.startswith("ACK "):  # wait until the writer is writing (imports take a while)
            first = proc.stdout.readline()
            assert first or proc.poll() is None, "the writer died before its first frame"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        out = first + proc.stdout.read()
        proc.wait()
        acked = [int(n) for n in re.findall(r"^ACK (\d+)\n", out, re.MULTILINE)]  # whole lines: a kill can cut one
        assert acked, "no frame was acknowledged"
        tables, _ = read_frames(path)
        ids = [m.id for t in tables for m in table_to_memories(t)]
        assert len(tables) >= len(acked), f"acknowledged {len(acked)} frames, recovered {len(tables)}"
        assert ids[: 20 * len(acked)] == [f"m{i}-{j}" for i in range(len(acked)) for j in range(20)]


def test_golden_v2_log_reads_with_its_identity_and_a_frame_of_two_streams() -> None:
    """wal-v2.log (format 6, tools/make_golden_wal.py): a header naming its store, number and
    generation; a frame of one memory, then a supersede's two versions and its edge in one frame."""
    from engramdb.storage.edge_files import is_edge_table, table_to_edges
    from engramdb.storage.wal import HEADER_MAX, read_header

    data = (GOLDEN / "wal-v2.log").read_bytes()
    identity, start = read_header(data[:HEADER_MAX], GOLDEN / "wal-v2.log")
    assert identity == {"store": "0123456789abcdef0123456789abcdef", "seq": 1, "generation": 1}
    assert data[:8] == b"EGWAL002" and start > 16
    tables, end = read_frames(GOLDEN / "wal-v2.log")
    assert end == len(data) and len(tables) == 3
    first, _ = golden_memories()
    assert table_to_memories(tables[0]) == [first]
    assert [(m.id, m.version, m.superseded_by, m.supersedes) for m in table_to_memories(tables[1])] == \
        [("m1", 2, "m2", None), ("m2", 3, None, "m1")]
    assert is_edge_table(tables[2])
    assert [(e.src, e.dst, e.type) for e in table_to_edges(tables[2])] == [("m2", "m1", "SUPERSEDES")]


def test_a_log_written_with_an_identity_reads_it_back(tmp_path: Path) -> None:
    identity = {"store": "abc", "seq": 7, "generation": 3}
    WriteAheadLog(tmp_path / "wal-000007.log", identity, create=True).close()
    again = WriteAheadLog(tmp_path / "wal-000007.log")
    assert again.identity == identity and again.recover() == []
    again.close()
    with pytest.raises(FileExistsError):
        WriteAheadLog(tmp_path / "wal-000007.log", identity, create=True)  # never over an existing log
    with pytest.raises(FileNotFoundError):
        WriteAheadLog(tmp_path / "wal-000008.log", create=False)
