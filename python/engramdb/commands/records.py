"""Commands on memories by id, for a support engineer and a privacy request: get, history, list
(read), forget, restore (soft, restorable) and purge (irreversible: asks for --yes)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from .common import CliError, Command, after_write, emit, held, json_option, note, store_option


def _row(m: Any) -> dict[str, Any]:
    return dataclasses.asdict(m)


def _line(m: Any) -> str:
    """One memory in one line of text: id, namespace, version, state, content."""
    state = " (forgotten)" if m.forgotten_at is not None else ""
    learned = m.learned_at.isoformat() if m.learned_at is not None else "-"
    return f"{m.id}  {m.namespace}  v{m.version}  learned {learned}{state}  {m.content}"


# ----------------------------------------------------------------------------- read
def _build_get(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("id", help="the memory's id")
    sp.add_argument("--forgotten", action="store_true", help="show it even when it is forgotten")


def _get(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=True) as db:
        m = db.get(args.id, include_forgotten=args.forgotten)
        if m is None:
            hidden = not args.forgotten and db.get(args.id, include_forgotten=True) is not None
            raise CliError(f"no memory with id {args.id!r}" + (" that is not forgotten (add --forgotten to show it)"
                                                                if hidden else ""))
    if args.json:
        emit(_row(m))
    else:
        print(_line(m))
    return 0


def _build_history(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("id", help="the memory's id")


def _history(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=True) as db:
        versions = db.history(args.id)
    if not versions:
        raise CliError(f"no memory with id {args.id!r}")
    if args.json:
        emit({"id": args.id, "versions": [_row(v) for v in versions]})
        return 0
    for v in versions:
        expired = f", expired {v.expired_at.isoformat()}" if v.expired_at is not None else ""
        print(_line(v) + expired)
    return 0


def _build_list(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("--namespace", required=True, help="the namespace to list")
    sp.add_argument("--limit", type=int, default=100, help="how many memories in a page (default 100)")
    sp.add_argument("--cursor", help="where to go on: the cursor the previous page printed")


def _list(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    if args.limit < 1:
        raise CliError(f"--limit must be 1 or more, got {args.limit}", 2)
    with open_store(args.path, read_only=True) as db:
        try:
            page = db.list(args.namespace, limit=args.limit, cursor=args.cursor)
        except ValueError as exc:
            raise CliError(f"--cursor {args.cursor!r}: {exc}" if args.cursor is not None else str(exc)) from None
        if args.json:
            emit({"namespace": args.namespace, "memories": [_row(m) for m in page], "next_cursor": page.next_cursor})
            return 0
        if not page:
            print(f"no memories to list in namespace {args.namespace} ({held(db, args.namespace)})")
            return 0
    for m in page:
        print(_line(m))
    if page.next_cursor is not None:
        print(f"next page: --cursor {page.next_cursor}")
    return 0


# ----------------------------------------------------------------------------- write
def _build_ids(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("ids", nargs="+", metavar="ID", help="the memories' ids")


def _open_writer(path: str, verb: str) -> Any:
    """The store opened for writing; another process holding its writer is said in the CLI's words."""
    from ..model import StoreLocked
    from ..store import open as open_store

    try:
        return open_store(path)
    except StoreLocked as exc:
        held_by = str(exc).split(";")[0] or f"{path} is open for writing by another process"  # without the API's advice
        raise CliError(f"cannot {verb}: {held_by}; nothing was changed: close the store there and run this again "
                       "(get, history and list work meanwhile)") from None


def _unknown(path: str, ids: list[str]) -> None:
    """Refuse, before anything is written, ids the store never held (every one named). Checked by a
    reader: taking the writer would already write its lock file."""
    from ..store import open as open_store

    with open_store(path, read_only=True) as db:
        missing = [i for i in dict.fromkeys(ids) if not db.history(i)]
        if missing:
            raise CliError(f"no memory with id {', '.join(repr(i) for i in missing)}: nothing was changed")


def _soft(args: argparse.Namespace, verb: str) -> int:
    ids = list(dict.fromkeys(args.ids))
    _unknown(args.path, ids)
    with _open_writer(args.path, verb) as db:
        # one already in the state asked for is left as it is (the verbs are idempotent)
        done = [db.forget(i) if verb == "forget" else db.restore(i) for i in ids]
    past = "forgot" if verb == "forget" else "restored"
    with after_write(verb, f"{past} {', '.join(ids)}"):
        if args.json:
            emit({"forgotten" if verb == "forget" else "restored": [_row(m) for m in done]})
        else:
            for m in done:
                print(f"{past} {m.id}")
    return 0


def _forget(args: argparse.Namespace) -> int:
    return _soft(args, "forget")


def _restore(args: argparse.Namespace) -> int:
    return _soft(args, "restore")


def _build_purge(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("ids", nargs="*", metavar="ID", help="the memories to delete, every version")
    sp.add_argument("--namespace", help="delete every memory of this namespace instead")
    sp.add_argument("--yes", action="store_true", help="do it (without it: say what would be removed, change nothing)")


def _purge(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    if bool(args.ids) == (args.namespace is not None):
        raise CliError("give either memory ids or --namespace N (one of the two)", 2)
    ids = list(dict.fromkeys(args.ids))
    # the dry run reads only: it never needs the writer, and writes nothing at all
    _unknown(args.path, ids)
    with (_open_writer(args.path, "purge") if args.yes else open_store(args.path, read_only=True)) as db:
        counts = _would_remove(db, ids, args.namespace)
        if not args.yes:
            _say_dry_run(args, counts)
            raise CliError("purge deletes for good: nothing was changed; add --yes to purge", 2)
        removed = db.purge(ids) if args.namespace is None else db.purge(namespace=args.namespace)
    with after_write("purge", f"purged {_count(removed, 'version')}"):
        if args.json:
            emit({"purged_versions": removed, "namespaces": counts})
        else:
            print(f"purged {_count(removed, 'version')}")
    note("purge", "backups and exports made before this purge still hold the data: delete or re-make them")
    return 0


def _would_remove(db: Any, ids: list[str], namespace: str | None) -> dict[str, dict[str, int]]:
    """Per namespace, the memories (and, for ids, the versions) a purge would remove."""
    if namespace is not None:
        return {namespace: {"memories": int(db.stats()["namespaces"].get(namespace, 0))}}
    counts: dict[str, dict[str, int]] = {}
    for i in ids:
        versions = db.history(i)
        c = counts.setdefault(versions[-1].namespace, {"memories": 0, "versions": 0})
        c["memories"] += 1
        c["versions"] += len(versions)
    return counts


def _say_dry_run(args: argparse.Namespace, counts: dict[str, dict[str, int]]) -> None:
    if args.json:
        emit({"purged_versions": 0, "would_remove": counts})
        return
    for ns, c in counts.items():
        versions = f", {_count(c['versions'], 'version')}" if "versions" in c else ", every version"
        print(f"would remove from namespace {ns}: {_count(c['memories'], 'memory', 'memories')}{versions}")
    sys.stdout.flush()


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


COMMANDS = [
    Command("get", "show one memory by id (--forgotten: also a forgotten one)", _build_get, _get),
    Command("history", "every stored version of one memory, oldest first", _build_history, _history),
    Command("list", "a namespace's memories a page at a time (--cursor goes on)", _build_list, _list),
    Command("forget", "hide memories (soft: restorable); every id is checked first", _build_ids, _forget),
    Command("restore", "bring forgotten memories back", _build_ids, _restore),
    Command("purge", "delete memories or a namespace for good (a privacy request); asks for --yes",
            _build_purge, _purge),
]
