"""The documentation as users meet it: the site builds with warnings as errors, the README's quick
start and every Python block of docs/ marked runnable run as written, every `engramdb ...` line of
a shell block exits 0 against a prepared store, and the performance figures are bench/RESULTS.md's.

A Python block is marked runnable by an HTML comment on the line before it (invisible on the site):

    <!-- runnable -->
    ```python
    ...
    ```
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = ROOT / "bench" / "RESULTS.md"
RUNNABLE = "<!-- runnable -->"
SHELLS = ("sh", "bash", "shell", "console")
# the first word of lines a shell block may show but this test must not run (installs)
NOT_RUN = ("pip", "pip3", "python3 -m venv")
LANGGRAPH_PAGE = "docs/guides/langgraph.md"  # brief G's page, linked from the nav and the README
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def pages() -> list[Path]:
    """README.md and every page of docs/ (bench/RESULTS.md and RELIABILITY.md, linked into docs/
    for the site, are measurements, not pages with examples)."""
    return [README, *sorted(p for p in DOCS.rglob("*.md") if "bench" not in p.relative_to(DOCS).parts)]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def fences(path: Path) -> list[tuple[str, str, bool, int]]:
    """(language, body, runnable, line) of each fenced block of a page."""
    return parse_fences(path.read_text(encoding="utf-8"))


def parse_fences(text: str) -> list[tuple[str, str, bool, int]]:
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip().splitlines()
        runnable = bool(before) and before[-1].strip() == RUNNABLE
        lang = (m["info"].strip().split() or [""])[0]
        out.append((lang, m["body"], runnable, text.count("\n", 0, m.start()) + 1))
    return out


def python_blocks() -> list[object]:
    return [pytest.param(body, id=f"{rel(p)}:{line}")
            for p in pages() for lang, body, runnable, line in fences(p) if lang == "python" and runnable]


def command_lines(lang: str, body: str) -> list[str]:
    """The lines of a shell block a user would type: `$ `-prompted ones in a console block, else
    every line, backslash continuations joined; comments and installs left out."""
    lines, cur = [], ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if lang == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        line, cur = (cur + line).strip(), ""
        if line and not line.startswith("#") and not line.startswith(NOT_RUN):
            lines.append(line)
    return lines


def calls_engramdb(line: str) -> bool:
    return re.search(r"(^|[|;&(]\s*|\$\(\s*)engramdb(\s|$)", line) is not None


def shell_blocks() -> list[object]:
    out = []
    for p in pages():
        for lang, body, _, line in fences(p):
            if lang in SHELLS and any(calls_engramdb(c) for c in command_lines(lang, body)):
                out.append(pytest.param(lang, body, id=f"{rel(p)}:{line}"))
    return out


# ------------------------------------------------------------------------------------ (a) the site

def test_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[test]' brings it)")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (pip install '.[test]' brings it)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (pip install '.[test]' brings it)")
    if not (ROOT / LANGGRAPH_PAGE).exists():
        pytest.xfail(f"{LANGGRAPH_PAGE}, in mkdocs.yml's nav, is written by brief G (LangGraph): not landed")
    site = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(site)], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-5000:]
    # the API reference is generated from the docstrings: the verbs' own words are on the page
    reference = (site / "reference" / "store" / "index.html").read_text(encoding="utf-8")
    assert "add_messages" in reference and "Store chat messages" in reference


# ------------------------------------------------------------------------ (b) the Python examples

@functools.cache
def facade_landed() -> bool:
    """Whether `Store` has its facets (issue 27's facade, the lead's change): until it lands, the
    examples written against `db.topics.list`, `db.admin.backup`, ... cannot run."""
    import engramdb

    with engramdb.open() as db:
        return all(not callable(getattr(db, f, None)) and hasattr(db, f)
                   for f in ("topics", "importance", "lifecycle", "curiosity", "admin"))


def run_block(code: str, where: str) -> None:
    try:
        exec(compile(code, where, "exec"), {"__name__": "__docs__"})  # noqa: S102 - the docs' own example
    except (AttributeError, TypeError) as exc:
        if not facade_landed():
            pytest.xfail(f"written against the facade of issue 27 (db.admin, db.topics, ...), not landed: {exc}")
        raise


@pytest.mark.parametrize("code", python_blocks())
def test_runnable_python_block(code: str, request: pytest.FixtureRequest, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write ./memory and the like
    run_block(code, request.node.callspec.id)


def quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):]
    section = section[:section.index("\n## ", 1)]
    lang, body, runnable, _ = parse_fences(section)[0]
    assert lang == "python" and runnable, "the README's quick start is a runnable Python block"
    return body


def test_readme_quick_start_is_the_agent_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = quick_start()
    assert len(code.splitlines()) <= 22, "the quick start stays short"
    for verb in ("add_messages(", "context(", "feedback("):
        assert verb in code, f"the quick start shows {verb[:-1]}"
    monkeypatch.chdir(tmp_path)
    run_block(code, "README.md quick start")
    out = capsys.readouterr().out
    assert "vegetarian" in out and "Lisbon" in out, out  # the context block carries what was said
    assert (tmp_path / "memory" / "manifest.json").exists()
    import engramdb

    with engramdb.open(tmp_path / "memory", read_only=True) as db:  # the feedback was kept and rated
        hits = db.search("vegetarian", namespace="maya", k=1)
        assert hits[0].elo is not None and hits[0].elo > 1400, hits[0]


def block_with(page: Path, needle: str) -> str:
    return next(body for lang, body, runnable, _ in fences(page) if lang == "python" and runnable and needle in body)


def test_validity_example_says_what_it_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    run_block(block_with(DOCS / "guides" / "conversations.md", "supersede"), "conversations.md")
    now, past = capsys.readouterr().out.strip().split(" | ")
    assert now == "Maya runs a sourdough stall at the market"  # the superseded job is not current
    assert past == "Maya works at the bakery"  # but it was true on April 1st


def test_kernel_example_says_what_it_claims() -> None:
    import numpy as np

    scope: dict[str, object] = {}
    exec(compile(block_with(DOCS / "reference" / "kernels.md", "kernels.topk"), "kernels.md", "exec"), scope)  # noqa: S102
    idx, scores, x = scope["idx"], scope["scores"], scope["x"]
    assert isinstance(x, np.ndarray) and isinstance(idx, np.ndarray)
    exact = np.argsort(-(x @ x[0]))[:10]  # the last line: int8 shortlist rescored == exact float32
    assert set(idx.tolist()) == set(exact.tolist())
    np.testing.assert_allclose(scores, (x @ x[0])[idx], atol=1e-5)


# ---------------------------------------------------------------------------- (c) the command lines

@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a store at ./memory (and a copy at ./.engramdb, the default folder) with
    namespace "maya", as the examples assume."""
    import engramdb

    root = tmp_path_factory.mktemp("cli-examples")
    with engramdb.open(root / "memory") as db:
        db.add_messages([
            {"role": "user", "content": "I'm Maya. I moved to Lisbon in March and I'm vegetarian."},
            {"role": "assistant", "content": "Noted: Lisbon since March, and vegetarian."},
            {"role": "user", "content": "My sister Ana visits on the 12th; we met at the Lisbon book fair."},
            {"role": "user", "content": "The cache test was flaky because of a race in the warm-up."},
        ], namespace="maya", session_id="s1")
    shutil.copytree(root / "memory", root / ".engramdb")
    return root


@functools.cache
def subcommand_help(sub: str) -> str:
    run = subprocess.run([sys.executable, "-m", "engramdb", sub, "--help"], check=False, capture_output=True,
                         text=True, timeout=60)
    return run.stdout + run.stderr


CONVENTION = ("--path", "-p", "--json")  # brief H's one CLI convention: the store folder and JSON output


def missing_options(lines: list[str]) -> list[str]:
    """The convention's options (CONVENTION) a line uses that its subcommand's --help does not
    list: brief H not landed yet. Any other unknown option is a plain failure."""
    missing = []
    for line in lines:
        for m in re.finditer(r"(?:^|[|;&(]\s*)engramdb\s+([^|;&)]*)", line):
            words = shlex.split(m[1])
            if not words or words[0].startswith("-"):
                continue
            sub, opts = words[0], [w.split("=")[0] for w in words[1:] if w.split("=")[0] in CONVENTION]
            for opt in opts:
                if re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", subcommand_help(sub)) is None:
                    missing.append(f"engramdb {sub} {opt}")
    return missing


@pytest.mark.parametrize(("lang", "body"), shell_blocks())
def test_command_lines_run(lang: str, body: str, prepared: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(prepared, work)
    lines = command_lines(lang, body)
    script = "\n".join([
        "set -Eeuo pipefail",
        f'engramdb() {{ {shlex.quote(sys.executable)} -m engramdb "$@"; }}',
        "trap 'echo \"FAILED (exit $?): $BASH_COMMAND\" >&2' ERR",
        *lines,
    ])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
    env["ENGRAMDB_HOOK_BUDGET_MS"] = "60000"  # a loaded CI machine: a hook's answer, not its budget, is tested
    run = subprocess.run(["bash", "-c", script], check=False, cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=300, env=env)
    if run.returncode != 0:
        missing = missing_options(lines)
        if missing:
            pytest.xfail(f"the CLI convention of brief H is not landed: {', '.join(missing)}")
    assert run.returncode == 0, f"{run.stderr[-3000:]}\n--- stdout:\n{run.stdout[-2000:]}"


# ------------------------------------------------------------------------ (d) figures and the top

def figures(text: str) -> set[str]:
    """The measured numbers of a text: decimals (0.643, 31.8, 2.75x) and numbers with thousands
    separators (3,319)."""
    return set(re.findall(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\w.,])\d+\.\d+(?![\d.])", text))


def test_performance_figures_are_bench_results() -> None:
    results = RESULTS.read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    perf = readme[readme.index("## Performance"):]
    perf = perf[:perf.index("\n## ", 1)]
    cited = figures(perf) | figures((DOCS / "guides" / "performance.md").read_text(encoding="utf-8"))
    assert len(cited) > 20, cited  # the pages do quote figures
    stray = sorted(f for f in cited if re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", results) is None)
    assert not stray, f"figures not in bench/RESULTS.md: {stray}"


def test_readme_keeps_the_commands_ci_runs() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if "pytest" in line and line.startswith("python3 -m venv"))
    assert "    " + command in lines[:12], "the README's test command is .ci/run's, verbatim, at the top"
    demo = "    python3 -m venv .venv && . .venv/bin/activate && pip install . && engramdb demo"
    assert demo in lines[:12], "the demo command stays at the top"


def test_readme_is_short_and_its_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    missing = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t and not (ROOT / t).exists()]
    if missing == [LANGGRAPH_PAGE]:
        pytest.xfail(f"{LANGGRAPH_PAGE} is written by brief G (LangGraph): not landed")
    assert not missing, f"README links to files that do not exist: {missing}"
