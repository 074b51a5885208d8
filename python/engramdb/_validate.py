"""Argument checks shared by the kernel wrappers.

Every public kernel validates here before crossing into C++, so a bad argument raises a
`TypeError` (wrong type or dtype) or `ValueError` (wrong shape, value, or layout) that names the
argument, and nothing reaches native code that could crash the interpreter. Large operands
(matrices, codes, CSR arrays, token matrices) are never copied behind the caller's back: they must
already have the right dtype and be C-contiguous. Small operands (queries, k) are coerced.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import numpy.typing as npt


def as_array(name: str, value: Any) -> np.ndarray:
    """Return `value` as an ndarray, refusing objects numpy cannot view as numbers."""
    if isinstance(value, np.ndarray):
        return value
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy raises many kinds
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from exc
    if arr.dtype == object:
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}")
    return arr


def integer(name: str, value: Any, least: int) -> int:
    """`value` as an int, refusing bools, non-integers (TypeError) and values under `least`
    (ValueError), naming `name`."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if out < least:
        raise ValueError(f"{name} must be >= {least}, got {out}")
    return out


def check_k(k: Any) -> int:
    """k must be an integer >= 1 (k larger than the number of rows simply returns them all)."""
    return integer("k", k, 1)


def check_threads(threads: Any) -> int:
    """threads: None (auto, sent as 0) or an integer >= 1."""
    if threads is None:
        return 0
    try:
        t = operator.index(threads)
    except TypeError:
        raise TypeError(f"threads must be an integer, got {threads!r}") from None
    if t < 1:
        raise ValueError(f"threads must be >= 1, got {t}")
    return t


def float_queries(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """Coerce queries to a C-contiguous float32 (q, d) array; returns (array, was_1d).

    Accepts any real float or integer dtype (the query is small); refuses complex, bool, object
    and strings. Rejects NaN and inf.
    """
    arr = as_array(name, value)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a real float array, got dtype {arr.dtype}")
    was_1d = arr.ndim == 1
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D (one query) or 2-D (a batch), got {arr.ndim}-D shape {arr.shape}")
    out = np.ascontiguousarray(arr, dtype=np.float32)
    check_finite(name, out)
    return out, was_1d


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise ValueError naming the first row holding NaN or inf."""
    if arr.size and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        where = ", ".join(str(int(i)) for i in bad)
        raise ValueError(f"{name} contains NaN or inf (first at index [{where}])")


def matrix(name: str, value: Any, dtypes: tuple[npt.DTypeLike, ...], ndim: int = 2) -> np.ndarray:
    """A large operand: must already have one of `dtypes`, rank `ndim`, and be C-contiguous."""
    if not isinstance(value, np.ndarray):
        value = as_array(name, value)
    allowed = [np.dtype(d) for d in dtypes]
    if value.dtype not in allowed:
        names = " or ".join(str(d) for d in allowed)
        raise TypeError(
            f"{name} must have dtype {names}, got {value.dtype} "
            f"(convert once with {name}.astype(...); it is not copied per call)"
        )
    if value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {value.ndim}-D shape {value.shape}")
    if not value.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray({name}) once, outside the loop)")
    return np.asarray(value)


def same_dim(qname: str, q: np.ndarray, mname: str, m: np.ndarray) -> None:
    """The query and matrix dimensions (last axis) must agree."""
    if q.shape[1] != m.shape[1]:
        raise ValueError(f"{qname} has dimension {q.shape[1]} but {mname} has dimension {m.shape[1]}")


def row_mask(mask: Any, n: int) -> np.ndarray | None:
    """A row filter: a bool array of length n, or an integer allow-list of row indices."""
    if mask is None:
        return None
    arr = as_array("mask", mask)
    if arr.dtype == np.bool_:
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(f"mask must be a 1-D bool array of length {n} (one per row), got shape {arr.shape}")
        return np.ascontiguousarray(arr).view(np.uint8)
    if arr.dtype.kind in "iu":
        if arr.ndim != 1:
            raise ValueError(f"mask as an allow-list must be 1-D row indices, got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            bad = arr[(arr < 0) | (arr >= n)][0]
            raise ValueError(f"mask allow-list holds row {int(bad)}, outside 0..{n - 1}")
        out = np.zeros(n, dtype=np.uint8)
        out[arr] = 1
        return out
    raise TypeError(f"mask must be a bool array or integer row indices, got dtype {arr.dtype}")


def allowed_count(mask: np.ndarray | None, n: int) -> int:
    """Number of rows a (validated) mask lets through."""
    return n if mask is None else int(np.count_nonzero(mask))
