"""N6 and process hygiene: dispatch, the environment override, GIL release, subnormals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import kernels

ROOT = Path(__file__).resolve().parents[1]


def test_capabilities_describe_the_core() -> None:
    caps = engramdb.capabilities()
    assert caps["isa"] in caps["available"]
    assert set(caps["available"]) <= set(caps["compiled"])
    assert "scalar" in caps["available"]
    assert caps["available"][0] == caps["isa"] or caps["forced"]  # the best one unless forced
    if os.uname().machine == "x86_64":
        assert {"avx2", "avx512", "scalar"} <= set(caps["compiled"])
    assert caps["version"] == engramdb.__version__


def run_py(code: str, **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_environment_override_forces_and_reports() -> None:
    code = "import json, engramdb; print(json.dumps(engramdb.capabilities()))"
    caps = run_py(code, ENGRAMDB_ISA="scalar")
    assert caps["isa"] == "scalar" and caps["forced"] == "scalar" and caps["note"] is None
    caps = run_py(code, ENGRAMDB_ISA="sse9")
    assert caps["isa"] == caps["available"][0]
    assert "sse9" in caps["note"]


def test_use_isa_refuses_unknown_and_restores() -> None:
    before = kernels.active_isa()
    with pytest.raises(ValueError, match="not available"), kernels.use_isa("quantum"):
        pass
    with kernels.use_isa("scalar"):
        assert kernels.active_isa() == "scalar"
    assert kernels.active_isa() == before


def test_gil_is_released_during_a_long_kernel() -> None:
    """A counter thread keeps counting while a kernel runs; while C code that holds the GIL runs
    (builtin sum over a range never releases it) it cannot. Rates are compared with each other (the
    counter's own pace alone, beside the kernel, beside held GIL), so no wall-clock bound decides."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400_000, 256)).astype(np.float32)
    q = rng.standard_normal((32, 256)).astype(np.float32)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    def ticks_during(call: Any) -> tuple[int, float]:
        time.sleep(0.02)  # let the counter run, so it waits for the GIL when the call starts
        a, t0 = ticks, time.perf_counter()
        call()
        return ticks - a, time.perf_counter() - t0

    counter = threading.Thread(target=count)
    counter.start()
    try:
        free, free_s = ticks_during(lambda: time.sleep(0.1))  # the counter alone (sleep releases the GIL)
        held, held_s = ticks_during(lambda: sum(range(20_000_000)))
        during, during_s = ticks_during(lambda: kernels.topk(q, x, 10, threads=1))
    finally:
        done.set()
        counter.join()
    assert during > 1_000, f"the counter barely ran during the kernel ({during} ticks in {during_s:.3f} s)"
    assert during / during_s > 5 * (held + 1) / held_s, (
        f"counter rate with the kernel running {during / during_s:.0f}/s, with the GIL held {held / held_s:.0f}/s")
    # and it keeps a good part of its own pace: a GIL held through the call would leave it one
    # switch interval (5 ms) of it, whatever the call's length
    assert during / during_s > 0.2 * free / free_s, (
        f"counter rate with the kernel running {during / during_s:.0f}/s, alone {free / free_s:.0f}/s")


def test_import_keeps_subnormals() -> None:
    code = (
        "import numpy as np, engramdb, json\n"
        "from engramdb import kernels\n"
        "kernels.topk(np.ones(4, np.float32), np.ones((3, 4), np.float32), 1)\n"
        "tiny = np.float32(1e-40)\n"
        "print(json.dumps({'f32': float(tiny * np.float32(1.0)), 'f64': float(np.float64(5e-324) * 1.0),"
        " 'next': float(np.nextafter(np.float32(0), np.float32(1)))}))"
    )
    got = run_py(code)
    assert got["f32"] > 0 and got["f64"] > 0 and got["next"] > 0


def test_version_matches_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{engramdb.__version__}"' in text
