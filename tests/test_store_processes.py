"""S6 + S9 across processes: a writer killed mid-add_many loses nothing acknowledged; one writer,
many readers."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from engramdb import StoreLocked
from engramdb import open as open_store
from store_helpers import toy_embedders, toy_schema

TESTS = Path(__file__).resolve().parent

WRITER = """
import sys
sys.path.insert(0, {tests!r})
from store_helpers import toy_embedders, toy_schema
from engramdb import Tuning
from engramdb import open as open_store
db = open_store({path!r}, schema=toy_schema(), embedders=toy_embedders(), dedup="off",
                tuning=Tuning(checkpoint_rows={checkpoint}))
print("READY", flush=True)
b = 0
while True:
    ids = db.add_many([{{"content": f"batch {{b}} turn {{j}}", "namespace": "n", "id": f"b{{b}}-{{j}}"}} for j in range(40)])
    print("ACK", b, flush=True)  # add_many returned: acknowledged
    b += 1
    {extra}
"""


def spawn(path: Path, checkpoint: int = 4096, extra: str = "") -> subprocess.Popen[str]:
    code = textwrap.dedent(WRITER).format(tests=str(TESTS), path=str(path), checkpoint=checkpoint, extra=extra)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def wait_for(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line or proc.poll() is None, "the writer died early"
        if line.startswith(prefix):
            return line


@pytest.mark.parametrize(("delay", "checkpoint"), [(0.0, 4096), (0.15, 4096), (0.3, 120)])
def test_sigkill_during_add_many_loses_nothing_acknowledged(tmp_path: Path, delay: float, checkpoint: int) -> None:
    path = tmp_path / "mem"
    proc = spawn(path, checkpoint)
    out = wait_for(proc, "ACK ")
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.stdout is not None
    out += proc.stdout.read()
    proc.wait()
    acked = [int(n) for n in re.findall(r"^ACK (\d+)\n", out, re.MULTILINE)]  # whole lines: a kill can cut one
    assert acked
    db = open_store(path, schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    for b in acked:
        for j in (0, 39):
            m = db.get(f"b{b}-{j}")
            assert m is not None and m.content == f"batch {b} turn {j}"
    n = len(db)
    assert n >= 40 * len(acked) and n % 40 == 0  # whole batches only: a torn batch never appears
    assert db.search("batch 0 turn 0", namespace="n", k=1)[0].id == "b0-0"
    db.add("after the crash", namespace="n")  # and the store takes writes again
    db.close()


def test_one_writer_many_readers(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    proc = spawn(path, extra="import time; time.sleep(60)")
    try:
        wait_for(proc, "ACK ")
        with pytest.raises(StoreLocked, match="is open for writing by pid"):
            open_store(path, schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
        reader = open_store(path, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
        assert reader.get("b0-0") is not None  # the writer's acknowledged batch, read from its WAL
        with pytest.raises(Exception, match="read-only"):
            reader.add("no", namespace="n")
        reader.close()
    finally:
        proc.kill()
        proc.wait()
    writer = open_store(path, schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    writer.close()  # the dead writer's lock went with its process


def test_readers_opening_while_the_writer_checkpoints_see_every_acknowledged_write(tmp_path: Path) -> None:
    """A read-only open that raced a checkpoint used to read a manifest and a WAL that no longer
    belonged together (acknowledged rows missing). Here the writer checkpoints every 120 rows (3
    batches) while this process reopens read-only for ~4 s and reads ids acknowledged before each open.
    4 s, measured here: 166 reopens while the writer acknowledged 256 batches (~85 checkpoints),
    over eight times the floors asserted below; the 8 s this ran doubled them and found nothing more.
    It goes on past 4 s until the floors are reached: counted in operations, not seconds, they hold
    on a slow or loaded machine (4 s under other jobs' load and two busy loops gave 12 reopens here)."""
    path = tmp_path / "mem"
    proc = spawn(path, checkpoint=120)
    acked = [-1]
    lock = threading.Lock()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ACK "):
                with lock:
                    acked[0] = int(line.split()[1])

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    rng = np.random.default_rng(0)
    opens, misses = 0, []
    try:
        wait_for_ack(acked, lock)
        start = time.monotonic()
        while True:
            with lock:
                last = acked[0]
            took = time.monotonic() - start
            if (took >= 4 and opens >= 20 and last >= 30) or took > 300:  # past 300 s: a hang, failed below
                break
            db = open_store(path, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
            opens += 1
            for b in {last, *rng.integers(0, last + 1, 5).tolist()}:
                if db.get(f"b{b}-39") is None:
                    misses.append((opens, b, last))
            db.close()
    finally:
        proc.kill()
        proc.wait()
    assert opens >= 20 and acked[0] >= 30, (opens, acked[0])  # the writer committed many times meanwhile
    assert misses == []


def wait_for_ack(acked: list[int], lock: threading.Lock) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if acked[0] >= 0:
                return
        time.sleep(0.01)
    raise AssertionError("the writer acknowledged nothing")
