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
import logging
import math
import numbers
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from ..spaces.query import QUIET_AFTER_PURGE

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


_log = logging.getLogger("engramdb")
_warned = False  # whether a failed load of the default BPE was logged (once a process)
_loads: dict[str, Future[Counter | None]] = {}  # name -> its load, started once per process
_loads_lock = threading.Lock()


def _forget_unfinished_loads() -> None:
    """In a forked child: a load running in the parent has no thread here, so it is started again
    when asked (waiting on it would never end)."""
    global _loads_lock
    _loads_lock = threading.Lock()
    for name, fut in list(_loads.items()):
        if not fut.done():
            del _loads[name]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_unfinished_loads)


def _bpe(name: str) -> Counter | None:
    """bpe-openai's tokenizer `name`, loaded once per process (on its own thread: `preload`)."""
    fut = _started(name)
    try:
        return fut.result()
    except Exception:
        with _loads_lock:  # not kept: the next call tries again
            if _loads.get(name) is fut:
                del _loads[name]
        raise


def _started(name: str) -> Future[Counter | None]:
    with _loads_lock:
        fut = _loads.get(name)
        if fut is not None:
            return fut
        fut = _loads[name] = Future()
    try:
        threading.Thread(target=_run, args=(name, fut), daemon=True, name=f"engramdb-tokenizer-{name}").start()
    except RuntimeError:  # no thread can start (the interpreter is shutting down): load here
        _run(name, fut)
    return fut


def _run(name: str, fut: Future[Counter | None]) -> None:
    try:
        fut.set_result(_load(name))
    except BaseException as exc:  # noqa: BLE001 - handed to the caller by Future.result
        fut.set_exception(exc)


def _load(name: str) -> Counter | None:
    """bpe-openai's Rust tokenizer for `name`, loaded from its binding alone: importing the package
    decodes all three of its vocabularies in Python first (2 s in a new process, on every first
    context), the binding builds one in about 25 ms and counts the same (bench/RESULTS.md "The
    agent loop": every count equal on 3,000 sentences, code, CJK and emoji). The build holds the
    GIL for about half of its time (~35 of ~77 ms measured: bench/RESULTS.md "Then (issue 26, this
    stop)"), so a load `preload` started overlaps the caller's own work only in part: a writer with
    a worker starts it before its folder opens."""
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
                return _remembering(lambda text: int(tok.count(text)))
        except (ImportError, AttributeError, OSError, ValueError):
            pass  # another build of the package: its public API below
    try:
        import bpe_openai  # type: ignore[import-untyped]
    except ImportError:
        return None
    enc = bpe_openai.get_encoding(name)
    return _remembering(lambda text: len(enc.encode_ordinary(text)))


COUNTS_KEPT = 8_192  # lines whose token count a BPE keeps


def _remembering(count: Counter) -> Counter:
    """`count` keeping what it counted, across calls: an agent's contexts place the same memories'
    lines again and again (~90 counts a context at 100,000 memories, ~1 ms). A plain dict of
    strings and ints, emptied when full (the garbage collector does not track its entries)."""
    seen: dict[str, int] = {}
    _remembered.append(seen)

    def counted(text: str) -> int:
        n = seen.get(text)
        if n is None:
            if len(seen) >= COUNTS_KEPT:
                seen.clear()
            n = seen[text] = count(text)
            if time.monotonic() < _quiet_until:  # a purge is recent (after the insert: see lines._keep)
                seen.pop(text, None)
        return n

    return counted


_remembered: list[dict[str, int]] = []  # every BPE's kept counts (one per loaded BPE)


_quiet_until = 0.0  # time.monotonic() before which no count is kept (see forget_counts)


def forget_counts() -> None:
    """Empty the kept token counts (a purge: they are keyed by memories' text), and keep none
    for QUIET_AFTER_PURGE seconds (a context under way would count the purged text again)."""
    global _quiet_until
    _quiet_until = time.monotonic() + QUIET_AFTER_PURGE
    for seen in _remembered:
        seen.clear()


def counted_texts() -> list[str]:
    """The texts whose token counts are kept now (what a purge must leave none of)."""
    return [text for seen in list(_remembered) for text in list(seen)]


def _name(tokenizer: str | Counter | None) -> str | None:
    """The BPE a tokenizer argument names (None: a callable or the estimate); a bad one raises."""
    if callable(tokenizer):
        return None
    name = tokenizer or "cl100k_base"
    if name == "estimate":
        return None
    if name not in ("cl100k_base", "o200k_base"):
        raise ValueError(f"tokenizer must be 'cl100k_base', 'o200k_base', 'estimate' or a callable, got {tokenizer!r}")
    return name


def preload(tokenizer: str | Counter | None = None) -> None:
    """Check a tokenizer argument (as `counter` does: a bad name raises here) and start loading the
    BPE it names on a thread of its own, when bpe-openai is installed: a new process's first
    context overlaps the load (~77 ms, about half of it holding the GIL) with its search, which
    counts no tokens."""
    name = _name(tokenizer)
    if name is None:
        return
    loaded = _loads.get(name)
    if loaded is not None and loaded.done() and loaded.exception() is None and loaded.result() is not None:
        return  # loaded already: the package's search of the import path (~0.15 ms) is for a first call
    try:
        found = importlib.util.find_spec("bpe_openai") is not None
    except Exception:  # an import hook that raises: as for a load that fails, the default is the estimate
        if tokenizer is not None:
            raise
        return
    if not found:
        if tokenizer is not None:
            raise ImportError(f"tokenizer {name!r} needs bpe-openai: pip install 'engramdb[tokens]'")
        return
    _started(name)


def _checked(count: Counter) -> Counter:
    """A caller's tokenizer with each count checked: a budget holds only with counts that are
    numbers >= 0 (a negative one made every line free, NaN emptied the context without a word)."""

    def checked(text: str) -> int:
        n = count(text)
        if isinstance(n, bool) or not isinstance(n, numbers.Real):
            raise TypeError(f"tokenizer must return a number of tokens, got {n!r} ({type(n).__name__})")
        if not (math.isfinite(n) and n >= 0):
            raise ValueError(f"tokenizer must return a finite number of tokens >= 0, got {n!r}")
        return n  # a float count (len(text) / 4) is used as it was before

    return checked


def counter(tokenizer: str | Counter | None = None) -> tuple[Counter, str]:
    """(count function, its name): `tokenizer` a name ("cl100k_base", "o200k_base", "estimate"),
    a callable, or None (cl100k_base when installed, else the estimate)."""
    if callable(tokenizer):
        return _checked(tokenizer), getattr(tokenizer, "__name__", "custom")
    name = _name(tokenizer)
    if name is None:
        return estimate, "estimate"
    try:
        bpe = _bpe(name)
    except Exception as exc:  # a broken build of bpe-openai (its import or build raised)
        if tokenizer is not None:
            raise
        # the default is only "cl100k_base when installed": a broken install is the estimate,
        # as a missing one is, not an error of every context (the load is tried again next time)
        global _warned
        if not _warned:
            _warned = True
            _log.warning("bpe-openai is installed but could not be loaded (%s: %s); token counts are the "
                         "estimate", type(exc).__name__, exc)
        return estimate, "estimate"
    if bpe is None:
        if tokenizer is not None:
            raise ImportError(f"tokenizer {name!r} needs bpe-openai: pip install 'engramdb[tokens]'")
        return estimate, "estimate"
    return bpe, name


__all__ = ["Counter", "counter", "estimate", "preload"]
