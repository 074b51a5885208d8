"""Commands that keep a store's data safe: export, backup, verify, repair."""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from typing import Any

from .common import (
    Command,
    after_write,
    emit,
    first_of_two,
    json_option,
    old_folder_argument,
    second_from_extras,
    store_option,
    take_old_folder,
)


def _build_export(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("out", help="the file to write: .jsonl or .arrow")
    sp.add_argument("--namespace", help="only this namespace (default: all)")


def _export(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=True) as db:
        n = db.admin.export(args.out, namespace=args.namespace)
    if args.json:
        emit({"memories": n, "out": args.out})
    else:
        print(f"wrote {n} memories to {args.out}")
    return 0


def _build_backup(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("first", metavar="DEST", help="the copy's folder: new or empty")
    sp.add_argument("second", nargs="?", default=None, help=argparse.SUPPRESS)  # `backup SRC DEST`


def _backup(args: argparse.Namespace) -> int:
    from ..store import backup

    done = backup(args.path, args.dest)
    with after_write("backup", f"copied {args.path} to {done['path']}"):
        _say_backup(args, done)
    return 0


def _say_backup(args: argparse.Namespace, done: dict[str, Any]) -> None:
    if args.json:
        emit(done)
        return
    print(f"copied {args.path} to {done['path']}: {done['files']} files, {done['bytes']:,} bytes, "
          f"{done['committed_rows']} committed rows, {done['wal_frames']} logged writes; open the copy to restore")
    for name in done.get("damaged_logs_left_out") or ():
        print(f"left out, damaged: {name}")


def _build_verify(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    json_option(sp)


def _verify(args: argparse.Namespace) -> int:
    from ..store import verify

    checked = verify(args.path)
    if args.json:
        emit(checked)
        return 0 if checked["ok"] else 1
    files: dict[str, str] = checked.get("files", {})
    bad = {n: why for n, why in files.items() if not why.startswith("ok")}
    for name, why in bad.items():
        print(f"damaged: {name}: {why}")
    for name, why in checked.get("derived", {}).items():
        if not why.startswith("ok"):
            print(f"index file to rebuild (when next needed): {name}: {why}")
    folder = checked.get("folder", "ok")
    if folder != "ok":
        print(f"folder: {folder}")
    print(f"{args.path}: " + (f"ok, {len(files)} files checked" if checked["ok"] else
                              f"DAMAGED: {len(bad)} of {len(files)} files"))
    return 0 if checked["ok"] else 1


def _build_repair(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("--dry-run", action="store_true", help="say what would be done, write nothing")
    sp.add_argument("--accept-loss", action="store_true",
                    help="rebuild from the intact files even when damaged ones are left out (never deleted)")


def _repair(args: argparse.Namespace) -> int:
    from ..store import repair

    done = repair(args.path, accept_loss=args.accept_loss, dry_run=args.dry_run)
    wrote = done.get("needed") and not args.dry_run
    with after_write("repair", f"repaired {args.path} (ok: {done['ok']})") if wrote else nullcontext():
        if args.json:
            emit(done)
        elif not done.get("needed"):
            print(f"{args.path}: {done.get('note', 'nothing to repair')}")
        else:
            _say_repair(args.path, done, args.dry_run)
    # 0 when the store is whole again: nothing lost, or a loss the caller accepted and the manifest written
    return 0 if done["ok"] or done.get("written") else 1


def _say_repair(path: str, done: dict[str, Any], dry_run: bool) -> None:
    print(f"{path} needs a repair: {done.get('why')}")
    verb = "would rebuild" if dry_run else "rebuilt"
    print(f"{verb} manifest.json from {len(done['segments'])} segments, {len(done['edges'])} edge files, "
          f"{len(done['archives'])} archives and the log {done['wal']}")
    for key, what in (("superseded", "replaced by a sound file, left in place"), ("damaged", "damaged"),
                      ("unfinished", "unfinished write, left out"), ("foreign", "another store's file, left alone"),
                      ("torn", "a log a crash cut short as it was made (empty), left out")):
        for name in done.get(key) or ():
            print(f"{what}: {name}")
    lost = "lost (--accept-loss)" if done.get("written") else "would lose data"
    for why in done.get("blockers") or ():
        print(f"{lost}: {why}")


COMMANDS = [
    Command("export", "write memories to a .jsonl or .arrow file", _build_export, _export),
    Command("backup", "copy a store, every version, link and archive, even while it is written; open the copy "
                      "to restore", _build_backup, _backup, legacy=first_of_two("dest"), extras=second_from_extras),
    Command("verify", "check every file of a store; exit 1 when one is damaged", _build_verify, _verify,
            folder="folder", legacy=take_old_folder),
    Command("repair", "rebuild a store's lost or damaged manifest from its own files; changes nothing when "
                      "that would lose data", _build_repair, _repair, folder="folder"),
]
