"""S1: a folder holding only captures spooled before its store is made is a store being made, even
while a writer takes those captures in. A capture storm lost one capture in 400: a hook listed the
folder, a writer took a spooled file in (deleted it) before the hook looked at that file, and the
hook refused the folder as someone else's ("not an engramdb store ... and is not empty"), so its own
capture was NOT kept."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from engramdb.storage.folder import classify


def _name(i: int, ext: str) -> str:
    return f"{i:020d}-{os.getpid()}-{i % 0xFFFFFFFF:08x}.{ext}"


def test_a_spooled_file_taken_in_while_the_folder_is_looked_at_is_no_stranger(tmp_path: Path) -> None:
    spool = tmp_path / "store" / "spool"
    spool.mkdir(parents=True)
    stop = threading.Event()

    def churn() -> None:  # files spooled and taken in as fast as they come
        i = 0
        while not stop.is_set():
            for j in range(20):
                (spool / _name(i + j, "json")).write_bytes(b"{}")
            for j in range(20):
                (spool / _name(i + j, "json")).unlink()
            i += 20

    t = threading.Thread(target=churn)
    t.start()
    try:
        kinds = {classify(tmp_path / "store") for _ in range(3_000)}
    finally:
        stop.set()
        t.join()
    assert kinds == {"new"}


def test_an_access_file_being_taken_in_is_a_spool_name(tmp_path: Path) -> None:
    spool = tmp_path / "store" / "spool"
    spool.mkdir(parents=True)
    (spool / _name(1, "taking")).write_bytes(b"")  # storage/spool.py's name while the log adds it
    (spool / _name(2, "json.tmp")).write_bytes(b"")
    assert classify(tmp_path / "store") == "new"
