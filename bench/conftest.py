"""Shared setup for the kernel benchmarks (run explicitly: ``pytest bench``; not part of ``tests``).

Import order matters: on this platform, importing usearch before simsimd breaks ``simsimd.cdist``,
so simsimd is imported first, before anything else can pull in usearch; and usearch's extension
loaded before onnxruntime's makes ``import onnxruntime`` (the MiniLM benches) segfault unless
pyarrow is loaded before both, so pyarrow comes second (engramdb itself always loads pyarrow
before it could load usearch).
"""

from __future__ import annotations

try:  # keep this first: see the module docstring
    import simsimd as _simsimd
except ImportError:  # pragma: no cover - peer missing, its benches skip
    _simsimd = None
import json
import os
import sys
from importlib import metadata
from typing import Any

import pyarrow  # noqa: F401 - second: see the module docstring
import pytest


def _refuse_editable_engramdb() -> None:
    """Benchmarks must not import an editable (rebuild-on-import) engramdb install.

    An editable install rebuilds the extension on import, which would collide with a build in
    progress and would time a debug-in-progress tree. Install a snapshot into a separate venv
    instead (``pip install .``), or set ENGRAMDB_BENCH_ALLOW_EDITABLE=1 to override.
    """
    if os.environ.get("ENGRAMDB_BENCH_ALLOW_EDITABLE") == "1":
        return
    try:
        dist = metadata.distribution("engramdb")
    except metadata.PackageNotFoundError:
        pytest.exit(f"engramdb is not installed in this interpreter ({sys.executable})", returncode=4)
    raw = dist.read_text("direct_url.json")
    if raw:
        info = json.loads(raw)
        if info.get("dir_info", {}).get("editable"):
            pytest.exit(
                "refusing to benchmark an editable engramdb install (it rebuilds on import); "
                "use a venv with a snapshot install (pip install /path/to/engramdb), "
                "or set ENGRAMDB_BENCH_ALLOW_EDITABLE=1",
                returncode=4,
            )


_refuse_editable_engramdb()

import engramdb

try:
    import faiss as _faiss
except ImportError:  # pragma: no cover
    _faiss = None
else:
    # Flat search does a per-query loop below this many queries; 20 makes batches of 64 use BLAS.
    _faiss.cvar.distance_compute_blas_threshold = 20
    # Single-thread comparisons (engramdb runs threads=1 unless a bench says otherwise).
    _faiss.omp_set_num_threads(1)

try:
    import usearch.index as _usearch_index
except ImportError:  # pragma: no cover
    _usearch_index = None

try:
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None


def _peer(mod: Any, name: str) -> Any:
    if mod is None:
        pytest.skip(f"peer library {name} is not installed")
    return mod


@pytest.fixture(scope="session")
def simsimd() -> Any:
    return _peer(_simsimd, "simsimd")


@pytest.fixture(scope="session")
def faiss() -> Any:
    return _peer(_faiss, "faiss-cpu")


@pytest.fixture(scope="session")
def usearch_index() -> Any:
    return _peer(_usearch_index, "usearch")


@pytest.fixture(scope="session")
def numba() -> Any:
    return _peer(_numba, "numba")


_LOAD_AT_START: list[float] = []
_CPU_AT_START: list[float] = []


def _cpu_snapshot() -> tuple[float, float, float] | None:
    """(wall s, machine busy CPU-s from /proc/stat, this process's CPU-s incl. children)."""
    import time

    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    t = os.times()
    return (
        time.monotonic(),
        (sum(fields[:8]) - idle) / hz,
        t.user + t.system + t.children_user + t.children_system,
    )


def _other_cpu_share() -> float | None:
    """Share of the machine's CPU time used by other processes during the run (0..1)."""
    end = _cpu_snapshot()
    if end is None or len(_CPU_AT_START) != 3:
        return None
    wall = end[0] - _CPU_AT_START[0]
    busy = end[1] - _CPU_AT_START[1]
    own = end[2] - _CPU_AT_START[2]
    ncpu = os.cpu_count() or 1
    return max(0.0, (busy - own) / (wall * ncpu)) if wall > 0 else None


def pytest_sessionstart(session: pytest.Session) -> None:
    _LOAD_AT_START[:] = list(os.getloadavg())
    snap = _cpu_snapshot()
    _CPU_AT_START[:] = list(snap) if snap else []


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _anon_hugepages_kb() -> int | None:
    """Transparent huge pages backing this process (large scans are faster with them)."""
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _version(mod: Any) -> str | None:
    return None if mod is None else str(getattr(mod, "__version__", "?"))


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    """Everything report.py prints about the run goes into the json, so a saved json reports itself."""
    import numpy

    try:
        from threadpoolctl import threadpool_info

        pools = []
        for p in threadpool_info():
            entry = {k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "prefix", "version")}
            # which wheel ships this library: site-packages/<package>.libs/... or <package>/...
            parts = str(p.get("filepath", "")).split(os.sep)
            owner = next((x for x in parts if x.endswith(".libs")), None)
            if owner is None and "site-packages" in parts:
                owner = parts[parts.index("site-packages") + 1]
            entry["owner"] = (owner or "?").replace(".libs", "").replace("_cpu", "")
            pools.append(entry)
    except ImportError:  # pragma: no cover
        pools = []
    import subprocess

    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        git_head = (
            subprocess.run(
                ["git", "-C", root, "log", "-1", "--format=%h %s"],
                check=False,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):  # pragma: no cover - no git here
        git_head = None
    installed_from = None
    try:
        raw = metadata.distribution("engramdb").read_text("direct_url.json")
        installed_from = json.loads(raw).get("url") if raw else None
    except (OSError, ValueError, metadata.PackageNotFoundError):  # pragma: no cover
        installed_from = None
    import shlex

    pytest_command = f"cd {shlex.quote(os.getcwd())} && " + " ".join(
        shlex.quote(a) for a in [sys.executable, "-m", "pytest", *config.invocation_params.args]
    )
    machine_info["engramdb_bench"] = {
        "pytest_command": pytest_command,
        "engramdb_installed_from": installed_from,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "engramdb_capabilities": engramdb.capabilities(),
        "engramdb_file": engramdb.__file__,
        "git_head_at_run": git_head,
        "versions": {
            "python": sys.version.split()[0],
            "numpy": numpy.__version__,
            "faiss": _version(_faiss),
            "simsimd": _version(_simsimd),
            "usearch": _version(sys.modules.get("usearch")),
            "numba": _version(_numba),
        },
        "threadpools": pools,
        "faiss_omp_threads": None if _faiss is None else _faiss.omp_get_max_threads(),
        "loadavg_start": _LOAD_AT_START,
        "loadavg_end": list(os.getloadavg()),
        "other_processes_cpu_share": _other_cpu_share(),
        "anon_hugepages_kb": _anon_hugepages_kb(),
    }


def pytest_report_header(config: pytest.Config) -> list[str]:
    caps = engramdb.capabilities()
    where = os.path.dirname(engramdb.__file__)
    return [f"engramdb {caps.get('version')} from {where}, isa={caps.get('isa')}"]
