"""N6 and process hygiene: dispatch, the environment override, GIL release, subnormals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

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
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400_000, 256)).astype(np.float32)
    q = rng.standard_normal((32, 256)).astype(np.float32)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        # The counter's own rate, while the main thread sleeps (sleep releases the GIL).
        a = ticks
        time.sleep(0.1)
        rate = (ticks - a) / 0.1
        a = ticks
        t0 = time.perf_counter()
        kernels.topk(q, x, 10, threads=1)  # one core for the kernel, one for the counter
        elapsed = time.perf_counter() - t0
        during = ticks - a
    finally:
        done.set()
        counter.join()
    assert elapsed > 0.08, f"the call was too short ({elapsed:.3f}s) to tell"
    # Holding the GIL would leave the counter at most a switch interval or two (~10 ms) of the
    # call; released, it runs alongside for most of it.
    assert during >= 0.3 * rate * elapsed, f"counter ran {during} ticks in {elapsed:.3f}s at {rate:.0f}/s"


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
