"""Stop 50b adversary: "the last week of August" names no period at all without a year.

CHANGELOG (stop 50): '"the last week of August" is August's'. The fix only stopped "last week" from
being counted back from now (a unit followed by "of"); August itself is read only with a year
("the last week of October 2023", the one case tests/test_search_dates.py checks) or after "in",
"on", "during", ... — and "of" is none of those. So "What did I do the last week of August?" (the
phrase the changelog names) reads no date: nothing said in August ranks higher, and a question that
is only that date finds nothing said then. `engramdb.retrieval.dates` is the layer seam.
"""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest
from engramdb.retrieval.dates import DAY_US, periods

NOW = datetime(2024, 10, 10, 12, tzinfo=timezone.utc)
NOW_US = int(NOW.timestamp()) * 1_000_000


def _days(text: str) -> list[tuple[date, date]]:
    epoch = date(1970, 1, 1).toordinal()
    return [(date.fromordinal(epoch + a // DAY_US), date.fromordinal(epoch + (b - 1) // DAY_US))
            for a, b in periods(text, NOW_US)]


AUGUST = [(date(2024, 8, 1), date(2024, 8, 31))]


@pytest.mark.parametrize("text", [
    "What did I do the last week of August?",
    "Where was I during the last week of August?",
])
def test_a_week_of_a_month_named_without_a_year_is_that_month(text: str) -> None:
    assert _days("What did I do in August?") == AUGUST  # the month alone, as a control
    assert _days(text) == AUGUST, text
