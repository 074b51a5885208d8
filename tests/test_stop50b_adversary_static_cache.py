"""Stop 50b adversary: a static table replaced in place with the same size and mtime is not re-read.

`static_embedding.installed()` (stop 50) keeps the table read once per (path, mtime_ns, size).
Two distillations with the same vocabulary and width write embeddings.npz files of exactly the same
size (np.savez of fixed shapes), so only the mtime tells them apart; a table restored or copied
with its timestamps (`cp -p`, `rsync -a`, an unpacked archive) in place of another keeps both equal.
The process then goes on embedding with the table that is no longer on disk, and a store it makes
names that table's version: every other process (the on-disk table) refuses the store, naming a
table that exists nowhere. (The inode's ctime, which utime cannot set, would tell.) Public API:
`engramdb.open(profile="static")`, ENGRAMDB_STATIC_EMBEDDING, `StaticEmbedder(path).version`.
"""

from __future__ import annotations

import os
from pathlib import Path

import engramdb
import pytest
from engramdb.spaces.static_embedding import ENV_VAR, StaticEmbedder
from static_tables import make_folder


def test_a_table_replaced_with_the_same_size_and_mtime_is_read_again(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    table = make_folder(tmp_path / "table", seed=1, dim=256)
    monkeypatch.setenv(ENV_VAR, str(table))
    with engramdb.open(tmp_path / "first", profile="static") as db:
        db.add("I adopted a puppy", namespace="u")
    st = (table / "embeddings.npz").stat()
    make_folder(table, seed=2, dim=256)  # another distillation, copied over the first with its timestamps kept
    os.utime(table / "embeddings.npz", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (table / "embeddings.npz").stat().st_size == st.st_size  # the premise: same size, same mtime
    on_disk = StaticEmbedder(table).version
    with engramdb.open(tmp_path / "second", profile="static") as db:
        named = db.schema["dense"].embedder
    assert named.endswith(on_disk), f"a new store names {named!r}, the table on disk is {on_disk!r}"
