"""The house: layers import one way (import-linter contracts in pyproject.toml), each layer loads
without the layers above it, no circular import, modules under 600 lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "engramdb"
MAX_LINES = 600


def layers() -> list[list[str]]:
    """The layers contract, top first: each layer's sibling modules."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [[m.strip() for m in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def test_lint_imports_keeps_every_contract() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    got = subprocess.run([exe, "--no-cache"], check=False, cwd=ROOT, capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "0 broken" in got.stdout and "layers import one way KEPT" in got.stdout


@pytest.mark.parametrize("level", range(len(layers())))
def test_each_layer_imports_without_the_layers_above(level: int) -> None:
    stack = layers()
    above = {m for layer in stack[:level] for m in layer}
    for module in stack[level]:
        if module == "__main__":  # `python -m engramdb`: importing it runs the CLI
            continue
        code = (f"import sys, json, engramdb.{module}; "
                "print(json.dumps(sorted(m for m in sys.modules if m.startswith('engramdb.'))))")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        loaded = {m.split(".")[1] for m in json.loads(got.stdout)}
        assert module in loaded
        assert not loaded & above, f"importing engramdb.{module} loaded {sorted(loaded & above)}"


def test_only_the_root_package_defers_imports_to_type_checking() -> None:
    """import-linter ignores TYPE_CHECKING imports (the root package's lazy names need that), so
    no other module may hide a dependency there. One exception, in the facade only: the groups of
    verbs composed into a `Store` (`db.topics`, `db.lifecycle`, ...) hold their store and name
    its type; that import, and nothing else, may sit under TYPE_CHECKING there (at run time the
    store imports them, never the other way). Another: a module a hook process imports on its way
    to the resident reader may name standard-library types there (typing, pathlib: each is 25-30
    ms of such a process, agents/resident_link.py); no engramdb module, so no layer is hidden."""
    found = []
    for p in PACKAGE.rglob("*.py"):
        text = p.read_text()
        if "TYPE_CHECKING" not in text or p == PACKAGE / "__init__.py":
            continue
        blocks = re.findall(r"^if TYPE_CHECKING:.*\n((?:    .*\n)+)", text, re.MULTILINE)
        facade_back_reference = p.parent.name == "store" and blocks and all(
            b.strip() == "from .facade import Store" for b in blocks)
        standard_library_only = blocks and all(
            re.fullmatch(r"(from [a-z_][a-z_.]* import [\w, ]+|import [a-z_][a-z_.]*)", line.strip())
            and not line.strip().split()[1].startswith("engramdb")
            for b in blocks for line in b.splitlines() if line.strip())
        if not (facade_back_reference or standard_library_only):
            found.append(p.relative_to(PACKAGE).as_posix())
    assert found == []


def test_modules_stay_under_600_lines() -> None:
    long = {p.relative_to(PACKAGE).as_posix(): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_layer_is_in_the_contract() -> None:
    """A new package or top-level module must take its place in the layers contract."""
    named = {m for layer in layers() for m in layer}
    present = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert present - named == set(), "add these to [tool.importlinter] layers in pyproject.toml"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every module an engramdb file imports, absolute: `from .. import x` counts as `pkg.x`
    (x may be a module), string imports through importlib too."""
    import ast

    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                arg = node.args[0].value
                found.add(package.split(".")[0] + arg if arg.startswith(".") else arg)
    return found


def test_only_kernels_reach_the_native_core() -> None:
    """`engramdb._core` is reached only through engramdb.kernels' checked wrappers (import-linter
    cannot see a compiled module, so this rule is read from the source)."""
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "kernels" not in p.relative_to(PACKAGE).parts]
    found = {p.relative_to(PACKAGE).as_posix(): sorted(m for m in _imported(p)
                                                       if m == "engramdb._core" or m.startswith("engramdb._core."))
             for p in outside}
    assert {k: v for k, v in found.items() if v} == {}


def test_only_storage_reaches_into_the_segments() -> None:
    """Outside storage/, what a row holds is read through the View's accessors (`id_at`,
    `column_at`, `vectors_at`, `namespace_mask`, ...), never by indexing its segments."""
    import ast

    found = []
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.relative_to(PACKAGE).parts[0] == "storage":
            continue
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "segments":
                found.append(f"{p.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    assert found == []


# storage's modules other layers call (everything else in storage/ reads or writes the folder's
# files itself and is forbidden outside storage/ by the contract below)
STORAGE_API = {"engine", "view", "segment", "columns", "vectors", "filters", "ids", "edge_log", "versions",
               "derived_files", "access_log", "curiosity_log", "spool", "folder", "set_aside", "backup", "verify",
               "repair", "rewrites", "transfer", "renumbering"}


def test_only_storage_touches_the_folders_files() -> None:
    """The contract names every top-level module but storage as a source (a new package cannot
    slip past it), and every storage module is either API or forbidden outside storage/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["name"] == "only storage touches the store folder's files")
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert sorted(m.removeprefix("engramdb.") for m in contract["source_modules"]) == sorted(top - {"storage"})
    forbidden = {m.removeprefix("engramdb.storage.") for m in contract["forbidden_modules"]}
    modules = {p.stem for p in (PACKAGE / "storage").glob("*.py") if p.stem != "__init__"}
    assert forbidden & STORAGE_API == set()
    assert modules - STORAGE_API == forbidden, "classify each storage module: API (STORAGE_API) or forbidden"


def test_no_two_modules_share_a_name() -> None:
    """A file name says what it holds, once: `lexical.py` three times, or `retrieval/graph.py`
    beside the `graph` package, made a reader open the wrong one. Packages count as names."""
    names: dict[str, list[str]] = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.name != "__init__.py" and "__pycache__" not in p.parts:
            names.setdefault(p.stem, []).append(p.relative_to(PACKAGE).as_posix())
    for p in sorted(PACKAGE.rglob("__init__.py")):
        if p.parent != PACKAGE:
            names.setdefault(p.parent.name, []).append(p.parent.relative_to(PACKAGE).as_posix() + "/")
    assert {n: where for n, where in names.items() if len(where) > 1} == {}
