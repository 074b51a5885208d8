"""N6 on aarch64, checked from x86-64: the NEON primitives cross-compiled and run under qemu.

Skips where the cross compiler or qemu is missing (`apt-get install g++-aarch64-linux-gnu
qemu-user`); on an aarch64 machine the NEON path is covered natively by the other kernel tests.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(platform.machine() == "aarch64", reason="runs natively on aarch64")
def test_neon_primitives_match_scalar_and_float64_under_qemu() -> None:
    if not (shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64")):
        pytest.skip("needs g++-aarch64-linux-gnu and qemu-user")
    if not (ROOT / "cpp" / "src" / "isa_neon.cpp").exists():
        pytest.skip("not a source checkout")
    out = subprocess.run(
        ["bash", str(ROOT / "tools" / "check_neon.sh")], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 failed" in out.stdout.splitlines()[-1]
