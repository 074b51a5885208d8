"""Passages (C7): how a long memory is cut for indexing, so a memory is scored by its best part.

BM25 normalises by length and a dense model reads a bounded window (MiniLM: 256 word pieces,
about 190 words), so a 1,000-word assistant turn whose answer is one paragraph scores low in
both. Every index therefore reads a memory longer than `WORDS` words as passages of about
`WORDS` words, each overlapping the one before by about `OVERLAP`, cut at sentence ends where
one is near. The cut is a pure function of the text: an index stores passage numbers only and a
hit's offsets are recomputed from its content.
"""

from __future__ import annotations

import re

import numpy as np

WORDS = 200  # words per passage (about)
OVERLAP = 50  # words a passage shares with the one before (about)
# a text with fewer characters cannot hold more than WORDS words (a word and a space each)
MIN_CHARS = 2 * WORDS + 1
# A word is a maximal run of non-whitespace (``\S+``); a word ends a sentence when it ends in . ! or ?
# followed only by closing quotes and brackets. Whitespace is what ``str.isspace`` and re's ``\s``
# call whitespace: these 29 code points (tests/test_passages.py checks the list against both).
SPACE_CODEPOINTS = (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, *range(8192, 8203), 8232, 8233, 8239,
                    8287, 12288)
_SPACE = np.isin(np.arange(max(SPACE_CODEPOINTS) + 2), SPACE_CODEPOINTS)  # by code point; the last: any above
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?!\S)")  # ends exactly where a sentence-ending word ends


def _word_spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (int64 character offsets) of every word of `text`, by numpy passes over its
    code points instead of one match object per word (long memories have thousands of words)."""
    if text.isascii():
        space = _SPACE[np.frombuffer(text.encode("ascii"), np.uint8)]
    else:
        cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), "<u4")
        space = _SPACE[np.minimum(cp, len(_SPACE) - 1)]
    edge = np.diff(np.concatenate(([1], space.view(np.int8), [1])).astype(np.int8))
    return np.flatnonzero(edge == -1), np.flatnonzero(edge == 1)


def passages(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of each passage of `text`, in order; one span covering
    the whole text when it has at most `WORDS` words.

    A passage ends at the last sentence end (a word ending in . ! or ?, or a line break after
    it) within its last half; else after exactly `WORDS` words. The next one starts at the first
    sentence start within the `OVERLAP` words before that end, else `OVERLAP` words before it.
    """
    if len(text) < MIN_CHARS or len(text.split()) <= WORDS:  # str.split: the same words, counted in C
        return [(0, len(text))]
    first, last = _word_spans(text)
    n = len(first)
    # starts[i]: word i begins a sentence (the one before it ends one, or a line break precedes it)
    ends = np.fromiter((m.end() for m in _SENTENCE_END.finditer(text)), np.int64)
    breaks = np.array([m.start() for m in re.finditer("\n", text)], np.int64)
    after_break = np.searchsorted(breaks, first[1:]) > np.searchsorted(breaks, last[:-1])
    at = np.minimum(np.searchsorted(ends, last[:-1]), max(len(ends) - 1, 0))
    ends_one = ends[at] == last[:-1] if len(ends) else np.zeros(n - 1, bool)
    starts = [True, *(ends_one | after_break).tolist()]
    begin, end_of = first.tolist(), last.tolist()
    spans = []
    s = 0
    while True:
        end = s + WORDS
        if end >= n:
            spans.append((begin[s], end_of[n - 1]))
            break
        cut = next((j for j in range(end, s + WORDS // 2, -1) if starts[j]), end)
        spans.append((begin[s], end_of[cut - 1]))
        if n - cut <= OVERLAP // 2:  # a tail this short joins the passage that ends before it
            spans[-1] = (begin[s], end_of[n - 1])
            break
        lo = max(s + 1, cut - OVERLAP)
        s = next((j for j in range(lo, cut) if starts[j]), lo)
    return spans


__all__ = ["MIN_CHARS", "OVERLAP", "WORDS", "passages"]
