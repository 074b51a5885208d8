"""kernels/sets.py's `unique` against `np.unique` (the reference): the same sorted distinct values
for the integer keys, codes and strings the request path passes it."""

from __future__ import annotations

import numpy as np
from engramdb.kernels.sets import unique
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(st.sampled_from([np.int8, np.int32, np.int64, np.uint8]), hnp.array_shapes(max_dims=2, max_side=30)))
def test_unique_is_np_unique_on_integers(x: np.ndarray) -> None:
    got, want = unique(x), np.unique(x)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=3), max_size=30), st.lists(st.floats(allow_nan=False), max_size=30))
def test_unique_is_np_unique_on_strings_and_floats_without_nan(words: list[str], floats: list[float]) -> None:
    assert unique(np.array(words, dtype=object)).tolist() == np.unique(np.array(words, dtype=object)).tolist()
    assert unique(np.array(floats)).tolist() == np.unique(np.array(floats)).tolist()


def test_unique_of_lists_and_empty_arrays() -> None:
    assert unique([3, 1, 3, 2]).tolist() == [1, 2, 3]  # type: ignore[arg-type]
    assert unique(np.empty(0, np.int64)).dtype == np.int64
    assert unique(np.array([5])).tolist() == [5]
    x = np.array([2, 1, 2])
    unique(x)
    assert x.tolist() == [2, 1, 2]  # the input is left as it was
