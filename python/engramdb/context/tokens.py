"""Token counts for budgets: a real tokenizer when one is installed, else a calibrated estimate.

- "cl100k_base" / "o200k_base": OpenAI's BPEs from `bpe-openai` (`engramdb[tokens]`), which ships
  its tables inside the wheel (no download at run time, unlike tiktoken);
- "estimate": the text cut into the pieces cl100k's pre-tokenizer makes (a word with its leading
  space, up to 3 digits, a punctuation run, a whitespace run), each counted by a rule: an ASCII
  word of at most 8 letters is one token and a longer one a token per 4.5 letters, digits and
  whitespace one, punctuation a token per 3 characters, a non-ASCII piece a token per 2.5 UTF-8
  bytes (a CJK character is about one token). The constants were fitted on a held-out sample of
  the texts bench/eval_tokens.py measures the estimate on (LoCoMo turns, code, JSON, non-English
  messages); the error is in bench/RESULTS.md. The first estimate (characters / 4 plus a little
  per word and punctuation run) was off by 20% on average and undercounted JSON by a fifth and
  non-English text by a third. Used when no tokenizer is installed, or when asked for.
- any callable text -> int the caller passes (their model's tokenizer).
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

Counter = Callable[[str], int]
# cl100k's pre-tokenizer, in `re` terms (a letter is [^\W\d_]): contractions, a word with one leading
# non-letter, up to 3 digits, a punctuation run (underscores too) with its line breaks, whitespace
_PIECE = re.compile(r"'(?:[sdmt]|ll|ve|re)(?![^\W\d_])|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?(?:[^\s\w]|_)+[\r\n]*"
                    r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SHORT_WORD, LETTERS_PER_TOKEN, BYTES_PER_TOKEN, PUNCT_PER_TOKEN = 8, 4.5, 2.5, 3.0


def estimate(text: str) -> int:
    """The estimate (see the module docstring)."""
    n = 0
    for piece in _PIECE.findall(text):
        core = piece.lstrip(" ").strip() if not piece.isspace() else ""
        if not core or core[0].isdigit():
            n += 1
        elif not piece.isascii():
            n += max(1, round(len(piece.encode()) / BYTES_PER_TOKEN))
        elif core[0].isalpha() or core[-1].isalpha():
            n += 1 if len(core) <= SHORT_WORD else math.ceil(len(core) / LETTERS_PER_TOKEN)
        else:
            n += math.ceil(len(core) / PUNCT_PER_TOKEN)
    return n


@lru_cache(maxsize=4)
def _bpe(name: str) -> Counter | None:
    """bpe-openai's Rust tokenizer for `name`, loaded from its binding alone: importing the package
    decodes all three of its vocabularies in Python first (2 s in a new process, on every first
    context), the binding builds one in about 25 ms and counts the same (bench/RESULTS.md "The
    agent loop": every count equal on 3,000 sentences, code, CJK and emoji)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("_bindings*.so"))
    if found:
        try:
            where = importlib.util.spec_from_file_location("bpe_openai._bindings", found[0])
            if where is not None and where.loader is not None:
                binding = importlib.util.module_from_spec(where)
                where.loader.exec_module(binding)
                tok = binding.tokenizer_for_encoding(name)
                return lambda text: int(tok.count(text))
        except (ImportError, AttributeError, OSError, ValueError):
            pass  # another build of the package: its public API below
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
