"""Topic labels: a pluggable labeler; the built-in one names a topic by its most distinctive terms.

Built-in: each analysed term (Snowball stem, stop words out) scores its count in the topic's
memories times its idf over the namespace (BM25's idf, ln(1 + (N - df + 0.5) / (df + 0.5))); the
`TERMS` best, each shown as the word the topic uses most for it, joined with " / ".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

from ..spaces.analyzer import Analyzer, normalize, tokenize

TERMS = 3
Labeler = Callable[[Sequence[str], Sequence[str]], str]  # (the topic's texts, every text of the namespace) -> label
_ANALYZER = Analyzer()


def distinctive_terms(members: Sequence[str], corpus: Sequence[str], n: int = TERMS) -> str:
    """The built-in labeler (see the module docstring)."""
    df: Counter[str] = Counter()
    for text in corpus:
        df.update(set(_ANALYZER.terms(text)))
    tf: Counter[str] = Counter()
    surface: dict[str, Counter[str]] = {}
    for text in members:
        for word in tokenize(normalize(text)):
            stem = _ANALYZER.terms(word)
            if stem:
                tf[stem[0]] += 1
                surface.setdefault(stem[0], Counter())[word] += 1
    total = len(corpus)
    scored = sorted(tf, key=lambda t: (-tf[t] * math.log1p((total - df[t] + 0.5) / (df[t] + 0.5)), t))
    return " / ".join(surface[t].most_common(1)[0][0] for t in scored[:n]) or "(no terms)"


__all__ = ["Labeler", "distinctive_terms"]
