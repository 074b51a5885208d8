"""The passes that turn float vectors into stored codes (cpp/include/engramdb/codes.h): a token's
int8 codes and scale, and a projection's packed sign bits. Each is one native pass over the values,
with numpy's result bit for bit (tests/test_codes_kernels.py holds them to the numpy passes they
replaced), instead of several numpy passes whose temporaries are as large as the input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ._common import exact

__all__ = ["near_signs", "quantize_int8", "sign_bits"]


def quantize_int8(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each row of `x` ((n, dim) float32, C-contiguous) as int8 codes and a float32 scale
    ``s = max |row| / 127``: codes ``clip(rint(row / s), -127, 127)`` (ties to even), all 0 when s is 0.

    Raises ValueError naming the first row that holds NaN or inf (it has no scale).
    """
    arr = exact("x", x, (np.float32,), ndim=2)
    q, scale, bad = _core.quantize_int8(arr)
    if bad >= 0:
        raise ValueError(f"x row {bad} contains NaN or inf")
    return q, scale


def sign_bits(y: Any, tol: Any) -> tuple[np.ndarray, np.ndarray]:
    """``np.packbits(y > 0, axis=1)`` of `y` ((n, bits) float32, C-contiguous), except that every entry
    with ``-tol[r] <= y <= tol[r]`` is left 0 and its flat index ``r * bits + j`` returned (int64,
    ascending), for the caller to settle; a negative tol[r] leaves no entry of row r open.
    """
    arr = exact("y", y, (np.float32,), ndim=2)
    t = exact("tol", tol, (np.float32,))
    if t.shape[0] != arr.shape[0]:
        raise ValueError(f"tol must have one entry per row of y ({arr.shape[0]}), got {t.shape[0]}")
    out, near = _core.sign_bits(arr, t)
    return out, near


def near_signs(x: Any, cols: Any, near: Any) -> np.ndarray:
    """The entries `sign_bits` left open, settled in float64: for each flat index ``r * bits + c`` of
    `near` (int64), whether ``sum_j float64(x[r, j]) * cols[c, j] > 0`` (bool), x (n, d) float32 and
    cols (bits, d) float64, both C-contiguous. Summed in index order: numpy's float64 einsum sums in
    an order of its own (and of the CPU's), so only a product within ~d * 2^-53 of 0 could differ.

    Raises ValueError for an index past n * bits or widths that disagree.
    """
    xs = exact("x", x, (np.float32,), ndim=2)
    cs = exact("cols", cols, (np.float64,), ndim=2)
    idx = exact("near", near, (np.int64,))
    if cs.shape[1] != xs.shape[1]:
        raise ValueError(f"cols must have x's width {xs.shape[1]}, got {cs.shape[1]}")
    out: np.ndarray = _core.near_signs(xs, cs, idx)
    return out
