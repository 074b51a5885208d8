"""The CLI verbs a privacy request and a support engineer need (issue 27), through `python -m
engramdb` as a user runs them: get, history, list (a page and its cursor), forget and restore
(soft, every id checked first), purge (irreversible: without --yes it only says what it would
remove and changes nothing; with --yes no byte of the purged content is left in the folder)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import engramdb
import pytest

SECRET = "Bob's door code is 7391-ZEBRA-QUARTZ"


def run(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
    return subprocess.run([sys.executable, "-m", "engramdb", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)


def document(done: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a --json run printed (and nothing else on stdout)."""
    assert done.returncode == 0, (done.args, done.stderr)
    assert len(done.stdout.strip().splitlines()) == 1, done.stdout
    return json.loads(done.stdout)


def digest(folder: Path) -> dict[str, str]:
    """Every file of the folder by its bytes' hash."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def holding(folder: Path, text: str) -> list[str]:
    """The files of the folder whose bytes hold `text`."""
    needle = text.encode()
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture()
def store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "store"
    with engramdb.open(path) as db:
        maya = [db.add(f"Maya's violin lesson number {i}", namespace="maya") for i in range(3)]
        bob = db.add(SECRET, namespace="bob")
        tea = db.add("Sam likes green tea", namespace="sam")
        db.update(maya[0].id, content="Maya's violin lesson moved to Friday")
        db.search("door code", namespace="bob")  # the access log names bob's memory and the query
    return path, {"maya0": maya[0].id, "maya1": maya[1].id, "maya2": maya[2].id, "bob": bob.id, "tea": tea.id}


def test_get_history_and_list_by_path_in_text_and_json(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, ids = store
    p = ["--path", str(path)]
    got = document(run(["get", ids["maya0"], *p, "--json"], tmp_path))
    assert got["id"] == ids["maya0"] and got["content"] == "Maya's violin lesson moved to Friday" and got["version"] == 2
    text = run(["get", ids["maya0"], "-p", str(path)], tmp_path)
    assert text.returncode == 0 and ids["maya0"] in text.stdout and "moved to Friday" in text.stdout

    versions = document(run(["history", ids["maya0"], *p, "--json"], tmp_path))["versions"]
    assert [v["content"] for v in versions] == ["Maya's violin lesson number 0", "Maya's violin lesson moved to Friday"]
    text = run(["history", ids["maya0"], *p], tmp_path)
    assert text.returncode == 0 and len(text.stdout.splitlines()) == 2

    first = document(run(["list", "--namespace", "maya", "--limit", "2", *p, "--json"], tmp_path))
    assert len(first["memories"]) == 2 and first["next_cursor"]
    rest = document(run(["list", "--namespace", "maya", "--limit", "2", "--cursor", first["next_cursor"], *p,
                         "--json"], tmp_path))
    assert rest["next_cursor"] is None
    assert sorted(m["id"] for m in first["memories"] + rest["memories"]) == sorted(
        [ids["maya0"], ids["maya1"], ids["maya2"]])
    text = run(["list", "--namespace", "maya", "--limit", "2", *p], tmp_path)
    assert text.returncode == 0 and f"next page: --cursor {first['next_cursor']}" in text.stdout
    nobody = run(["list", "--namespace", "nobody", *p], tmp_path)
    assert nobody.returncode == 0 and nobody.stdout == "no memories to list in namespace nobody (0 memories)\n"


def test_get_and_history_of_an_unknown_id_are_one_line_errors(store: tuple[Path, dict[str, str]],
                                                            tmp_path: Path) -> None:
    path, _ = store
    for verb in ("get", "history"):
        done = run([verb, "no-such-id", "-p", str(path)], tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == f"engramdb {verb}: no memory with id 'no-such-id'\n"


def test_forget_and_restore(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, ids = store
    p = ["-p", str(path)]
    forgot = document(run(["forget", ids["maya0"], ids["maya1"], *p, "--json"], tmp_path))
    assert [m["id"] for m in forgot["forgotten"]] == [ids["maya0"], ids["maya1"]]
    assert all(m["forgotten_at"] for m in forgot["forgotten"])
    hidden = run(["get", ids["maya0"], *p], tmp_path)
    assert hidden.returncode == 1 and "add --forgotten" in hidden.stderr
    assert document(run(["get", ids["maya0"], "--forgotten", *p, "--json"], tmp_path))["forgotten_at"]
    restored = run(["restore", ids["maya0"], "--path", str(path)], tmp_path)
    assert restored.returncode == 0 and restored.stdout == f"restored {ids['maya0']}\n"
    with engramdb.open(path, read_only=True) as db:
        assert db.get(ids["maya0"]) is not None and db.get(ids["maya1"]) is None


@pytest.mark.parametrize("verb", ["forget", "restore", "purge"])
def test_unknown_ids_are_refused_by_name_with_nothing_changed(store: tuple[Path, dict[str, str]], tmp_path: Path,
                                                              verb: str) -> None:
    path, ids = store
    before = digest(path)
    done = run([verb, ids["bob"], "nope-1", "nope-2", "-p", str(path), "--yes"][: None if verb == "purge" else -1],
               tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "'nope-1'" in done.stderr and "'nope-2'" in done.stderr and "nothing was changed" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert digest(path) == before


def test_purge_without_yes_says_what_it_would_remove_and_changes_nothing(store: tuple[Path, dict[str, str]],
                                                                         tmp_path: Path) -> None:
    path, ids = store
    before = digest(path)
    by_ns = run(["purge", "--namespace", "bob", "-p", str(path)], tmp_path)
    assert by_ns.returncode == 2 and "add --yes" in by_ns.stderr
    assert by_ns.stdout == "would remove from namespace bob: 1 memory, every version\n"
    by_ids = run(["purge", ids["maya0"], ids["tea"], "-p", str(path), "--json"], tmp_path)
    assert by_ids.returncode == 2 and "add --yes" in by_ids.stderr
    assert json.loads(by_ids.stdout)["would_remove"] == {"maya": {"memories": 1, "versions": 2},
                                                         "sam": {"memories": 1, "versions": 1}}
    neither = run(["purge", "-p", str(path)], tmp_path)
    assert neither.returncode == 2 and "--namespace" in neither.stderr
    assert digest(path) == before


def test_purge_with_yes_leaves_no_byte_of_the_content(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, ids = store
    assert holding(path, SECRET)  # the check below can see it: it is in the store's files now
    done = run(["purge", "--namespace", "bob", "--yes", "-p", str(path), "--json"], tmp_path)
    assert document(done)["purged_versions"] == 1
    assert "backups and exports" in done.stderr
    assert holding(path, SECRET) == [] and holding(path, "door code") == []
    by_id = run(["purge", ids["maya0"], "--yes", "-p", str(path)], tmp_path)
    assert by_id.returncode == 0 and by_id.stdout == "purged 2 versions\n"
    assert holding(path, "moved to Friday") == [] and holding(path, "lesson number 0") == []
    with engramdb.open(path, read_only=True) as db:
        assert db.history(ids["bob"]) == [] and db.history(ids["maya0"]) == []
        assert db.get(ids["maya1"]) is not None and db.get(ids["tea"]) is not None


def test_a_writer_held_elsewhere_is_a_clear_error(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, ids = store
    with engramdb.open(path) as db:  # this process holds the writer
        before = digest(path)
        for args in (["forget", ids["tea"]], ["restore", ids["tea"]], ["purge", ids["tea"], "--yes"],
                     ["purge", "--namespace", "sam", "--yes"]):
            done = run([*args, "-p", str(path)], tmp_path)
            assert done.returncode == 1 and done.stdout == "", (args, done.stdout)
            assert done.stderr.startswith(f"engramdb {args[0]}: cannot {args[0]}: ") and "open for writing" in \
                done.stderr and "nothing was changed" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
        assert digest(path) == before
        dry = run(["purge", "--namespace", "sam", "-p", str(path)], tmp_path)  # reads only: works meanwhile
        assert dry.returncode == 2 and "1 memory" in dry.stdout
        assert db.get(ids["tea"]) is not None


def test_stdout_closed_is_refused_before_anything_is_done(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, _ = store
    before = digest(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m engramdb purge --namespace bob --yes -p {shlex.quote(str(path))} >&-", shell=True,
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1 and "standard output is closed" in done.stderr
    assert digest(path) == before
