"""kernels.quantize_int8 and kernels.sign_bits against the numpy passes they replaced (the token
space's int8 codes in storage/vectors.py, the HDC space's sign bits in spaces/hdc.py), bit for bit,
on the cases that make them differ: ties at .5, zero rows and -0.0, subnormal scales (x / s past
127), NaN and inf, widths that are not a multiple of 8, entries near zero."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb.kernels import quantize_int8, sign_bits


def numpy_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """storage/vectors.py's numpy quantisation as it was (the reference)."""
    scale = np.abs(np.maximum(x.max(axis=1), -x.min(axis=1))) / np.float32(127.0)
    live = scale > 0
    q = x / np.where(live, scale, np.float32(1.0))[:, None]
    if not live.all():
        q[~live] = 0.0
    np.rint(q, out=q)
    np.clip(q, -127, 127, out=q)
    return q.astype(np.int8), scale


def numpy_signs(y: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spaces/hdc.py's numpy sign pass as it was: packbits of y > 0 with the near entries at 0."""
    t = tol[:, None]
    near = (y <= t) & (y >= -t)
    bits = np.where(near, False, y > 0)
    return np.packbits(bits, axis=1), np.flatnonzero(near)


def hard_rows(dim: int, rng: np.random.Generator) -> np.ndarray:
    rows = [
        rng.standard_normal(dim),  # the usual case
        np.zeros(dim),
        -np.zeros(dim),  # -0.0 everywhere: scale +0.0, codes 0
        np.linspace(-127.0, 127.0, dim) * 0.5,  # many x / s at exactly .5: ties to even
        np.full(dim, 3.0) * np.where(np.arange(dim) % 2, 1, -1),  # all at +-max
        rng.standard_normal(dim) * 1e-30,  # tiny, still normal scales
    ]
    for a in (1, 63, 127, 128, 190, 191, 200, 254, 255, 1000):  # subnormal scales: x / s up to ~190.5
        r = np.zeros(dim)
        r[0] = a * 2.0**-149
        r[1 % dim] = -(a // 2) * 2.0**-149
        rows.append(r)
    return np.array(rows, np.float32)


@pytest.mark.parametrize("dim", [1, 3, 7, 8, 128, 129])
def test_quantize_int8_is_the_numpy_quantisation(dim: int) -> None:
    rng = np.random.default_rng(dim)
    x = np.concatenate([hard_rows(dim, rng), rng.standard_normal((300, dim)).astype(np.float32)])
    x[-50:] /= np.linalg.norm(x[-50:], axis=1, keepdims=True)  # unit rows, as the token space makes
    q, s = quantize_int8(x)
    want_q, want_s = numpy_quantize(x)
    assert q.dtype == np.int8 and s.dtype == np.float32
    assert np.array_equal(q, want_q)
    assert s.tobytes() == want_s.tobytes()  # bit for bit, the sign of a zero scale included


def test_quantize_int8_of_no_rows_and_refuses_non_finite_rows() -> None:
    q, s = quantize_int8(np.zeros((0, 128), np.float32))
    assert q.shape == (0, 128) and s.shape == (0,)
    for bad in (np.nan, np.inf, -np.inf):
        x = np.ones((4, 9), np.float32)
        x[2, 5] = bad
        with pytest.raises(ValueError, match="x row 2 contains NaN or inf"):
            quantize_int8(x)
    with pytest.raises(TypeError, match="x"):
        quantize_int8(np.ones((2, 3), np.float64))


@pytest.mark.parametrize("bits", [1, 8, 13, 64, 1024])
def test_sign_bits_is_packbits_with_the_near_entries_open(bits: int) -> None:
    rng = np.random.default_rng(bits)
    y = rng.standard_normal((257, bits)).astype(np.float32)
    y[::7, ::3] *= 1e-4  # entries near zero, inside the tolerance
    y[5] = 0.0
    y[6] = -0.0
    y[8, 0] = np.nan  # no bit, never near (numpy's comparisons are false too)
    tol = np.abs(rng.standard_normal(257)).astype(np.float32) * 1e-3
    tol[5] = -1.0  # a row settled without recheck
    tol[9] = 0.0  # only exact zeros near
    y[9, 0] = 0.0
    out, near = sign_bits(y, tol)
    want_out, want_near = numpy_signs(y, tol)
    assert out.dtype == np.uint8 and out.shape == (257, (bits + 7) // 8)
    assert np.array_equal(out, want_out)
    assert np.array_equal(near, want_near)
    assert near.size  # the case under test: some entries are left to the caller


def test_sign_bits_checks_its_operands() -> None:
    with pytest.raises(ValueError, match="tol must have one entry per row of y"):
        sign_bits(np.ones((3, 8), np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="y"):
        sign_bits(np.ones((3, 8), np.int32), np.ones(3, np.float32))
