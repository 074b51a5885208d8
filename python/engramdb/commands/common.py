"""What every command shares: the store folder rule, the old positional forms, output and errors.

The store folder of every command is `--path/-p`, else $ENGRAMDB_PATH, else `./.engramdb`: the
folder the coding-agent hooks use (`agents/hook_events.py` `store_path`), so a user's command line
and their agent's hooks meet the same store. `engramdb demo` alone keeps a folder of its own.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from ..agents.hook_events import STORE_FOLDER
from ..model import checks

ENV_PATH = "ENGRAMDB_PATH"
OLD_DEFAULT = "memory"  # the default folder before issue 27: a store there gets a hint, never used by itself
DEMO_FOLDER = "engramdb-demo"

# how a command finds its folder: "existing" a store that must be there (read verbs and in-place
# upkeep: a missing folder is never created), "folder" a folder that must be there (verify, repair:
# they look at a store whose manifest may be lost), "create" a store made when missing (add, ingest,
# mcp), "hook" the hooks' own rule (the session's folder), "demo" ./engramdb-demo, "none" no store
Folder = Literal["existing", "folder", "create", "hook", "demo", "none"]


class CliError(Exception):
    """A one-line message for stderr and the exit code (1: the command failed, 2: it was misused)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its help line in plain words, how its options are declared, what
    it runs, how it finds its store folder, and its old positional store folder (deprecated)."""

    name: str
    summary: str
    build: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    folder: Folder = "existing"
    # the store folder an old form named by position (removed from args), or None: one release more
    legacy: Callable[[argparse.Namespace], str | None] | None = None
    # stray words argparse could not place (a positional after an option): taken back, or False
    extras: Callable[[argparse.Namespace, list[str]], bool] | None = None


class Once(argparse.Action):
    """An option given at most once: `--path A --path B` is refused as given twice (argparse would
    keep B silently, and `consolidate --apply` or `repair` would then run on the other store)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None and before != values:
            parser.error(f"{'/'.join(self.option_strings)} is given twice ({before!r} and {values!r}): give it once")
        setattr(namespace, self.dest, values)


def store_option(sp: argparse.ArgumentParser) -> None:
    """`--path/-p`: the store folder (the rule in the module docstring)."""
    sp.add_argument("-p", "--path", default=None, metavar="FOLDER", action=Once,
                    help=f"the store folder (default: ${ENV_PATH}, else ./{STORE_FOLDER})")


def json_option(sp: argparse.ArgumentParser) -> None:
    """`--json`: one JSON document on stdout instead of text."""
    sp.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def old_folder_argument(sp: argparse.ArgumentParser) -> None:
    """The store folder as an optional first positional: the old form, kept one release."""
    sp.add_argument("folder", nargs="?", default=None, help=argparse.SUPPRESS)


def take_old_folder(args: argparse.Namespace) -> str | None:
    """`legacy` of a command whose only positional is the old store folder."""
    folder: str | None = args.folder
    args.folder = None
    return folder


def first_of_two(target: str) -> Callable[[argparse.Namespace], str | None]:
    """`legacy` of a command with one positional (`target`) that once came after the store folder:
    given two, the first is the folder (`context FOLDER QUERY`, `backup SRC DEST`)."""

    def legacy(args: argparse.Namespace) -> str | None:
        if args.second is None:
            setattr(args, target, args.first)
            return None
        if args.path is not None:  # not the old form: two words where one was meant
            raise CliError(f"one {target.upper()} is expected, got {args.first!r} and {args.second!r} (quote "
                           "words that go together)", 2)
        setattr(args, target, args.second)
        folder: str = args.first
        return folder

    return legacy


def second_from_extras(args: argparse.Namespace, extras: list[str]) -> bool:
    """`extras` of a first_of_two command: `context FOLDER --namespace N QUERY` leaves QUERY over."""
    if args.second is None and len(extras) == 1 and not extras[0].startswith("-"):
        args.second = extras[0]
        return True
    return False


def resolve_folder(args: argparse.Namespace, command: Command) -> None:
    """Set `args.path` by the one rule (a store folder named twice, or blank, is an error); say on
    stderr when an old form named it, when $ENGRAMDB_PATH is blank, and when ./memory holds a store
    the new default passes by. A folder that is a symlink loop is refused by name."""
    old = command.legacy(args) if command.legacy is not None else None
    if command.folder == "none":
        return
    if old is not None:
        blank(old, "the store folder")
        if args.path is not None and args.path != old:
            raise CliError(f"the store folder is given twice ({old!r} and --path {args.path!r}): give --path only", 2)
        note(command.name, f"the store folder as a positional argument is deprecated and goes in the next "
                           f"release: use --path {old}")
        args.path = old
    if command.folder == "hook":
        return  # None: the hooks apply the same rule from the session's folder (and never refuse: exit 0)
    if args.path is not None:
        blank(args.path, "--path")
    if command.folder == "demo":
        args.path = args.path or DEMO_FOLDER
    elif args.path is None:
        args.path = env_path(command.name) or STORE_FOLDER
        if args.path == STORE_FOLDER and is_store(OLD_DEFAULT) and not is_store(STORE_FOLDER):
            note(command.name, f"./{OLD_DEFAULT} holds a store, but the default store folder is now "
                               f"./{STORE_FOLDER}: give --path {OLD_DEFAULT} (or set {ENV_PATH}={OLD_DEFAULT}) to use it")
    links(args.path)
    if command.folder in ("existing", "folder"):
        require_store(args.path, command.folder == "folder")


def blank(path: str, given_as: str) -> None:
    """Refuse a store folder that is only spaces: it would make a folder most listings hide."""
    if not path.strip():
        raise CliError(f"{given_as} {path!r} is blank: give a store folder (or leave it out: ${ENV_PATH}, else "
                       f"./{STORE_FOLDER})", 2)


def env_path(command: str | None = None) -> str | None:
    """$ENGRAMDB_PATH, or None when unset, empty or blank. A blank value is treated as unset, as an
    empty one always was (and as the hooks' `store_path` does): it is what a template or an .env
    line leaves when its variable is missing, which is no folder anyone meant; said on stderr."""
    value = os.environ.get(ENV_PATH)
    if not value:
        return None
    if not value.strip():
        if command is not None:
            note(command, f"${ENV_PATH} is blank ({value!r}): treated as unset, so the store folder is ./{STORE_FOLDER}")
        return None
    return value


def links(path: str | Path) -> None:
    """Refuse, by name, a path that is a symlink loop or a link to nothing (a raw Errno otherwise,
    or a wrong "no such folder": the link is there)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CliError(f"{path} is a symlink loop (a link that leads back to itself): nothing was done") from None
        if os.path.islink(path):
            raise CliError(f"{path} is a symlink to {os.readlink(path)!r}, which does not exist: nothing was done "
                           "(make its target, or give the folder itself)") from None


@contextmanager
def after_write(command: str, done: str) -> Iterator[None]:
    """Around printing the report of a write that happened: if stdout cannot take it (a full disk,
    a closed descriptor), say on stderr what was written (`done`) before failing as the output did,
    so the id is not lost."""
    try:
        yield
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError:
        note(command, f"{done}, but its output could not be written")
        raise


def os_message(exc: OSError) -> str:
    """An OSError in words, without the raw "[Errno N]" (a symlink loop named as one)."""
    where = exc.filename if exc.filename is not None else None
    if exc.errno == errno.ELOOP and where is not None:
        return f"{where} is a symlink loop (a link that leads back to itself)"
    if exc.strerror:
        return f"{where}: {exc.strerror}" if where is not None else exc.strerror
    return str(exc) or type(exc).__name__


def is_store(folder: str | Path) -> bool:
    """True when `folder` holds a store (or a store whose manifest is lost)."""
    from ..storage.folder import MANIFEST, MARKER

    p = Path(folder)
    return (p / MANIFEST).is_file() or (p / MARKER).is_file()


def require_store(path: str, any_folder: bool) -> None:
    """Refuse, creating nothing, a folder that holds no store (`any_folder`: any folder will do)."""
    p = Path(path)
    how = "" if env_path() or path != STORE_FOLDER else f" (give --path FOLDER or set {ENV_PATH})"
    if not p.exists():
        raise CliError(f"{path} is not a store: there is no such folder (nothing was created){how}")
    if not p.is_dir():
        raise CliError(f"{path} is not a store: it is a file, not a folder")
    if any_folder or is_store(p):
        return
    if not any(p.iterdir()):
        raise CliError(f"{path} is not a store: the folder is empty (nothing was created){how}")
    from ..model.errors import StoreError
    from ..storage.folder import MANIFEST, classify

    try:
        classify(p)  # "new" for a store being made this moment: open decides
    except StoreError:
        raise CliError(f"{path} is not a store: the folder holds other files and no {MANIFEST} "
                       f"(nothing was changed){how}") from None


def note(command: str, message: str) -> None:
    """One line on stderr, named after the command."""
    print(f"engramdb {command}: {message}", file=sys.stderr)


def emit(document: Any) -> None:
    """The command's one JSON document on stdout."""
    print(json.dumps(document, default=plain))


def plain(value: Any) -> Any:
    """JSON for what json does not know: times as ISO text, dataclasses as dicts, sets as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def time_option(value: str | None, name: str) -> datetime | None:
    """An ISO time option, or None; a malformed one names itself."""
    if value is None:
        return None
    try:  # said for a shell, not as Python's datetime advice
        return checks.iso_time(name, value)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def held(db: Any, namespace: str) -> str:
    """How many current memories `namespace` holds, in words (for the "nothing to show" lines)."""
    n = int(db.stats()["namespaces"].get(namespace, 0))
    return "1 memory" if n == 1 else f"{n:,} memories"


def one_line(text: str) -> str:
    """`text` on one line (an error message for stderr): each line break, with the spaces around
    it, becomes one space; other runs of spaces stay (a value they are part of is shown as it is)."""
    return _BREAK.sub(" ", text).strip()


_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
