"""The `engramdb` command line's entry point (`engramdb --help` lists every command by group; the
commands themselves are in `engramdb.commands`, one module per group).

One convention for every command: the store folder is `--path/-p` (else $ENGRAMDB_PATH, else
./.engramdb, see commands/common.py); `--json` prints one JSON document on stdout; an error is one
line on stderr and a nonzero exit code, never a traceback. The old positional store folders still
work for one release, with a note on stderr. A command whose output cannot be written fails (exit
1, said on stderr): with stdout closed (`cmd >&-`) nothing is done at all, since Python would drop
every line silently; when the output fails after a write (a full disk), stderr says what was written.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's, without its import: a hook process imports this module (agents/resident_link.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]

# what an error of the store or of the user's input is: said in one line as it is (anything else
# is a defect: said with its type, the traceback only with $ENGRAMDB_DEBUG)
_EXPECTED = (ValueError, RuntimeError, OSError, ImportError, LookupError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `engramdb` console script: the exit code."""
    args_given = list(sys.argv[1:] if argv is None else argv)
    if args_given[:1] == ["hook"]:
        # a hook's read served by the store's resident reader: this path imports the standard
        # library only (agents/resident_link.py); None means "answer the usual way"
        from .agents.resident_link import fast_hook

        served = fast_hook(args_given[1:])
        if served is not None:
            return served
        from .agents.hook_process import without_unused_imports

        without_unused_imports()  # before pyarrow: it would import pandas for nothing (hook_process.py)
    from .commands.common import CliError, note, one_line, resolve_folder
    from .commands.parser import COMMANDS, build

    parser, each = build()
    # known args: a positional after an option (`context FOLDER --namespace N QUERY`, the old
    # form) is left over by argparse; the command takes it back, or it is an error
    args, extras = parser.parse_known_args(argv)
    command = COMMANDS[args.command]
    if extras and (command.extras is None or not command.extras(args, extras)):
        each[command.name].error(f"unrecognized arguments: {' '.join(extras)}")
    try:
        if sys.stdout is None and command.name != "hook":  # the hooks print nothing that way and exit 0 by contract
            raise CliError("standard output is closed, so what this command prints would be lost: nothing was "
                           "done (redirect it to /dev/null to drop the output)")
        resolve_folder(args, command)
        code = command.run(args)
        if sys.stdout is not None:
            sys.stdout.flush()  # here, not at the interpreter's exit, where a failure is a traceback
        return code
    except CliError as exc:
        note(command.name, one_line(str(exc)))
        return exc.code
    except KeyboardInterrupt:
        note(command.name, "interrupted")
        return 130
    except BrokenPipeError:  # `engramdb search ... | head`: the reader has what it wanted
        _drop_stdout()
        return 141  # what a shell reports for a command a closed pipe stopped (128 + SIGPIPE)
    except OSError as exc:
        from .commands.common import os_message

        note(command.name, one_line(os_message(exc)))
        _drop_stdout()
        return 1
    except _EXPECTED as exc:
        note(command.name, one_line(str(exc) or type(exc).__name__))
        return 1
    except Exception as exc:
        if os.environ.get("ENGRAMDB_DEBUG"):
            raise
        note(command.name, f"unexpected {type(exc).__name__}: {one_line(str(exc))} (set ENGRAMDB_DEBUG=1 to see "
                           "where; please report it)")
        return 1


def _drop_stdout() -> None:
    """Whatever stdout still holds is lost (its reader left, or it cannot be written): point it at
    /dev/null so the interpreter's last flush does not fail again with a traceback."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
        return
    except (OSError, ValueError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
