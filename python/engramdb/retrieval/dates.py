"""Dates a query names (C3): "on May 3, 2023", "in June", "last week", "two days ago".

A question that names a time ("What did I buy in March?", "What did Sam say on 13 October
2023?", "What did we decide last week?") is about what was said then: `windows` reads the
periods it names, and the search ranks the memories that started to hold in one of them
(`valid_from`: the day a turn was said, when the caller gives each turn its session's date) a
little higher, and counts a memory said then as matching the question's date even when it shares
none of its words ("What did I do yesterday?"; retrieval/search.py). It never filters: a date it
misreads, or one outside the store's history, removes nothing; what matches the question's words
still ranks first. A date named relative to the asking ("last week") is not also matched as words
when its period holds memories (`without_relative`). The strategies that read the query's words
read its dates (hybrid, bm25, rrf, multi_space, pipeline); a dense one (dense_only, exact, tree,
hnsw) orders by its space's similarity alone.

What it reads, case-insensitive, English:
- a day: ISO `2023-05-03`; `May 3, 2023`, `May 3rd`, `3 May 2023`, `the 3rd of May`;
- a month: `May 2023`, `in May`, `the end of May`, `last May` (a month name needs a day, a year or a preposition
  before it: "may" is also a verb, "this may help"; a bare number before "may" is no day, "the 2
  may help"), `early/mid/late June` as the whole month; `last June` said in June is a year back;
- a year: `in 2023`, `2023` (1900-2099);
- relative to `now` (the caller's `search(now=...)`, else the clock): `today`, `yesterday`,
  `the day before yesterday`,
  `this/last week`, `this/last weekend`, `this/last month`, `this/last year`,
  `last Friday`, `N days/weeks/months/years ago` (N a number or one..twelve, "a", "an").
A date without a year is the latest such date that is not after `now`. Only the first
`MAX_CHARS` characters are read.

Each period is widened by `GRACE_BEFORE` before it and by its own length (at most `GRACE_AFTER`)
after it: what happened in a period is often told in the days after it ("Last week I went
camping", said on the Monday after).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta

import numpy as np

__all__ = ["periods", "relative_windows", "windows", "within", "without_relative"]

DAY_US = 86_400 * 1_000_000
GRACE_BEFORE = DAY_US  # time zones: a day said in one is the day before in UTC
GRACE_AFTER = 7 * DAY_US
# A question names its dates in its first sentences; a long query (a pasted document) is read no
# further, so its cost stays bounded (a megabyte of "2023 2023 ..." took 3.5 s to read whole).
MAX_CHARS = 2_000

_MONTHS = {name: i for i, name in enumerate(calendar.month_name) if name} | \
    {name: i for i, name in enumerate(calendar.month_abbr) if name} | {"Sept": 9}
_MONTH_RE = "|".join(sorted((m.lower() for m in _MONTHS), key=len, reverse=True))
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_NUMBER_RE = "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True))
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}

_YEAR = r"(?P<{}>(?:19|20)\d\d)"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_ISO = re.compile(r"\b(?P<y>(?:19|20)\d\d)[-/](?P<m>[01]?\d)[-/](?P<d>[0-3]?\d)\b")
_MONTH_DAY = re.compile(rf"\b(?P<mon>{_MONTH_RE})\.?\s+{_DAY.format('d')}\b(?:,?\s+{_YEAR.format('y')}\b)?")
_DAY_MONTH = re.compile(rf"\b(?:the\s+)?(?P<d>[0-3]?\d)(?P<th>st|nd|rd|th)?\s+(?P<of>of\s+)?(?P<mon>{_MONTH_RE})\b\.?"
                        rf"(?:,?\s+{_YEAR.format('y')}\b)?")
_MONTH_YEAR = re.compile(rf"\b(?P<mon>{_MONTH_RE})\.?,?\s+(?:of\s+)?{_YEAR.format('y')}\b")
_IN_MONTH = re.compile(rf"\b(?P<pre>in|on|of|during|since|until|through|by|early|mid|late|last)[\s-]+"
                       rf"(?P<mon>{_MONTH_RE})\b")
_DAY_BEFORE_OF = re.compile(r"\d(?:st|nd|rd|th)?\s*$")
_YEAR_ALONE = re.compile(r"\b(?P<y>(?:19|20)\d\d)\b")
_AGO = re.compile(rf"\b(?P<n>\d{{1,3}}|{_NUMBER_RE})\s+(?P<unit>day|week|month|year)s?\s+ago\b")
# "the last week of August" is August's: a unit followed by "of" is not counted back from now
_RELATIVE = re.compile(r"\b(?P<which>this|last|past)\s+(?P<unit>weekend|week|month|year)\b(?!\s+of\b)"
                       r"|\b(?P<word>today|yesterday)\b")
_DAY_BEFORE = re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b")
_LAST_WEEKDAY = re.compile(rf"\b(?:last|on|this\s+past)\s+(?P<wd>{'|'.join(_WEEKDAYS)})\b")
# the relative forms, read on the text as written (lower-casing can change a text's length)
_RELATIVE_ANY_CASE = tuple(re.compile(p.pattern, re.IGNORECASE) for p in (_DAY_BEFORE, _AGO, _RELATIVE, _LAST_WEEKDAY))


def windows(text: str, now_us: int) -> list[tuple[int, int]]:
    """The (start, end) microsecond ranges, grace included, of the periods `text` names (see
    the module docstring), sorted and merged where they overlap; [] when it names none. A period outside the calendar (before year 1,
    after 9999: "3000 years ago") is left out."""
    return _ranges(_named(text, now_us), grace=True)


def periods(text: str, now_us: int) -> list[tuple[int, int]]:
    """The periods `text` names as `windows` reads them, without the grace: the days themselves."""
    return _ranges(_named(text, now_us), grace=False)


def relative_windows(text: str, now_us: int) -> list[tuple[int, int]]:
    """`windows` of the dates `text` names relative to when it is asked ("yesterday", "last week")."""
    return _ranges(_named(text, now_us, relative_only=True), grace=True)


def without_relative(text: str) -> str:
    """`text` with the dates it names relative to when it is asked ("yesterday", "last week", "two
    days ago", "on Friday") blanked out. Those words place the question in time; matched as words,
    they find memories that said "last week" about their own week, months before the one meant."""
    head = text[:MAX_CHARS]
    for pattern in _RELATIVE_ANY_CASE:
        head = pattern.sub(lambda m: " " * len(m.group(0)), head)
    return head + text[MAX_CHARS:]


def _named(text: str, now_us: int, relative_only: bool = False) -> list[tuple[date, date]]:
    low = text[:MAX_CHARS].lower()
    # the day by integer arithmetic: a float of the seconds rounds the calendar's last microsecond
    # up into year 10000, which no date holds
    now = _EPOCH_DAY + timedelta(days=now_us // DAY_US)
    spans: list[tuple[date, date]] = []
    taken = bytearray(len(low))  # characters already read, so "May 3, 2023" is not also "2023"

    def read(m: re.Match[str], span: Callable[[re.Match[str]], tuple[date, date] | None], mark: bool = True) -> None:
        if any(taken[m.start():m.end()]):
            return
        try:
            got = span(m)
        except (ValueError, OverflowError):  # out of the calendar
            return
        if got is not None:
            spans.append(got)
            if mark:
                taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())

    if not relative_only:  # the dates that name their own day, month or year
        for m in _ISO.finditer(low):
            read(m, lambda m: _one(_day(m["y"], int(m["m"]), int(m["d"]), now)))
        for m in _MONTH_DAY.finditer(low):
            read(m, lambda m: _one(_day(m["y"], _MONTHS[_title(m["mon"])], int(m["d"]), now)))
        for m in _DAY_MONTH.finditer(low):
            # "the 2 may help" is the verb: a day before "may" needs "of", an ordinal or a year to be May
            if m["mon"] != "may" or m["th"] or m["of"] or m["y"]:
                read(m, lambda m: _one(_day(m["y"], _MONTHS[_title(m["mon"])], int(m["d"]), now)))
        for m in _MONTH_YEAR.finditer(low):
            read(m, lambda m: _month(int(m["y"]), _MONTHS[_title(m["mon"])]))
        for m in _IN_MONTH.finditer(low):
            if m["pre"] == "of" and _DAY_BEFORE_OF.search(low, 0, m.start()):  # "the 45th of May": no day, no month
                continue
            read(m, lambda m: _named_month(_MONTHS[_title(m["mon"])], m["pre"] == "last", now))
        for m in _YEAR_ALONE.finditer(low):
            read(m, lambda m: (date(int(m["y"]), 1, 1), date(int(m["y"]), 12, 31)))
    for m in _DAY_BEFORE.finditer(low):  # read first, and marked: its "yesterday" is not one
        read(m, lambda m: _one(now - timedelta(days=2)))
    for m in _AGO.finditer(low):
        read(m, lambda m: _ago(now, int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"]], m["unit"]), False)
    for m in _RELATIVE.finditer(low):
        read(m, lambda m: _relative(now, m["word"] or m["which"], m["unit"]), False)
    for m in _LAST_WEEKDAY.finditer(low):
        read(m, lambda m: _one(now - timedelta(days=(now.weekday() - _WEEKDAYS[m["wd"]]) % 7 or 7)), False)
    return spans


def _ranges(spans: list[tuple[date, date]], grace: bool) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(set(spans)):  # merged where they overlap: a query naming many dates stays cheap
        a, b = _us(first), _us(last) + DAY_US  # the last day whole
        if grace:
            a, b = a - GRACE_BEFORE, b + min(GRACE_AFTER, b - a)
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def within(times_us: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """One bool per time: does it fall in one of `spans` (as `windows` returns them: sorted, apart)?"""
    t = np.asarray(times_us, np.int64)
    if not spans:
        return np.zeros(len(t), bool)
    starts = np.array([a for a, _ in spans], np.int64)
    ends = np.array([b for _, b in spans], np.int64)
    i = np.searchsorted(starts, t, side="right") - 1
    return (i >= 0) & (t < ends[np.maximum(i, 0)])


def _one(day: date | None) -> tuple[date, date] | None:
    return None if day is None else (day, day)


def _month(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _named_month(month: int, last: bool, now: date) -> tuple[date, date]:
    """A month named without a year: the latest that has begun by `now`; "last June" said in June
    is the year before's (this one is "this June")."""
    year = now.year if (month < now.month or (month == now.month and not last)) else now.year - 1
    return _month(year, month)


def _title(name: str) -> str:
    return name[:1].upper() + name[1:].lower()


def _day(year: str | None, month: int, day: int, now: date) -> date | None:
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(int(year) if year else 2000, month)[1]:
        return None
    if year is not None:
        return date(int(year), month, day)
    y = _latest_year(month, day, now)
    while day > calendar.monthrange(y, month)[1]:  # February 29: the latest leap year's (8 years back at most)
        y -= 1
    return date(y, month, day)


def _latest_year(month: int, day: int, now: date) -> int:
    """The year of the latest (month, day) that is not after `now`."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _ago(now: date, n: int, unit: str) -> tuple[date, date]:
    """"n units ago": the unit-long period around that point."""
    if unit == "day":
        day = now - timedelta(days=n)
        return day, day
    if unit == "week":
        mid = now - timedelta(weeks=n)
        return mid - timedelta(days=3), mid + timedelta(days=3)
    if unit == "month":
        y, m = divmod(now.year * 12 + now.month - 1 - n, 12)
        return _month(y, m + 1)
    y = max(now.year - n, 1)
    return date(y, 1, 1), date(y, 12, 31)


def _relative(now: date, which: str, unit: str | None) -> tuple[date, date]:
    if which == "today":
        return now, now
    if which == "yesterday":
        day = now - timedelta(days=1)
        return day, day
    back = which != "this"  # "last" and "past"
    if unit == "week":
        if which == "past":
            return now - timedelta(days=7), now
        monday = now - timedelta(days=now.weekday()) - timedelta(weeks=back)
        return monday, monday + timedelta(days=6)
    if unit == "weekend":
        saturday = now - timedelta(days=(now.weekday() - 5) % 7)
        if back and saturday + timedelta(days=1) >= now:
            saturday -= timedelta(weeks=1)
        return saturday, saturday + timedelta(days=1)
    if unit == "month":
        if which == "past":
            return now - timedelta(days=30), now
        y, m = divmod(now.year * 12 + now.month - 1 - back, 12)
        return _month(y, m + 1)
    if which == "past":
        return now - timedelta(days=365), now
    return date(now.year - back, 1, 1), date(now.year - back, 12, 31)


_EPOCH_DAY = date(1970, 1, 1)


def _us(day: date) -> int:
    return (day - _EPOCH_DAY).days * DAY_US
