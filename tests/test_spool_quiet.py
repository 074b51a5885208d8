"""`spool.quiet`: one listing of the spool folder that a writer asks at every add before the three
it would otherwise make (captures waiting, access rows waiting, a temporary file): issue 26, the
agent loop's writes. At the storage seam: it never says quiet while one of the three finds
something to take in."""

from __future__ import annotations

from pathlib import Path

import pytest
from engramdb.storage import spool


@pytest.mark.parametrize("names", [[], ["a.json"], ["a.access"], ["b.taking"], ["x.tmp"], ["c.json.tmp"],
                                   ["d.damaged"], ["e.rejected", "f.txt"], [".json"], ["g.access.tmp"],
                                   ["h.json.damaged.1"]])
def test_quiet_never_hides_what_the_three_checks_find(tmp_path: Path, names: list[str]) -> None:
    store = tmp_path / "s"
    (store / spool.FOLDER).mkdir(parents=True)
    for name in names:
        (store / spool.FOLDER / name).write_text("{}")
    busy = bool(spool.pending(store)) or spool.access_pending(store) or spool.torn(store)
    if busy:
        assert not spool.quiet(store)
    # and with nothing of theirs it is quiet (files set aside, other names)
    if not busy and not any(n.endswith((".json", ".access", ".taking", ".tmp")) for n in names):
        assert spool.quiet(store)


def test_no_spool_folder_is_quiet(tmp_path: Path) -> None:
    assert spool.quiet(tmp_path / "none")
