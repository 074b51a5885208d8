"""tests/golden/themes-v1 (tools/make_golden_themes.py): stored themes (H8, format 1) are listed
from the store, even where scikit-learn cannot run; flipped bytes in them never crash and never
change what is listed (a damaged file is recomputed, not served)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from store_helpers import flipped_copies

GOLDEN = Path(__file__).parent / "golden" / "themes-v1"
EXPECTED = [["build / cmake / code", [f"build{i}" for i in range(4)]],
            ["city / falls / grey", [f"rain{i}" for i in range(4)]]]
LIST = textwrap.dedent("""
    import json, sys
    import engramdb
    from engramdb.store import topic_verbs
    if sys.argv[1] == "stored-only":
        topic_verbs.theme_groups = None  # computing themes would fail: only stored ones can be listed
    out = []
    for folder in sys.argv[2:]:
        with engramdb.open(folder, read_only=True, access_log=False) as db:
            out.append([[t.label, sorted(t.members)] for t in db.topics.themes("n")])
    print(json.dumps(out))
""")


def _list(mode: str, folders: list[str]) -> list[list[list[object]]]:
    got = subprocess.run([sys.executable, "-c", LIST, mode, *folders], check=False, capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    return json.loads(got.stdout)  # type: ignore[no-any-return]


def test_stored_v1_themes_are_listed_without_recomputing(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    assert _list("stored-only", [str(tmp_path / "s")]) == [EXPECTED]


@pytest.mark.parametrize("name", ["index/themes.arrow", "index/themes.json"])
def test_flipped_bytes_in_stored_themes_never_crash_nor_change_them(tmp_path: Path, name: str) -> None:
    folders = flipped_copies(GOLDEN, name, tmp_path, 10)
    assert _list("computing", folders) == [EXPECTED] * len(folders)


def test_a_reader_lists_the_writers_topics_without_clustering(tmp_path: Path) -> None:
    """Topics a writer computed are stored with the namespace's state: a reader process (a hook,
    a service worker) lists them as they were, without clustering."""
    shutil.copytree(GOLDEN, tmp_path / "s")
    code = textwrap.dedent("""
        import json, sys
        import engramdb
        from engramdb.topics import clustering
        if sys.argv[1] == "reader":  # a reader that clustered would fail here
            clustering.cluster_spaces = None
        with engramdb.open(sys.argv[2], read_only=sys.argv[1] == "reader", access_log=False) as db:
            print(json.dumps([[t.id, t.label, sorted(t.members)] for t in db.topics("n")]))
    """)
    runs = []
    for mode in ("writer", "reader"):  # the writer computes and stores, then a reader lists
        got = subprocess.run([sys.executable, "-c", code, mode, str(tmp_path / "s")], check=False,
                             capture_output=True, text=True, timeout=300)
        assert got.returncode == 0, got.stderr[-2000:]
        runs.append(json.loads(got.stdout))
    assert runs[0] == runs[1] and len(runs[0]) >= 2


def test_a_readers_context_uses_the_stored_topics_even_when_stale(tmp_path: Path) -> None:
    """A hook's context in a short-lived reader never clusters: it takes the topics the writer
    stored, though memories arrived since."""
    shutil.copytree(GOLDEN, tmp_path / "s")
    import engramdb

    with engramdb.open(tmp_path / "s", access_log=False) as db:
        stored = [t.label for t in db.topics("n")]
        db.add("the python build now uses ninja with cmake", namespace="n")  # the stored topics are stale now
    code = textwrap.dedent("""
        import json, sys
        import engramdb
        from engramdb.topics import clustering
        clustering.cluster_spaces = None  # clustering would raise: only stored topics can be used
        with engramdb.open(sys.argv[1], read_only=True, access_log=False) as db:
            ctx = db.context("does the code build with cmake?", namespace="n", max_tokens=300)
            print(json.dumps([[i.section, i.why] for i in ctx.items]))
    """)
    got = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], check=False, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    topic_items = [why for section, why in json.loads(got.stdout) if section == "topics"]
    assert topic_items and all(any(label in why for label in stored) for why in topic_items)
