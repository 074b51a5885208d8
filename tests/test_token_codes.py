"""The token space's int8 codes made once per distinct term (TokenBatch.codes) and written by
storage in place of quantising every token: the same column, byte for byte, as quantising the
batch's tokens; codes that do not belong to the tokens are never written."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb.spaces.batches import concat, take
from engramdb.spaces.protocol import TokenBatch
from engramdb.spaces.schema import SpaceError, default_schema
from engramdb.spaces.token_space import TokenEmbedder
from engramdb.storage.vectors import from_arrow, quantize_tokens, to_arrow

TEXTS = [
    "I adopted a rescue dog named Biscuit last spring, and Biscuit loves the beach.",
    "",
    "the of and",  # stop words only: no tokens
    "Running, runner, runs: the runner ran a running race. " * 20,  # a long text whose terms repeat
    "Ünïcödé naïve café résumé 東京 2026",
]
SPACE = default_schema()["tokens"]


def plain(batch: TokenBatch) -> TokenBatch:
    return TokenBatch(batch.tokens, batch.offsets)


def test_token_batches_carry_the_codes_storage_writes() -> None:
    emb = TokenEmbedder()
    emb.embed(["a first batch fills the table: dog beach race"])  # then hits and new terms mixed
    batch = SPACE.check(emb.embed(TEXTS), len(TEXTS))
    assert batch.codes is not None
    q, scale = batch.codes
    want_q, want_scale = quantize_tokens(batch.tokens)
    assert np.array_equal(q, want_q)
    assert scale.tobytes() == want_scale.tobytes()
    col = to_arrow(SPACE, batch)
    assert col.equals(to_arrow(SPACE, plain(batch)))
    back = from_arrow(SPACE, col)
    assert isinstance(back, TokenBatch)
    assert np.array_equal(back.offsets, batch.offsets)
    assert np.allclose(back.tokens, batch.tokens, atol=1 / 254)  # within half a step of max |x| = 1 / 127


def test_joined_and_sliced_batches_write_the_same_column() -> None:
    emb = TokenEmbedder()
    whole = emb.embed(TEXTS)
    joined = concat([emb.embed(TEXTS[:2]), emb.embed(TEXTS[2:])])
    assert joined.codes is not None
    assert to_arrow(SPACE, joined).equals(to_arrow(SPACE, whole))
    mixed = concat([emb.embed(TEXTS[:2]), plain(emb.embed(TEXTS[2:]))])  # one part without codes
    assert mixed.codes is None
    assert to_arrow(SPACE, mixed).equals(to_arrow(SPACE, whole))
    some = take(whole, [3, 0])
    assert to_arrow(SPACE, some).equals(to_arrow(SPACE, plain(some)))


def test_codes_that_do_not_belong_to_the_tokens_are_not_written() -> None:
    emb = TokenEmbedder()
    batch = emb.embed(TEXTS)
    other = emb.embed(TEXTS[:1])
    assert batch.codes is not None and other.codes is not None
    wrong_shape = TokenBatch(batch.tokens, batch.offsets, other.codes)
    assert to_arrow(SPACE, wrong_shape).equals(to_arrow(SPACE, plain(batch)))
    q, scale = batch.codes
    wrong_dtype = TokenBatch(batch.tokens, batch.offsets, (q.astype(np.int16), scale))
    assert to_arrow(SPACE, wrong_dtype).equals(to_arrow(SPACE, plain(batch)))
    # tokens the check converts (float64 given) are new arrays: the codes made for others are dropped
    stale = TokenBatch(batch.tokens.astype(np.float64) * 0.5, batch.offsets, batch.codes)
    checked = SPACE.check(stale, len(TEXTS))
    assert isinstance(checked, TokenBatch) and checked.codes is None
    assert to_arrow(SPACE, checked).equals(to_arrow(SPACE, TokenBatch(checked.tokens, checked.offsets)))


def test_a_float64_past_float32s_range_is_refused_by_name_without_a_numpy_warning() -> None:
    """A caller's float64 vector holding 1e300 became inf in the cast to float32, and numpy's
    "overflow encountered in cast" RuntimeWarning came out before the SpaceError that names it."""
    import warnings

    dense = default_schema()["dense"]
    x = np.full((2, dense.dim), 0.01)
    x[1, 3] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SpaceError, match="row 1 contains NaN or inf"):
            dense.check(x, 2)
        t = np.full((2, SPACE.dim), 0.01)
        t[1, 0] = -1e300
        with pytest.raises(SpaceError, match="tokens contain NaN or inf"):
            SPACE.check(TokenBatch(t, np.array([0, 2], np.int64)), 1)


def test_a_nan_is_named_before_an_overflowing_row_and_either_refused() -> None:
    """Space.check reads the values once when they are sound (a NaN or inf makes its row's squared
    length non-finite too); the faults are still told apart and named as before."""
    dense = default_schema()["dense"]
    x = np.full((4, dense.dim), 0.01, np.float32)
    x[1, 0] = 3e19  # its squared length overflows float32
    x[2, 5] = np.nan
    for arr, want in ((x, "row 2 contains NaN or inf"), (x[:2], "row 1 is too long for float32")):
        with pytest.raises(SpaceError, match=want):
            dense.check(arr, len(arr))
    t = np.full((3, SPACE.dim), 0.01, np.float32)
    t[0, 0] = 3e19
    t[2, 1] = np.inf
    for tok, want in ((t, "tokens contain NaN or inf"), (t[:2], "row 0 is too long for float32")):
        with pytest.raises(SpaceError, match=want):
            SPACE.check(TokenBatch(tok, np.array([0, len(tok)], np.int64)), 1)
