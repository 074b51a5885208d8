"""A wall clock the test moves: the engine reads the time in two places, `time.time_ns` and the
datetime that engramdb.model.memory's `utc_now` reads, and both are offset here by what the test
says. A test that waits for the real clock to pass a validity boundary set a fraction of a second
ahead must finish everything it checks before the boundary within that fraction: 0.6 s failed on a
loaded machine, and run alone, where the first search of the process loads what it needs inside
the window (tests/test_validity_loop.py). A moved clock passes a boundary when the test says so,
on any machine, and needs no sleep."""

from __future__ import annotations

import datetime as dt
import time

import engramdb.model.memory as mm
import pytest


class _AnyDatetime(type):
    """The moved datetime class takes every datetime as its own: the engine's checks
    (`isinstance(value, datetime)`) accept what callers and the engine made with the real class."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, dt.datetime)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, dt.datetime)


class Clock:
    """The engine's clock, `offset_ns` away from the real one (0 at first), for one test
    (`monkeypatch` puts the real clock back after it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset_ns = 0
        real_ns = time.time_ns
        clock = self

        class Moved(dt.datetime, metaclass=_AnyDatetime):
            @classmethod
            def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
                return dt.datetime.fromtimestamp((real_ns() + clock.offset_ns) / 1e9, tz)  # a plain datetime

        monkeypatch.setattr(time, "time_ns", lambda: real_ns() + self.offset_ns)
        monkeypatch.setattr(mm, "datetime", Moved)

    def now(self) -> dt.datetime:
        """The time the engine reads now (UTC)."""
        return mm.utc_now()

    def forward(self, seconds: float) -> None:
        """Move the clock `seconds` ahead (back, when negative)."""
        self.offset_ns += round(seconds * 1e9)
