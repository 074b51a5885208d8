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

WORDS = 200  # words per passage (about)
OVERLAP = 50  # words a passage shares with the one before (about)
# a text with fewer characters cannot hold more than WORDS words (a word and a space each)
MIN_CHARS = 2 * WORDS + 1
_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def passages(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of each passage of `text`, in order; one span covering
    the whole text when it has at most `WORDS` words.

    A passage ends at the last sentence end (a word ending in . ! or ?, or a line break after
    it) within its last half; else after exactly `WORDS` words. The next one starts at the first
    sentence start within the `OVERLAP` words before that end, else `OVERLAP` words before it.
    """
    if len(text) < MIN_CHARS:
        return [(0, len(text))]
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    n = len(words)
    if n <= WORDS:
        return [(0, len(text))]
    # starts[i]: word i begins a sentence (the one before it ends one, or a line break precedes it)
    starts = [i == 0 or bool(_SENTENCE_END.search(text[words[i - 1][0]:words[i - 1][1]]))
              or "\n" in text[words[i - 1][1]:words[i][0]] for i in range(n)]
    spans = []
    s = 0
    while True:
        end = s + WORDS
        if end >= n:
            spans.append((words[s][0], words[n - 1][1]))
            break
        cut = next((j for j in range(end, s + WORDS // 2, -1) if starts[j]), end)
        spans.append((words[s][0], words[cut - 1][1]))
        if n - cut <= OVERLAP // 2:  # a tail this short joins the passage that ends before it
            spans[-1] = (words[s][0], words[n - 1][1])
            break
        lo = max(s + 1, cut - OVERLAP)
        s = next((j for j in range(lo, cut) if starts[j]), lo)
    return spans


__all__ = ["MIN_CHARS", "OVERLAP", "WORDS", "passages"]
