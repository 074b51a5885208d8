"""Token counts for budgets: a real tokenizer when one is installed, else a calibrated estimate.

- "cl100k_base" / "o200k_base": OpenAI's BPEs from `bpe-openai` (`engramdb[tokens]`), which ships
  its tables inside the wheel (no download at run time, unlike tiktoken);
- "estimate": ceil(characters / 4) plus one per 8 words and punctuation runs (English prose
  averages about 4 characters a cl100k token); its error against cl100k is measured in
  bench/RESULTS.md. Used when no tokenizer is installed, or when asked for.
- any callable text -> int the caller passes (their model's tokenizer).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache

Counter = Callable[[str], int]
_PUNCT = re.compile(r"[^\w\s]+")


def estimate(text: str) -> int:
    """The estimate (see the module docstring)."""
    if not text:
        return 0
    words = len(text.split())
    return math.ceil(len(text) / 4) + words // 8 + len(_PUNCT.findall(text)) // 3


@lru_cache(maxsize=4)
def _bpe(name: str) -> Counter | None:
    try:
        import bpe_openai  # type: ignore[import-untyped]
    except ImportError:
        return None
    enc = bpe_openai.get_encoding(name)
    return lambda text: len(enc.encode_ordinary(text))


def counter(tokenizer: str | Counter | None = None) -> tuple[Counter, str]:
    """(count function, its name): `tokenizer` a name ("cl100k_base", "o200k_base", "estimate"),
    a callable, or None (cl100k_base when installed, else the estimate)."""
    if callable(tokenizer):
        return tokenizer, getattr(tokenizer, "__name__", "custom")
    name = tokenizer or "cl100k_base"
    if name == "estimate":
        return estimate, "estimate"
    if name not in ("cl100k_base", "o200k_base"):
        raise ValueError(f"tokenizer must be 'cl100k_base', 'o200k_base', 'estimate' or a callable, got {tokenizer!r}")
    bpe = _bpe(name)
    if bpe is None:
        if tokenizer is not None:
            raise ImportError(f"tokenizer {name!r} needs bpe-openai: pip install 'engramdb[tokens]'")
        return estimate, "estimate"
    return bpe, name


__all__ = ["Counter", "counter", "estimate"]
