"""Passages (C7): how a long memory is cut for indexing, so a memory is scored by its best part.

BM25 normalises by length and a dense model reads a bounded window (MiniLM: 256 word pieces,
about 190 words), so a 1,000-word assistant turn whose answer is one paragraph scores low in
both. Every index therefore reads a memory longer than `WORDS` words as passages of about
`WORDS` words, each overlapping the one before by about `OVERLAP`, cut at sentence ends where
one is near. The cut is a pure function of the text: an index stores passage numbers only and a
hit's offsets are recomputed from its content.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels.analysis import codepoints, cut_passages, joined_codepoints

WORDS = 200  # words per passage (about)
OVERLAP = 50  # words a passage shares with the one before (about)
# a text with fewer characters cannot hold more than WORDS words (a word and a space each)
MIN_CHARS = 2 * WORDS + 1
# A word is a maximal run of non-whitespace (``\S+``); a word ends a sentence when it ends in . ! or ?
# followed only by closing quotes and brackets. Whitespace is what ``str.isspace`` and re's ``\s``
# call whitespace: these 29 code points (tests/test_passages.py checks the list against both).
SPACE_CODEPOINTS = (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, *range(8192, 8203), 8232, 8233, 8239,
                    8287, 12288)
# by code point, 1 for whitespace; the last entry stands for every code point above
_SPACE_BYTES = np.isin(np.arange(max(SPACE_CODEPOINTS) + 2), SPACE_CODEPOINTS).astype(np.uint8)


def passages(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of each passage of `text`, in order; one span covering
    the whole text when it has at most `WORDS` words.

    A passage ends at the last sentence end (a word ending in . ! or ?, or a line break after
    it) within its last half; else after exactly `WORDS` words. The next one starts at the first
    sentence start within the `OVERLAP` words before that end, else `OVERLAP` words before it.
    """
    if len(text) < MIN_CHARS or len(text.split()) <= WORDS:  # str.split: the same words, counted in C
        return [(0, len(text))]
    # one native pass over the code points (kernels.cut_passages; tests/test_ingest_analysis.py
    # holds it to the word-by-word cut as first written)
    cp = codepoints(text)
    _, spans = cut_passages(cp, np.array([0, len(cp)], np.int64), _SPACE_BYTES, WORDS, OVERLAP)
    return [(a, b) for a, b in spans.tolist()]


def passages_many(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """`passages` of each text, the long ones cut in one native pass between them (an index sync
    meets a batch's long memories together: a call and a ``str.split`` per text cost more than the
    cut). A non-string is named by index (TypeError)."""
    out: list[list[tuple[int, int]]] = []
    long: list[int] = []
    for r, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{r}] must be str, got {type(text).__name__}")
        out.append([(0, len(text))])
        if len(text) >= MIN_CHARS:
            long.append(r)
    if long:
        cp, ptr = joined_codepoints([texts[r] for r in long])
        span_ptr, spans = cut_passages(cp, ptr, _SPACE_BYTES, WORDS, OVERLAP)
        bounds = span_ptr.tolist()
        pairs = [(a, b) for a, b in spans.tolist()]
        for j, r in enumerate(long):  # at most WORDS words: the kernel's one span is (0, len), as `passages`
            out[r] = pairs[bounds[j] : bounds[j + 1]]
    return out


__all__ = ["MIN_CHARS", "OVERLAP", "WORDS", "passages", "passages_many"]
