"""Errors that survive the trip from an actor to its client.

Ray pickles an actor's exception and the client unpickles it. An exception class whose
`__init__` takes other arguments than its message (the store's `CorruptFile(path, why)`,
`ConflictError(...)`) pickles but does not unpickle, and the client then gets Ray's
`UnserializableException` instead of what went wrong. `portable` gives such an error as its
nearest base class that does travel (CorruptFile as StoreError), with the same message; `portably`
makes every public method of an actor class raise only such errors.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def _travels(exc: BaseException) -> bool:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to round-trip means it does not travel
        return False
    return True


def portable(exc: Exception) -> Exception:
    """`exc` itself when it unpickles, else its nearest base class made with its message."""
    if _travels(exc):
        return exc
    for base in type(exc).__mro__[1:]:
        if issubclass(base, Exception):
            try:
                copy = base(str(exc))
            except Exception:  # noqa: BLE001, S112 - a base that cannot take a message: try the next
                continue
            if _travels(copy):
                return copy
    return RuntimeError(str(exc))


def _wrap(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            moved = portable(exc)
            if moved is exc:
                raise
            raise moved from None
    return call


def portably(cls: T) -> T:
    """The actor class `cls` with each public method raising only errors that unpickle."""
    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_"):
            setattr(cls, name, _wrap(value))
    return cls


__all__ = ["portable", "portably"]
