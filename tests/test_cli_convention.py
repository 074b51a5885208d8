"""The command line's one convention (issue 27), through `python -m engramdb` as a user runs it:
the store folder is --path/-p, else $ENGRAMDB_PATH, else ./.engramdb (the hooks' folder); --json
prints one JSON document; the old positional folders still work and say "use --path"; nothing to
show is said; an error is one line and a nonzero exit, never a traceback, and a read verb creates
no folder; --help is grouped and in plain words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import engramdb
import pytest

VIOLIN = [f"Maya has violin lessons on day {i} with her teacher" for i in range(6)]
Check = Callable[[Any], bool]


def run(args: Sequence[str], cwd: Path, env_path: str | None = None, stdin: str | None = None,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
    if env_path is not None:
        env["ENGRAMDB_PATH"] = env_path
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "engramdb", *args], cwd=cwd, env=env, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, check=False)


def run_all(jobs: Sequence[tuple[Sequence[str], Path, str | None]]) -> list[subprocess.CompletedProcess[str]]:
    """Independent runs side by side (most of a run's time is the interpreter starting)."""
    with ThreadPoolExecutor(6) as pool:
        return list(pool.map(lambda job: run(*job), jobs))


def document(done: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a --json run printed (and nothing else on stdout)."""
    assert done.returncode == 0, (done.args, done.stderr)
    assert len(done.stdout.strip().splitlines()) == 1, done.stdout
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "store"
    with engramdb.open(path) as db:
        db.add_many([{"content": t, "namespace": "n"} for t in VIOLIN]
                    + [{"content": "Sam likes green tea", "namespace": "one"}])
    return path


def memories_in(path: Path, namespace: str) -> list[str]:
    with engramdb.open(path, read_only=True) as db:
        return [m.content for m in db.list(namespace)]


# ------------------------------------------------------------------------------ the folder rule
READERS: dict[str, tuple[list[str], Check]] = {
    "search": (["search", "violin lessons", "--namespace", "n", "--json"],
               lambda d: d["namespace"] == "n" and len(d["hits"]) == 6
               and {"id", "score", "content", "via", "passage", "archived"} <= d["hits"][0].keys()),
    "search --stats": (["search", "violin", "--namespace", "n", "--stats", "--json"],
                       lambda d: d["hits"] and d["stats"]["namespace"] == "n"),
    "context": (["context", "violin lessons", "--namespace", "n", "--json"],
                lambda d: "violin" in d["text"] and d["items"] and d["stats"]["budget"] == 1000),
    "stats": (["stats", "--json"], lambda d: d["memories"] == 7 and d["namespaces"] == {"n": 6, "one": 1}
              and "activity" in d["usage"]),
    "topics": (["topics", "--namespace", "n", "--json"],
               lambda d: d["namespace"] == "n" and isinstance(d["topics"], list) and "churn" in d),
    "themes": (["topics", "--namespace", "n", "--themes", "--json"],
               lambda d: d["namespace"] == "n" and isinstance(d["themes"], list)),
    "metrics": (["metrics", "--json"],
                lambda d: {"name": "engramdb_memories", "labels": {"namespace": "n"}, "value": 6} in d["metrics"]),
    "consolidate": (["consolidate", "--json"],
                    lambda d: d["dry_run"] is True and len(d["decisions"]) == 7 and d["summary"].startswith("dry run")),
    "verify": (["verify", "--json"], lambda d: d["ok"] is True and "manifest.json" in d["files"]),
}
WRITERS: dict[str, tuple[list[str], Check]] = {  # each takes the writer's lock
    "index": (["index", "--json"], lambda d: d["kind"] == "tree" and d["namespaces"] == {}),
    "infer-edges": (["infer-edges", "--namespace", "n", "--json"],
                    lambda d: d["memories"] == 6 and isinstance(d["stored"], list) and "summary" in d),
    "archive": (["archive", "--older-than", "2000-01-01T00:00:00+00:00", "--json"],
                lambda d: d["memories"] == 0 and d["file"] is None),
    "repair": (["repair", "--dry-run", "--json"], lambda d: d["ok"] is True and d["needed"] is False),
}


def test_every_store_command_finds_its_folder_by_path_and_the_env_var(store: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    cwd = tmp_path / "elsewhere"  # holds no store: the folder comes from the option or the variable
    jobs: list[tuple[Sequence[str], Path, str | None]] = []
    checks: list[tuple[str, Check]] = []
    def where(way: str, folder: Path) -> tuple[list[str], str | None]:
        # --path for the readers, -p for the rest: the same option
        return ([] if way == "env" else ["--path" if folder == store else "-p", str(folder)],
                str(folder) if way == "env" else None)

    for way in ("option", "env"):
        for name, (args, check) in READERS.items():
            opt, env = where(way, store)
            jobs.append(([*args, *opt], cwd, env))
            checks.append((f"{way} {name}", check))
        for name, (args, check) in WRITERS.items():  # each on a copy of its own: a writer at a time each
            opt, env = where(way, tmp_path / f"{way}-{name}")
            engramdb.backup(store, tmp_path / f"{way}-{name}")
            jobs.append(([*args, *opt], cwd, env))
            checks.append((f"{way} {name}", check))
        opt, env = where(way, store)
        jobs.append((["export", str(tmp_path / f"out-{way}.jsonl"), "--json", *opt], cwd, env))
        checks.append((f"{way} export", lambda d: d["memories"] == 7))
        jobs.append((["backup", str(tmp_path / f"copy-{way}"), "--json", *opt], cwd, env))
        checks.append((f"{way} backup", lambda d: d["committed_rows"] >= 7 and d["files"] >= 1))
    for (name, check), done in zip(checks, run_all(jobs)):
        assert check(document(done)), (name, done.stdout)
    assert sorted(p.name for p in cwd.iterdir()) == []  # no ./memory, no ./.engramdb
    assert memories_in(tmp_path / "copy-env", "one") == ["Sam likes green tea"]


def test_add_ingest_and_mcp_make_the_store_the_rule_names(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "notes.md").write_text("# Garden\nThe tomatoes need water every evening in July.\n")
    ways: list[tuple[list[str], str | None]] = [(["-p", str(tmp_path / "by-p")], None), ([], str(tmp_path / "by-env"))]
    for done in run_all([(["add", "Biscuit sleeps in boxes", "--namespace", "n", "--type", "fact", "--json", *opt],
                          cwd, env) for opt, env in ways]):
        added = document(done)
        assert added["content"] == "Biscuit sleeps in boxes" and added["namespace"] == "n" and added["id"]
        assert added["memory_type"] == "fact" and added["version"] == 1
    for done in run_all([(["ingest", "notes.md", "--namespace", "docs", "--json", *opt], cwd, env)
                         for opt, env in ways]):
        ingested = document(done)
        assert ingested["namespace"] == "docs" and ingested["files"][0]["added"] == 1
    for folder in (tmp_path / "by-p", tmp_path / "by-env"):
        assert memories_in(folder, "n") == ["Biscuit sleeps in boxes"] and len(memories_in(folder, "docs")) == 1
    for done in run_all([(["mcp", *opt], cwd, env) for opt, env in ways]):  # stdin closed: opens the store, ends
        assert done.returncode == 0 and done.stdout == "", done.stderr
    assert sorted(p.name for p in cwd.iterdir()) == ["notes.md"]  # no ./memory, no ./.engramdb


def test_the_default_folder_is_the_hooks_dot_engramdb(tmp_path: Path) -> None:
    project = tmp_path / "garden"
    project.mkdir()
    assert run(["add", "The tomatoes need water every evening", "--namespace", "garden"], project).returncode == 0
    assert memories_in(project / ".engramdb", "garden") == ["The tomatoes need water every evening"]
    found = document(run(["search", "tomatoes water", "--namespace", "garden", "--json"], project))
    assert [h["content"] for h in found["hits"]] == ["The tomatoes need water every evening"]
    # the agent's hook in the same project, with neither --path nor $ENGRAMDB_PATH, reads the same store
    prompt = json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                         "prompt": "when do the tomatoes need water?"})
    # a long budget: the folder it reads is tested, not its 2 s (1.3-1.7 s of which its own process
    # took with two busy loops here, the quick answer due at 1.5 s); and no resident reader started,
    # which outlived the test (it answers the first hook in its own process either way)
    hooked = run(["hook", "UserPromptSubmit"], project, stdin=prompt,
                 extra_env={"ENGRAMDB_HOOK_BUDGET_MS": "120000", "ENGRAMDB_HOOK_RESIDENT": "0"})
    assert "The tomatoes need water every evening" in hooked.stdout, hooked.stderr
    assert not (project / "memory").exists()


def test_a_store_in_the_old_default_folder_gets_a_hint(tmp_path: Path) -> None:
    old = tmp_path / "old"
    with engramdb.open(old / "memory") as db:
        db.add("kept in ./memory", namespace="n")
    done = run(["stats"], old)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "./memory holds a store" in done.stderr and "--path memory" in done.stderr
    assert ".engramdb is not a store" in done.stderr and not (old / ".engramdb").exists()
    assert "kept in ./memory" in document(run(["search", "kept", "--namespace", "n", "--json", "-p", "memory"],
                                              old))["hits"][0]["content"]


# ------------------------------------------------------------------------------ the old forms
def test_the_old_positional_forms_still_work_and_say_use_path(store: Path, tmp_path: Path) -> None:
    s = str(store)
    doc = tmp_path / "notes.md"
    doc.write_text("The tomatoes need water every evening in July.\n")
    ingest_into = str(tmp_path / "ingested")  # `ingest FOLDER FILE`: the old form names an existing store
    engramdb.open(ingest_into).close()
    old: dict[str, tuple[list[str], Check]] = {
        "stats": (["stats", s, "--json"], lambda d: d["memories"] == 7),
        "topics": (["topics", s, "--namespace", "n", "--json"], lambda d: d["namespace"] == "n"),
        "metrics": (["metrics", s, "--json"], lambda d: len(d["metrics"]) > 5),
        "consolidate": (["consolidate", s, "--json"], lambda d: d["dry_run"] is True),
        "verify": (["verify", s, "--json"], lambda d: d["ok"] is True),
        "context": (["context", s, "violin lessons", "--namespace", "n", "--json"], lambda d: "violin" in d["text"]),
        # argparse leaves a positional after an option over: the old form still meant the query
        "context, the query last": (["context", s, "--namespace", "n", "violin lessons", "--json"],
                                    lambda d: "violin" in d["text"]),
        "backup": (["backup", s, str(tmp_path / "copy"), "--json"], lambda d: d["committed_rows"] >= 7),
    }
    names = list(old)
    results = run_all([(args, tmp_path, None) for args, _ in old.values()]
                      + [(["ingest", ingest_into, str(doc), "--namespace", "d", "--json"], tmp_path, None),
                         (["mcp", str(tmp_path / "served")], tmp_path, None)])
    for name, done in zip(names, results):
        assert old[name][1](document(done)), (name, done.stdout)
        assert f"deprecated and goes in the next release: use --path {s}" in done.stderr, (name, done.stderr)
    ingested, served = results[len(names):]
    assert document(ingested)["files"][0]["added"] == 1 and f"use --path {ingest_into}" in ingested.stderr
    assert memories_in(Path(ingest_into), "d") == ["The tomatoes need water every evening in July."]
    assert served.returncode == 0 and f"use --path {tmp_path / 'served'}" in served.stderr
    twice = run(["stats", s, "--path", str(tmp_path)], tmp_path)
    assert twice.returncode == 2 and "given twice" in twice.stderr and "Traceback" not in twice.stderr


# ------------------------------------------------------------------------------ nothing to show
def test_nothing_to_show_is_said(store: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    engramdb.open(empty).close()
    p = ["-p", str(store)]
    runs = run_all([(["topics", "--namespace", "one", "--themes", *p], tmp_path, None),
                    (["topics", "--namespace", "nobody", "--themes", *p], tmp_path, None),
                    (["topics", "--namespace", "one", *p], tmp_path, None),
                    (["search", "violin", "--namespace", "nobody", *p], tmp_path, None),
                    (["context", "violin", "--namespace", "nobody", *p], tmp_path, None),
                    (["stats", "-p", str(empty)], tmp_path, None)])
    themes_one, themes_nobody, topics_one, search, context, stats = runs
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert themes_one.stdout == "no themes in namespace one (1 memory)\n"
    assert themes_nobody.stdout == "no themes in namespace nobody (0 memories)\n"
    assert topics_one.stdout == "no topics in namespace one (1 memory)\n"
    assert search.stdout == "no memory of namespace nobody matches 'violin' (0 memories)\n"
    assert context.stdout == "" and "nothing to show: no memory of namespace nobody matches" in context.stderr
    assert stats.stdout == f"{empty}: an empty store (no memories yet)\n"
    archived = run(["archive", "--older-than", "2000-01-01T00:00:00+00:00", *p], tmp_path)
    assert archived.stdout.startswith("nothing to archive: no current memory was learned before 2000-01-01")


# ------------------------------------------------------------------------------ errors
def test_a_missing_store_is_named_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    p = ["-p", str(missing)]
    verbs = [["search", "q", "--namespace", "n"], ["context", "q", "--namespace", "n"], ["stats"],
             ["topics", "--namespace", "n"], ["metrics"], ["consolidate"], ["consolidate", "--apply"], ["index"],
             ["infer-edges", "--namespace", "n"], ["archive", "--older-than", "2000-01-01T00:00:00+00:00"],
             ["export", str(tmp_path / "out.jsonl")], ["backup", str(tmp_path / "copy")], ["verify"], ["repair"]]
    for verb, done in zip(verbs, run_all([([*v, *p, "--json"], tmp_path, None) for v in verbs])):
        assert done.returncode == 1 and done.stdout == "", (verb, done.stdout)
        assert done.stderr == f"engramdb {verb[0]}: {missing} is not a store: there is no such folder (nothing was " \
                              "created)\n", (verb, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_errors_are_one_line_without_a_traceback(store: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a store")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "photo.jpg").write_text("someone else's folder")
    s = ["-p", str(store)]
    cases: list[tuple[list[str], int, str]] = [
        (["ingest", "no-such-notes.md", "-p", str(tmp_path / "new")], 1,
         "no-such-notes.md is not a file to ingest: no such file"),
        (["ingest", str(tmp_path), "-p", str(tmp_path / "new")], 1, "is not a file to ingest: it is a folder"),
        (["stats", "-p", str(tmp_path / "a-file")], 1, "is not a store: it is a file, not a folder"),
        (["stats", "-p", str(tmp_path / "other")], 1, "is not a store: the folder holds other files"),
        (["search", "q", "--namespace", "n", "--as-of", "yesterday", *s], 1, "--as-of 'yesterday' is not an ISO-8601 time"),
        (["search", "q", "--namespace", "n", "--as-of", "2025-01-01T00:00:00", *s], 1, "--as-of '2025-01-01T00:00:00' has no UTC offset"),
        (["search", "q", "--namespace", "n", "--weight", "bm25", *s], 1, "--weight must be NAME=NUMBER"),
        (["context", "q", "--namespace", "n", "--max-tokens", "10", *s], 1, "max_tokens must be an int >= 50"),
        (["export", str(tmp_path), *s], 1, "engramdb export: "),
        (["backup", str(tmp_path / "other"), *s], 1, "engramdb backup: "),
        (["demo", "--kernels", "--rows", "10"], 2, "--rows must be >= 1000"),
        (["context", "violin", "lessons", "--namespace", "n", *s], 2,
         "one QUERY is expected, got 'violin' and 'lessons' (quote words that go together)"),
    ]
    for (args, code, said), done in zip(cases, run_all([(c[0], tmp_path, None) for c in cases])):
        assert done.returncode == code and said in done.stderr, (args, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
    assert not (tmp_path / "new").exists() and [p.name for p in (tmp_path / "other").iterdir()] == ["photo.jpg"]


# ------------------------------------------------------------------------------ help
COMMANDS = ["demo", "add", "ingest", "search", "context", "stats", "topics", "metrics", "get", "history", "list",
            "forget", "restore", "purge", "consolidate", "index",
            "infer-edges", "archive", "export", "backup", "verify", "repair", "mcp", "hook", "capabilities"]
FEATURE_CODE = re.compile(r"\b[A-Z]\d{1,2}\b")  # the spec's ids (C4, H8, E9): not words a user knows


def test_help_lists_the_commands_by_group_in_plain_words(tmp_path: Path) -> None:
    top = run(["--help"], tmp_path)
    assert top.returncode == 0 and not FEATURE_CODE.search(top.stdout), FEATURE_CODE.findall(top.stdout)
    listing = top.stdout[top.stdout.index("commands:"):]
    groups = re.findall(r"^  (\S[^:\n]*):$", listing, re.MULTILINE)
    assert len(groups) >= 5, listing
    listed = re.findall(r"^    ([a-z-]+)  +\S", listing, re.MULTILINE)
    assert listed == COMMANDS  # each once, with its help line, under a group
    assert "--path/-p" in top.stdout and "$ENGRAMDB_PATH" in top.stdout and "./.engramdb" in top.stdout
    for name, done in zip(COMMANDS, run_all([([c, "--help"], tmp_path, None) for c in COMMANDS])):
        assert done.returncode == 0 and not FEATURE_CODE.search(done.stdout), (name, FEATURE_CODE.findall(done.stdout))
        if name != "capabilities":
            assert "-p FOLDER, --path FOLDER" in done.stdout, name
        if name not in ("demo", "mcp", "hook"):
            assert "--json" in done.stdout, name
