"""The command line under attack (issue 27, adversary 5: F7-F11), through `python -m engramdb` as a
user runs it: a missing file is never taken for a new store, output that cannot be written is a
failure (and a write that happened says so on stderr, with its id), a store folder given twice or
blank is refused, and a symlink loop is named as one by every command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import engramdb
import pytest
from engramdb.agents.hook_events import Payload, store_path
from engramdb.commands.parser import COMMANDS


def run(args: Sequence[str], cwd: Path, env_path: str | None = None, stdout: int | None = subprocess.PIPE,
        shell_prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
    if env_path is not None:
        env["ENGRAMDB_PATH"] = env_path
    return subprocess.run([*shell_prefix, sys.executable, "-m", "engramdb", *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
                          check=False)


def closed_stdout(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command started with file descriptor 1 closed, as `cmd >&-` does."""
    return run(args, cwd, stdout=None, shell_prefix=["sh", "-c", 'exec "$@" >&-', "sh"])


def make_store(path: Path, *texts: str) -> None:
    with engramdb.open(path) as db:
        db.add_many([{"content": t, "namespace": "n"} for t in texts or ("Maya likes green tea",)])


def contents(path: Path, namespace: str = "n") -> list[str]:
    with engramdb.open(path, read_only=True) as db:
        return sorted(m.content for m in db.list(namespace))


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, (done.args, done.stderr)
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr, done.stderr
    return done.stderr


# ------------------------------------------------------------------------------ F7: ingest
def test_ingest_never_takes_a_missing_file_for_a_new_store(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("How to build the project: run make.\n")
    (tmp_path / "empty").mkdir()
    # the user meant two files, NOTES (mistyped, or in another folder) and README
    missing = run(["ingest", "NOTES", "README"], tmp_path)
    assert "NOTES is not a file to ingest: no such file" in one_error_line(missing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README", "empty"], "a store was made from a file name"
    # an empty folder is not a store either: it is a name that is not a file
    folder = run(["ingest", "empty", "README"], tmp_path)
    assert "empty is not a file to ingest: it is a folder" in one_error_line(folder)
    assert list((tmp_path / "empty").iterdir()) == [] and not (tmp_path / ".engramdb").exists()


def test_ingest_old_form_still_takes_an_existing_store_first(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("How to build the project: run make.\n")
    make_store(tmp_path / "mystore")
    done = run(["ingest", "mystore", "README", "--namespace", "d"], tmp_path)
    assert done.returncode == 0 and "use --path mystore" in done.stderr, done.stderr
    assert contents(tmp_path / "mystore", "d") == ["How to build the project: run make."]


# ------------------------------------------------------------------------------ F8: output lost
def test_a_closed_stdout_fails_before_anything_is_done(tmp_path: Path) -> None:
    store = tmp_path / "s"
    added = closed_stdout(["add", "Maya likes tea", "--namespace", "n", "--json", "--path", str(store)], tmp_path)
    assert "standard output is closed" in one_error_line(added)
    assert not store.exists(), "the memory was stored, its id lost"
    make_store(store)
    stats = closed_stdout(["stats", "--json", "--path", str(store)], tmp_path)
    assert "standard output is closed" in one_error_line(stats)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_write_whose_output_fails_says_what_it_stored_on_stderr(tmp_path: Path) -> None:
    store = tmp_path / "s"
    for extra in ([], ["--json"]):
        with open("/dev/full", "w") as full:
            done = run(["add", "Maya likes tea", "--namespace", "n", "--path", str(store), *extra], tmp_path,
                       stdout=full.fileno())
        said = one_error_line(done)
        assert "No space left on device" in said, said
        ids = re.findall(r"stored memory ([0-9a-f]{32}) in namespace n, but its output could not be written", said)
        assert len(ids) == 1, said
        with engramdb.open(store, read_only=True) as db:
            got = db.get(ids[0])
            assert got is not None and got.content == "Maya likes tea"


# ------------------------------------------------------------------------------ F9, F10: the folder
def test_a_path_given_twice_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    make_store(a)
    make_store(b)
    for args in (["stats", "--json", "--path", str(a), "--path", str(b)],
                 ["consolidate", "--apply", "-p", str(a), f"--path={b}"],
                 ["add", "x", "--namespace", "n", "-p", str(a), "-p", str(b)]):
        done = run(args, tmp_path)
        assert done.returncode == 2 and "is given twice" in done.stderr and str(b) in done.stderr, done.stderr
    assert contents(a) == contents(b) == ["Maya likes green tea"]
    same = run(["stats", "--json", "--path", str(a), "-p", str(a)], tmp_path)  # the same folder twice is one
    assert same.returncode == 0, same.stderr


def test_a_blank_path_option_is_refused_naming_it(tmp_path: Path) -> None:
    for args in (["add", "Maya likes tea", "--namespace", "n", "--path", "  "], ["stats", "-p", " "],
                 ["stats", "  "]):  # the old positional form too
        done = run(args, tmp_path)
        assert done.returncode == 2, done.stderr
        assert re.search(r"(--path|the store folder) '\s+' is blank", done.stderr), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_blank_env_path_is_unset_as_an_empty_one_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank $ENGRAMDB_PATH is what a template's missing variable leaves: no folder anyone meant.
    It is treated as unset, as an empty one (and as the hooks' store_path has it), and said."""
    done = run(["add", "Maya likes tea", "--namespace", "n"], tmp_path, env_path="  ")
    assert done.returncode == 0, done.stderr
    assert "$ENGRAMDB_PATH is blank ('  '): treated as unset" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [".engramdb"]
    assert contents(tmp_path / ".engramdb") == ["Maya likes tea"]
    monkeypatch.setenv("ENGRAMDB_PATH", " \t")
    payload = Payload("UserPromptSubmit", "s1", str(tmp_path), None)
    assert store_path(None, payload) == tmp_path / ".engramdb"  # the hooks meet the same store


# ------------------------------------------------------------------------------ F11: symlinks
def _every_command(loop: str, tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "notes.md").write_text("The tomatoes need water every evening.\n")
    return {
        "add": ["add", "x", "--namespace", "n", "--path", loop],
        "ingest": ["ingest", str(tmp_path / "notes.md"), "--path", loop],
        "search": ["search", "tea", "--namespace", "n", "--path", loop],
        "context": ["context", "tea", "--namespace", "n", "--path", loop],
        "stats": ["stats", "--json", "--path", loop],
        "topics": ["topics", "--namespace", "n", "--path", loop],
        "metrics": ["metrics", "--path", loop],
        "consolidate": ["consolidate", "--apply", "--path", loop],
        "index": ["index", "--path", loop],
        "infer-edges": ["infer-edges", "--namespace", "n", "--path", loop],
        "archive": ["archive", "--older-than", "2030-01-01T00:00:00+00:00", "--path", loop],
        "export": ["export", str(tmp_path / "out.jsonl"), "--path", loop],
        "backup": ["backup", str(tmp_path / "copy"), "--path", loop],
        "verify": ["verify", "--path", loop],
        "repair": ["repair", "--path", loop],
        "mcp": ["mcp", "--path", loop],
        "demo": ["demo", "--path", loop],
        "get": ["get", "some-id", "--path", loop],
        "history": ["history", "some-id", "--path", loop],
        "list": ["list", "--namespace", "n", "--path", loop],
        "forget": ["forget", "some-id", "--path", loop],
        "restore": ["restore", "some-id", "--path", loop],
        "purge": ["purge", "--namespace", "n", "--yes", "--path", loop],
    }


def test_a_symlink_loop_is_named_as_such_by_every_command(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    loop = str(tmp_path / "a")
    commands = _every_command(loop, tmp_path)
    # every command that takes a store folder (the hooks never refuse: they exit 0 by contract)
    assert set(commands) == set(COMMANDS) - {"hook", "capabilities"}
    with ThreadPoolExecutor(6) as pool:
        results = dict(zip(commands, pool.map(lambda args: run(args, tmp_path), commands.values())))
    for name, done in results.items():
        said = one_error_line(done)
        assert f"{loop} is a symlink loop" in said and "no such folder" not in said, (name, said)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "notes.md"]
    # a loop among the files of an ingest too, before anything is written
    store = tmp_path / "s"
    make_store(store)
    done = run(["ingest", str(tmp_path / "notes.md"), loop, "--path", str(store)], tmp_path)
    assert f"{loop} is a symlink loop" in one_error_line(done)
    assert contents(store) == ["Maya likes green tea"] and contents(store, "default") == []


def test_a_link_to_nothing_is_named_as_such(tmp_path: Path) -> None:
    os.symlink(tmp_path / "gone", tmp_path / "link")
    for args in (["add", "x", "--namespace", "n", "--path", "link"], ["stats", "--path", "link"]):
        said = one_error_line(run(args, tmp_path))
        assert f"link is a symlink to {str(tmp_path / 'gone')!r}, which does not exist" in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]
