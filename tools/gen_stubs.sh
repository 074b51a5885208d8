#!/usr/bin/env bash
# Regenerate python/engramdb/_core.pyi from the built extension (tests/test_stubs.py fails when
# the committed stub and the module drift apart).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
python -m pybind11_stubgen engramdb._core -o "$out" >/dev/null
cp "$out/engramdb/_core.pyi" python/engramdb/_core.pyi
rm -rf "$out"
echo "wrote python/engramdb/_core.pyi"
