#!/usr/bin/env bash
# check_neon.sh: cross-compile the NEON kernels with the scalar reference and tools/neon_selftest.cpp
# for AArch64 and run the self-test under qemu-user. Usable on x86-64 CI; skips (exit 0) when the
# cross toolchain or qemu is not installed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

CXX=aarch64-linux-gnu-g++
QEMU=qemu-aarch64

missing=()
command -v "$CXX" >/dev/null 2>&1 || missing+=("$CXX")
command -v "$QEMU" >/dev/null 2>&1 || missing+=("$QEMU")
if ((${#missing[@]})); then
    echo "SKIP: NEON self-test not run; missing: ${missing[*]}"
    echo "      install with: apt-get install g++-aarch64-linux-gnu qemu-user"
    exit 0
fi

mkdir -p build
echo "+ $CXX -O2 -std=c++17 -static ... -o build/neon_selftest"
"$CXX" -O2 -std=c++17 -static -I cpp/include -DENGRAMDB_HAVE_NEON \
    cpp/src/isa_scalar.cpp cpp/src/isa_neon.cpp tools/neon_selftest.cpp -o build/neon_selftest
echo "+ $QEMU build/neon_selftest"
"$QEMU" build/neon_selftest
