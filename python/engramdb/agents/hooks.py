"""`engramdb hook EVENT`: a coding agent's hooks (Claude Code's contract, C8) over a store.

The agent runs one process per event with the event's JSON on stdin (hook_events.py reads it).
Each event has a read (context for the agent) and/or a write, within its budget
(hook_events.BUDGETS_MS):
- SessionStart (5 s): read-only, the project's lite pack
  (`db.importance.pack`: its memories by learned importance) under its topics (`db.topics`);
- UserPromptSubmit (2 s): the plain-search hits for the prompt are offered first (the quick
  answer), then the prompt is captured (role "user", memory_type "turn"; after the read's snapshot,
  so it is not its own best match), then `db.context(prompt, session_id=...)` is the full answer;
- PreToolUse (0.5 s): the few memories that match the tool call well (a plain search);
- PostToolUse (3 s): capture the tool use (memory_type "hook": name, compact input, clipped
  response); Stop / SubagentStop (3 s): capture the assistant's last message (role "assistant");
- SessionEnd (30 s): the writer's upkeep (agents/session_upkeep.py: ingest the spool, checkpoint, merge
  the small segments captures leave, save the indexes, consolidate, refresh the namespace's topics)
  in a process of its own, waited for up to a fifth of the budget, then left to finish on its own.
Context goes to stdout as `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext":
TEXT}}`, TEXT cut to `max_chars` at a line end; nothing is printed when there is nothing to say.

Captures are spooled first, always (the capture's one path: a JSON file, checked with the writer's
rules, fsynced and renamed into place in milliseconds, with neither Arrow nor the store opened),
then taken in when the writer's lock is free (a process opens the store as its writer, which
ingests the spool: for a capture-only event on an existing store, a take-in process of its own
that the hook waits for up to 15% of its budget, agents/take_in.py, the hook itself then importing
neither numpy nor Arrow, resident_link.fast_hook; this one for the first capture, which makes the
store); else the next writer takes them in, exactly once (ids are given here). UserPromptSubmit's
prompt on a store that exists is left in the spool for the next writer (the turn's Stop, whose
take-in ingests every capture waiting), as when its resident answers: the prompt is what the
agent holds already, and a writer's open in this process was a fifth of the answer's time.
Parallel hooks never wait on each other or on a long-lived writer.
Reads open the store read-only (any number at once); a store folder that does not exist yet reads
as empty. The exit status is always 0: these hooks never block the agent. Bad or empty stdin
prints nothing and leaves one line on stderr.

Deadlines: the read and the write run on daemon threads. The budget counts from the process's
start; a read that has a quicker answer offers it first (the pack before the topics, plain search
hits before the full context, whose topics a cold process may need seconds to compute), and that
answer is printed when the full one is not ready at FALLBACK_AT of the budget. At the budget the
process leaves with `os._exit(0)`: nothing printed if the context was not ready, never half of it.
A capture already spooled is kept whatever is cut short after it; one not yet spooled is spooled
then, on the main thread (`_rescue`), waiting up to RESCUE_S past the budget for stdin to be read
first (a machine so loaded that a hook cannot read its input in its budget; RESCUE_ASYNC_S for the
capture-only events an agent runs without waiting). A capture that cannot
be kept is said on stderr as such, with its count ("1 capture NOT kept"), never passed over.
$ENGRAMDB_HOOK_BUDGET_MS sets one budget (ms) for every event. `main` is a process's entry point
(the CLI's): it may end the process.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import engramdb

from ..storage.folder import MANIFEST
from . import capture, detached, session_upkeep, take_in
from . import hook_events as ev
from .capture import why as _why
from .hook_events import Payload
from .resident_link import note as _note
from .resident_link import print_context as _print_context
from .resident_link import process_start as _process_start
from .resident_link import read_stdin, start_wanted, want

CHARS_PER_TOKEN = 4  # max_chars -> a context's max_tokens (English prose and code average 3-4)
FALLBACK_AT = 0.75  # of the budget: print the quicker answer when the full one is not ready by then
FALLBACK_HITS = 8  # memories a quick UserPromptSubmit answer shows at most
FALLBACK_MIN_SCORE = 0.2  # a weak match and up (0.5 is a good one)
TOOL_HITS = 3  # memories a PreToolUse shows at most
TOOL_MIN_SCORE = 0.3  # a tool call is frequent: only good matches are worth its tokens
TOOL_CHARS = 1_200  # a PreToolUse context at most (a brief one, whatever --max-chars allows)
LINE_CHARS = 400  # one memory in a plain-search answer
TOPICS_SHOWN = 8  # topics a SessionStart lists
RESCUE_S = 2.0  # past the budget, how long a capture whose input is not read yet is waited for (spooling takes ms)
RESCUE_ASYNC_S = 20.0  # ... by an event nothing waits for (a capture only: the agent runs its hook async)


class _Run:
    """One hook's state between its threads and the main one: the context (quick and full), the
    write's go and its end, and notes for stderr."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.cond = threading.Condition()
        self.final: str | None = None
        self.final_ready = False
        self.quick: str | None = None
        self.quick_ready = False  # a quick answer was offered (None: it found nothing to say)
        self.go_write = threading.Event()  # the read has what must come first (or ended): the write may start
        self.parsed = threading.Event()  # stdin read: `records` says what the write keeps
        self.store: Path | None = None
        self.records: list[dict[str, Any]] = []  # what the write captures
        self.written = threading.Event()
        self.kept = False  # the capture's records are in the spool (durable)
        self.rescue_s = RESCUE_S
        self.keeping = threading.Lock()  # the write thread and a rescue keep them once
        self.notes: list[str] = []
        self.quick_wanted = True  # a hook process offers a quick answer; a resident (served_read) never prints one
        self.take_in = True  # the write takes the spool in (a writer's open) after keeping the capture

    def offer(self, text: str | None) -> None:
        """A quicker, lesser answer (None: nothing to say), printed if the full one is late."""
        with self.cond:
            self.quick, self.quick_ready = text, True
            self.cond.notify_all()

    def answer(self, text: str | None) -> None:
        """The full answer (the first one given counts)."""
        with self.cond:
            if not self.final_ready:
                self.final, self.final_ready = text, True
                self.cond.notify_all()

    def wait_answer(self, fallback_at: float, deadline: float) -> tuple[str, str | None]:
        """("full", text) as soon as the full answer is given; ("quick", text) from `fallback_at`
        on when only the quick one is; ("late", None) at the deadline."""
        with self.cond:
            while True:
                now = time.monotonic()
                if self.final_ready:
                    return "full", self.final
                if now >= fallback_at and self.quick_ready:
                    return "quick", self.quick
                if now >= deadline:
                    return "late", None
                self.cond.wait((fallback_at if now < fallback_at and self.quick_ready else deadline) - now)


@dataclass(frozen=True)
class _Hook:
    """What `engramdb hook EVENT` does: a read giving the context, and/or a write: the record a
    capture keeps, or the writer's upkeep."""

    read: Callable[[Payload, Path, str, int, _Run, engramdb.Store], None] | None = None
    capture: Callable[[Payload, str], dict[str, Any] | None] | None = None
    upkeep: Callable[[Path, str], None] | None = None


def main(event: str, *, path: str | None, namespace: str | None, max_chars: int) -> int:
    """Run the hook for `event` on the JSON object on stdin (see the module docstring); always 0."""
    if event not in HOOKS:
        _note(event, f"unknown event; expected one of {', '.join(HOOKS)}")
        return 0
    budget = ev.budget_ms(event) / 1000
    deadline = _process_start() + budget
    run = _Run(deadline)
    run.rescue_s = rescue_seconds(event)
    worker = threading.Thread(target=_work, args=(run, event, path, namespace, max(0, max_chars)),
                              name=f"engramdb-hook-{event}", daemon=True)
    worker.start()
    which, text = run.wait_answer(deadline - (1 - FALLBACK_AT) * budget, deadline)
    if which == "late":
        start_wanted()
        _leave(event, f"over its {ev.budget_ms(event)} ms budget" + (": nothing printed" if HOOKS[event].read else "")
               + _rescue(run))
    if which == "quick":
        run.notes.append(f"the full context was not ready at {FALLBACK_AT:.0%} of the budget: "
                         + ("printed the quick answer" if text else "the quick one found nothing to say"))
    if text and HOOKS[event].read is not None:
        _print_context(event, text)
    start_wanted()  # a resident reader for the next events, when this one found none (resident_link.py)
    if not run.written.wait(max(0.0, deadline - time.monotonic())):
        if run.kept:  # in the spool; storing it was cut short: the next writer takes it in
            _leave(event, None)
        _leave(event, f"over its {ev.budget_ms(event)} ms budget before its write finished" + _rescue(run))
    if which == "full":  # the reader is closing: let it spool what it injected (E1), within the budget
        worker.join(max(0.0, deadline - time.monotonic()))
    for note in run.notes:
        _note(event, note)
    if worker.is_alive():  # the full context, too late to print: no need to wait for it
        _leave(event, None)
    return 0


def _work(run: _Run, event: str, path: str | None, namespace: str | None, max_chars: int) -> None:
    """Read stdin, start the write (it waits for `go_write`), do the read."""
    hook = HOOKS[event]
    writing = False
    try:
        payload = ev.parse(read_stdin(), event)
        store = ev.store_path(path, payload)
        ns = ev.namespace_of(namespace, payload)
        record = hook.capture(payload, ns) if hook.capture is not None else None
        if record is not None:
            record["id"] = uuid.uuid4().hex  # given here, so a rescue (_rescue) is the same memory
            run.store, run.records = store, [record]
            # a read's capture (the prompt) on a store that exists stays in the spool for the next
            # writer, as when the resident answers: a writer's open here cost a fifth of the answer.
            # A folder without a manifest (new, empty, or a spool a first hook left) is made a store
            run.take_in = hook.read is None or not (store / MANIFEST).is_file()
        run.parsed.set()
        if run.records or hook.upkeep is not None:
            threading.Thread(target=_write, args=(run, hook.upkeep, store, ns),
                             name=f"engramdb-hook-{event}-write", daemon=True).start()
            writing = True
        else:
            run.written.set()  # nothing to write: the main thread need not wait for the read's end
        if hook.read is not None:
            with _reader(store) as db:
                if db is not None:
                    hook.read(payload, store, ns, max_chars, run, db)
    except ev.HookInputError as exc:
        run.notes.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - a hook never fails the agent: say what went wrong, print nothing
        run.notes.append(_why(exc))
    finally:
        run.parsed.set()
        if not writing:
            run.written.set()  # none to wait for (or stdin was refused)
        run.go_write.set()
        run.answer(None)


def _write(run: _Run, upkeep: Callable[[Path, str], None] | None, store: Path, ns: str) -> None:
    try:
        run.go_write.wait()
        if run.records:
            try:
                _keep(run, store)  # durable from here on: the capture is kept
            except Exception as exc:  # noqa: BLE001 - said as such, with the count
                run.notes.append(f"{len(run.records)} capture(s) NOT kept ({_why(exc)})")
                return
            if run.take_in:  # best effort: stored now when the writer's lock is free (the next writer does it otherwise)
                take_in.take_in(store)
        if upkeep is not None:
            upkeep(store, ns)
    except Exception as exc:  # noqa: BLE001 - as in _work
        run.notes.append(_why(exc))
    finally:
        run.written.set()


def rescue_seconds(event: str) -> float:
    """How long past its budget `event` waits to keep a capture whose input is not read yet."""
    return RESCUE_S if HOOKS[event].read is not None else RESCUE_ASYNC_S


def _keep(run: _Run, store: Path) -> None:
    """Spool the capture's records (capture.keep), once per process."""
    with run.keeping:
        if run.kept or not run.records:
            return
        capture.keep(store, run.records)
        run.kept = True


def _rescue(run: _Run) -> str:
    """At the deadline with a capture not yet kept: keep it now, on this thread (spooling takes
    milliseconds), waiting up to RESCUE_S (RESCUE_ASYNC_S for an event with no read: the agent does
    not wait for it) for stdin to be read first. Says what became of it ("":
    nothing to keep, or kept already); a capture that could not be kept is said as such, with its
    count, never passed over."""
    if run.kept or not run.parsed.wait(run.rescue_s):
        return "" if run.kept else ": 1 capture NOT kept (its input was not read in time)"
    if not run.records or run.store is None:
        return ""
    try:
        _keep(run, run.store)
    except Exception as exc:  # noqa: BLE001 - said, with the count
        return f": {len(run.records)} capture(s) NOT kept ({_why(exc)})"
    return ": the capture was spooled for the next writer"


# ---------------------------------------------------------------------------------- reads
def session_start(payload: Payload, store: Path, ns: str, max_chars: int, run: _Run, db: engramdb.Store) -> None:
    """The project's lite pack, under its topics when they come in time."""
    want(store)  # a resident reader for the session's prompts and tool calls, started once this hook has answered
    # No search here: the pack and the stored topics need no search index, this process ends at its answer,
    # and the resident loads what its searches read itself. A warming search built BM25 in this
    # process on a store without saved indexes, for nothing (~0.5-1 s at 100,000 memories).
    title = f"engramdb: what the memory of project '{ns}' holds"
    pack = db.importance.pack(ns, max_tokens=_tokens(max_chars))
    body = ["## Memories by importance", pack.text] if pack.text else []
    run.offer(_headed(title, body, max_chars))
    # what a writer computed and stored: clustering a namespace a script filled takes seconds
    topics = list(db.topics(ns, compute=False))[:TOPICS_SHOWN]
    lines = ["## Topics", *(f"- {t.label} ({t.size} memories, {t.phase})" for t in topics)] if topics else []
    run.answer(_headed(title, lines + body, max_chars))


def user_prompt_submit(payload: Payload, store: Path, ns: str, max_chars: int, run: _Run,
                       db: engramdb.Store) -> None:
    """`db.context` for the prompt; the best plain-search hits first, in case it is late."""
    prompt = payload.text("prompt").strip()
    if not prompt:
        return
    title = f"engramdb: memories of project '{ns}' for this prompt"
    if run.quick_wanted:
        hits = db.search(prompt, namespace=ns, k=FALLBACK_HITS, session_id=payload.session_id,
                         min_score=FALLBACK_MIN_SCORE, log=False)
        run.offer(_headed(title, ["## Related memories", *_lines(hits)] if len(hits) else [], max_chars))
    # then the capture, before the full context: it is kept for good, the full context only betters the quick one
    run.go_write.set()
    run.written.wait(max(0.0, run.deadline - time.monotonic()))
    ctx = db.context(prompt, namespace=ns, session_id=payload.session_id, max_tokens=_tokens(max_chars))
    found = any(item.id is not None for item in ctx.items)  # the badges alone say nothing
    run.answer(_headed(title, [ctx.text] if found else [], max_chars))


def pre_tool_use(payload: Payload, store: Path, ns: str, max_chars: int, run: _Run, db: engramdb.Store) -> None:
    """The few memories that match the tool call well."""
    query = ev.tool_query(payload)
    # a few more than shown: the lines pasted once (a repeated prompt) leave room for the next
    hits = db.search(query, namespace=ns, k=3 * TOOL_HITS, min_score=TOOL_MIN_SCORE, log=False) if query else []
    tool = payload.text("tool_name") or "tool"
    run.answer(_headed(f"engramdb: memories related to this {tool} call", _lines(hits, TOOL_HITS),
                       min(max_chars, TOOL_CHARS)))


def served_read(db: engramdb.Store, event: str, raw: str, store: Path, namespace: str | None,
                max_chars: int, budget_s: float) -> tuple[str | None, str]:
    """The read of `event` for its stdin `raw`, on `db`, a store already open read-only (a resident
    reader's, agents/resident.py): the text the hook prints (None: nothing to say) and the
    namespace it read. The event's capture, if it has one, is the hook process's (`capture_alone`).
    Raises HookInputError for stdin that is not the event's JSON."""
    hook = HOOKS.get(event)
    if hook is None or hook.read is None:
        raise ev.HookInputError(f"{event!r} is not an event a resident reader answers")
    payload = ev.parse(raw, event)
    run = _Run(time.monotonic() + budget_s)
    run.written.set()  # no write here to wait for
    run.quick_wanted = False  # the answer is the full one (a warm store gives it in milliseconds)
    ns = ev.namespace_of(namespace, payload)
    hook.read(payload, store, ns, max(0, max_chars), run, db)
    return (run.final if run.final_ready else run.quick), ns


# ---------------------------------------------------------------------------------- writes
def session_end(store: Path, ns: str) -> None:
    """The writer's upkeep (agents/session_upkeep.py: ingest the spool, fold the WAL, merge the small
    segments, save the indexes, consolidate, refresh the topics) in a process of its own, waited
    for up to session_upkeep.WAIT_SHARE of the budget: what it said is said here; past that it finishes on
    its own (the first upkeep of a store a script filled with 100,000 memories builds its tree and
    topics: most of the budget) and the hook leaves."""
    if not store.is_dir():
        return
    proc = session_upkeep.start(store, ns)
    status, said = detached.wait(
        proc, _process_start() + session_upkeep.WAIT_SHARE * ev.budget_ms("SessionEnd") / 1000)
    if status is None:
        return  # still working, on its own: nothing went wrong so far, and nothing is lost if it stops
    if status != 0:
        raise RuntimeError(said or f"the upkeep process ended with status {status}")
    for line in said.splitlines():  # done, with a warning on the way (a copied store's new id): said as it is
        _note("SessionEnd", line)


HOOKS = {
    "SessionStart": _Hook(read=session_start),
    "UserPromptSubmit": _Hook(read=user_prompt_submit, capture=capture.CAPTURES["UserPromptSubmit"]),
    "PreToolUse": _Hook(read=pre_tool_use),
    "PostToolUse": _Hook(capture=capture.CAPTURES["PostToolUse"]),
    "Stop": _Hook(capture=capture.CAPTURES["Stop"]),
    "SubagentStop": _Hook(capture=capture.CAPTURES["SubagentStop"]),
    "SessionEnd": _Hook(upkeep=session_end),
}


# ---------------------------------------------------------------------------------- helpers
@contextmanager
def _reader(store: Path) -> Iterator[engramdb.Store | None]:
    """The store opened read-only for a `with` block, or None when its folder does not exist yet
    (nothing captured so far)."""
    if not store.is_dir():
        yield None
        return
    db = engramdb.open(store, read_only=True, access_log="spool")  # what it injects still teaches the ratings
    try:
        yield db
    finally:
        db.close()


def _tokens(max_chars: int) -> int:
    return max(50, max_chars // CHARS_PER_TOKEN)


def _lines(hits: engramdb.Hits | list[engramdb.Hit], most: int | None = None) -> list[str]:
    """One line a hit, as the context block writes one: when it was learned (once for a run of
    hits of one day), who said it (its role) or its type, its text (clipped); a text said twice
    by the same speaker (a repeated prompt) once; `most` lines of memories at most."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    day = None
    for h in hits:
        if most is not None and len(seen) >= most:
            break
        m = h.memory
        text = " ".join(m.content.split())
        who = m.role or m.memory_type or m.source
        if (who, text.casefold()) in seen:
            continue
        seen.add((who, text.casefold()))
        when = m.learned_at.date().isoformat() if m.learned_at else None
        if when != day and when is not None:
            out.append(f"{when}:")
            day = when
        out.append(f"- {who}: {ev.clip(text, LINE_CHARS)}")
    return out


def _headed(title: str, parts: list[str], max_chars: int) -> str | None:
    """`title` over `parts`, cut to `max_chars` at a line end; None when there are no parts."""
    if not parts:
        return None
    return _cap("\n".join([title, *parts]), max_chars)


def _cap(text: str, max_chars: int) -> str | None:
    """`text` within `max_chars`: whole lines while they fit (a hard cut when even the first does not)."""
    if len(text) <= max_chars:
        return text or None
    cut = text.rfind("\n", 0, max_chars + 1)
    return (text[:cut] if cut > 0 else text[:max_chars]) or None


def _leave(event: str, message: str | None) -> None:
    """Leave now, exit status 0, whatever the threads are doing (stdout as it is)."""
    if message:
        _note(event, message)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError:
        pass
    os._exit(0)


__all__ = ["HOOKS", "main", "served_read"]
