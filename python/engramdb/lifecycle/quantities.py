"""What a short fact's value says (issue 29): its content terms and its amounts, written one way
whatever the wording, so that "two" and "2", "7am" and "7:00", "2 November 2024" and
"2024-11-02", "32 GB" and "32GB" compare equal and "Berlin" / "Munich" do not.

- *Amounts*: numbers in digits ("1,200" is 1200, "90k" 90000, "1.70" 1.7) or in words ("two",
  "thirty-six", "one thousand four hundred and fifty"); hours as HH:MM ("7am", "7 pm", "9:30",
  "19:00"); an ISO date as its year, month name and day; months ("Sept" is september) and
  weekdays ("Mondays" is monday); ordinal days ("3rd", "the 8th of March"). "May" is the month
  next to a number or capitalised inside a sentence, else the verb.
- *Terms*: the other words, stemmed (the analyzer's stemmer), without stop words, negations,
  approximations ("about", "around", "roughly") and words that say when a statement holds rather
  than what it says ("now", "currently", "anymore", "these days", "still"). A few units and
  frequencies are spelled one way ("kilos" is kg, "daily" is day, "monthly" month). A number
  glued to a unit splits ("64GB" is 64 and gb); a code keeps its letter ("4B").
- *When*: whether the value says a time (an hour, a date, a weekday, a month, a year, an ordinal
  day, "today", "tomorrow", "morning", "weekend"...), and whether it *opens* with one ("on
  Monday", "to Wednesday", "tomorrow at 4pm"; not "to Porto in March"): a value opening with a
  time says when its subject happens.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..spaces.analyzer import SNOWBALL_STOPWORDS, negation, stem
from .lexicon import word_set
from .subjects import Word, statement

_MONTH_LIST = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")
_MONTHS = {m[:3]: m for m in _MONTH_LIST} | {"sept": "september"}
_WEEKDAYS = {d[:3]: d for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}
_WEEKDAYS |= {"tues": "tuesday", "wed": "wednesday", "thur": "thursday", "thurs": "thursday"}
_DAY_NAMES = frozenset(_WEEKDAYS.values())
# a month or weekday named in full ("may" left out: a verb as often), for what reads a time's start
TIME_NAMES = frozenset(_MONTH_LIST) - {"may"} | _DAY_NAMES
_TIME_WORDS = word_set("""today tomorrow tonight yesterday morning mornings afternoon afternoons evening
    evenings night nights noon midnight weekend weekends""")
_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
          "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10, "twelfth": 12, "fifteenth": 15, "twentieth": 20}
_MEASURES = word_set("gb mb tb kb kg g mg km cm mm ml l hr hrs min mins sec secs mph mpg kmh kw ft lbs")
_SAME = {"kilo": "kg", "kilogram": "kg", "min": "minut", "mins": "minut", "hr": "hour", "hrs": "hour",
         "daili": "day", "weekli": "week", "monthli": "month", "yearli": "year", "annual": "year", "percent": "%",
         "sec": "second", "secs": "second", "kid": "child", "children": "child"}
_LEAVE_OUT = word_set("""now currently anymore still again already actually really instead too also either
    though nowadays lately recently apparently officially definitely finally moment about around roughly
    approximately approx nearly almost exactly just only circa per some any more longer anything something
    everything""")
_OPENERS = word_set("""on at in by for to from until till this next every the of around about this coming
    early late""")  # may stand before the time a value opens with
_AMOUNT_WORDS = frozenset(_UNITS) | frozenset(_SCALES) | frozenset(_ORDINALS) | frozenset(_WEEKDAYS) | _DAY_NAMES \
    | frozenset(d + "s" for d in _DAY_NAMES) | frozenset(("a", "an"))
_DIGIT = re.compile(r"\d")
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?(am|pm)?")
_NUM = re.compile(r"(\d+(?:\.\d+)?)(k|m|st|nd|rd|th|s)?")
_GLUED = re.compile(r"(\d+(?:\.\d+)?)([a-z]{2,4})")


@dataclass(frozen=True)
class Value:
    """A value's terms and amounts (see the module docstring)."""

    terms: frozenset[str]
    amounts: frozenset[str]
    when: bool  # says a time
    opens_with_time: bool  # opens with one
    head: str | None  # its first term or amount


def value(words: Sequence[Word]) -> Value:
    """The terms and amounts of a value's words."""
    terms: list[str] = []
    amounts: list[str] = []
    when, i = False, 0
    opening = True  # no term yet: amounts and time words still open the value ("from 5 to 12 July")
    opens_with_time = False
    these = any(w.low == "these" for w in words)
    while i < len(words):
        low = words[i].low
        got, kind, i = _amount(words, i)
        if got:
            amounts.extend(got)
            when = when or kind == "time"
            opens_with_time = opens_with_time or (opening and kind == "time")
            continue
        if low in _TIME_WORDS:
            terms.append(low.rstrip("s"))
            when, opens_with_time = True, opens_with_time or opening
        elif "-" in low and not any(c.isdigit() for c in low):
            terms.extend(_term(p) for p in low.split("-") if p and p not in SNOWBALL_STOPWORDS)
            opening = False
        elif (low in SNOWBALL_STOPWORDS or low in _LEAVE_OUT or negation(low) is not None
              or (these and low == "days") or low in ("am", "pm")):
            pass
        elif low not in _OPENERS:
            terms.append(_term(low.removesuffix("'s")))
            opening = False
        i += 1
    return Value(frozenset(terms), frozenset(amounts), when, opens_with_time,
                 (terms[0] if terms else None) if not amounts or terms else amounts[0])


def _term(low: str) -> str:
    t = stem(low)
    return _SAME.get(t, _SAME.get(low, t))


def _amount(words: Sequence[Word], i: int) -> tuple[list[str], str, int]:
    """The amounts at `i` ([] when none), "time" or "number", and the index after them."""
    low = words[i].low
    if low not in _AMOUNT_WORDS and low[:3] not in _MONTHS and low.split("-")[0] not in _UNITS \
            and _DIGIT.search(low) is None:
        return [], "", i  # most words: no regex run
    spoken = _number_words(words, i)
    if spoken is not None:
        n, k = spoken
        return [_fmt(n)], "number", k
    iso = _ISO.fullmatch(low)
    if iso:
        return [str(int(iso.group(1))), _month_name(int(iso.group(2))), str(int(iso.group(3)))], "time", i + 1
    clock = _CLOCK.fullmatch(low)
    if clock and (clock.group(2) or clock.group(3)):
        h = int(clock.group(1)) + (12 if clock.group(3) == "pm" and int(clock.group(1)) < 12 else 0)
        return [f"{h:02d}:{int(clock.group(2) or 0):02d}"], "time", i + 1
    nxt = words[i + 1].low if i + 1 < len(words) else ""
    num = _NUM.fullmatch(low.replace(",", ""))
    if num and nxt in ("am", "pm") and float(num.group(1)) < 13:
        h = int(float(num.group(1))) + (12 if nxt == "pm" and float(num.group(1)) < 12 else 0)
        return [f"{h:02d}:00"], "time", i + 2
    if num:
        n = float(num.group(1)) * {"k": 1000, "m": 1_000_000}.get(num.group(2) or "", 1)
        dated = num.group(2) in ("st", "nd", "rd", "th") or any(
            _month(words, k) is not None for k in (i - 1, i + 1) if 0 <= k < len(words))  # "20 January"
        return [_fmt(n)], "time" if dated or _year(words, i, n) else "number", i + 1
    glued = _GLUED.fullmatch(low)
    if glued and glued.group(2) in _MEASURES:
        return [_fmt(float(glued.group(1))), _SAME.get(glued.group(2), glued.group(2))], "number", i + 1
    month = _month(words, i)
    if month is not None:
        return [month], "time", i + 1
    day = _WEEKDAYS.get(low) or (low[:-1] if low.endswith("s") and low[:-1] in _DAY_NAMES else None)
    if day is None and low in _DAY_NAMES:
        day = low
    if day is not None:
        return [day], "time", i + 1
    if low in _ORDINALS and nxt == "of":
        return [str(_ORDINALS[low])], "time", i + 1
    return [], "", i


def _year(words: Sequence[Word], i: int, n: float) -> bool:
    """Whether the number at `i` is a year: four digits, 1900-2100, not counting a thing ("2000 dollars")."""
    if not (len(words[i].low) == 4 and 1900 <= n <= 2100):
        return False
    nxt = words[i + 1].low if i + 1 < len(words) else ""
    return not nxt or nxt in SNOWBALL_STOPWORDS or nxt in _OPENERS


def _number_words(words: Sequence[Word], i: int) -> tuple[float, int] | None:
    """A number said in words from `i` ("thirty-six", "one thousand four hundred and fifty"): (it,
    the index after it), or None. Two numbers side by side ("four five") end it: only tens take a
    unit after them ("twenty one")."""
    total, current, k, seen, last = 0.0, 0.0, i, False, None
    while k < len(words):
        low = words[k].low
        parts = low.split("-")
        if all(p in _UNITS for p in parts):
            if low == "one" and not _counts(words, k):
                break  # "the younger one,": a pronoun
            n = sum(_UNITS[p] for p in parts)
            if last is not None and not (last >= 20 and last % 10 == 0 and n < 10):
                break
            current, last = current + n, n
        elif low in _SCALES and (seen or low != "hundred" or k > i):
            if low == "hundred":
                current = max(current, 1) * 100
            else:
                total, current = total + max(current, 1) * _SCALES[low], 0.0
            last = None
        elif low in ("a", "an") and k + 1 < len(words) and words[k + 1].low in _SCALES:
            current = 1
        elif low == "and" and seen and k + 1 < len(words) and words[k + 1].low.split("-")[0] in _UNITS:
            k += 1
            continue
        else:
            break
        seen = True
        k += 1
    return (total + current, k) if seen else None


def _counts(words: Sequence[Word], k: int) -> bool:
    """Whether "one" at `k` counts something: a word follows it, not after a comma, and not a function word."""
    nxt = words[k + 1] if k + 1 < len(words) else None
    return nxt is not None and nxt.glued and (nxt.low not in SNOWBALL_STOPWORDS or nxt.low in _SCALES)


@functools.lru_cache(maxsize=1 << 14)
def amounts(text: str) -> frozenset[str]:
    """The normalised amounts of a whole text (see the module docstring): "1,450" and "one thousand
    four hundred and fifty" say the same."""
    return value(statement(text).words).amounts


def _fmt(n: float) -> str:
    return str(int(n)) if n == int(n) else f"{n:g}"


def _month(words: Sequence[Word], i: int) -> str | None:
    low = words[i].low.rstrip(".")
    full = _MONTHS.get(low[:3]) if len(low) >= 3 else None
    if full is None or not (low == full or low in _MONTHS):
        return None
    if low == "may":  # the month, not the verb: next to a number, or capitalised inside a sentence
        near = [words[k].low for k in (i - 1, i + 1) if 0 <= k < len(words)]
        if not (any(_NUM.fullmatch(t.replace(",", "")) for t in near) or (words[i].raw == "May" and not words[i].opens)):
            return None
    return full


def _month_name(m: int) -> str:
    return _MONTH_LIST[m - 1] if 1 <= m <= 12 else str(m)


__all__ = ["Value", "amounts", "value"]
