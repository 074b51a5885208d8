"""Stop 50b adversary: a date without a time is told to "add one (Z, +00:00, +02:00)", and neither works.

d9ea4a3 (stop 50) made a time option without a UTC offset say how to add one in a shell's terms,
for a date alone `{value}T00:00:00+00:00`; f441367 folded the three parsers into
`model.checks.iso_time`, whose one message says "has no UTC offset: add one (Z, +00:00, +02:00)"
for "2025-03-20" too. Followed literally, "2025-03-20Z" is "not an ISO-8601 time", and
"2025-03-20+00:00" (Python reads the "+" as the date/time separator and "00:00" as a naive time)
is told again that it "has no UTC offset", although it carries one. `--valid-from`, `--older-than`
and `--now` are given dates more than times. Public API: the CLI (`engramdb.cli.main`) and
`add_messages`.
"""

from __future__ import annotations

from pathlib import Path

import engramdb
import pytest
from engramdb import cli


def test_the_advice_for_a_date_alone_shows_a_time_that_opens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "store")
    with engramdb.open(path) as db:
        db.add("x", namespace="n")
    assert cli.main(["add", "y", "--path", path, "--namespace", "n", "--valid-from", "2025-03-20"]) == 1
    said = capsys.readouterr().err
    assert "2025-03-20T" in said, f"no way to add the offset to a date alone is shown: {said.strip()}"


@pytest.mark.parametrize("value", ["2025-03-20+00:00", "2025-03-20+02:00"])
def test_a_date_with_an_offset_is_never_said_to_have_none(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          value: str) -> None:
    path = str(tmp_path / "store")
    with engramdb.open(path) as db:
        db.add("x", namespace="n")
    cli.main(["add", "y", "--path", path, "--namespace", "n", "--valid-from", value])
    assert "has no UTC offset" not in capsys.readouterr().err
    db = engramdb.open(None)
    try:
        db.add_messages([{"role": "user", "content": "hi", "valid_from": value}], namespace="n")
    except ValueError as exc:
        assert "has no UTC offset" not in str(exc), str(exc)
    finally:
        db.close()
