"""What a hook keeps: the record each capturing event makes of its input, and the spool it goes to.

Captures are spooled, always (the capture's one path): a file of JSON, checked with the writer's
rules first, fsynced and renamed into place in milliseconds, with neither Arrow nor the store
opened; whichever writer opens next takes it in, exactly once (ids are given by the hook). This
module imports the standard library and the engine's record rules, not numpy or Arrow, so a hook
whose read a resident reader answered (resident_link.fast_hook) keeps its capture in tens of
milliseconds (`capture_alone`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model.errors import InvalidMemory
from ..model.memory import Memory, validate_memory
from ..model.tuning import Tuning
from ..storage import spool
from ..storage.folder import classify
from . import hook_events as ev

# the record each capturing event keeps of its input (None: nothing worth keeping, an empty prompt)
CAPTURES: dict[str, Callable[[ev.Payload, str], dict[str, Any] | None]] = {
    "UserPromptSubmit": ev.prompt_record,
    "PostToolUse": ev.tool_record,
    "Stop": ev.reply_record,
    "SubagentStop": ev.reply_record,
}


def why(exc: BaseException) -> str:
    """An error as a hook says it on one line: its kind and its message."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def keep(store: Path, records: list[dict[str, Any]]) -> None:
    """Spool `records` for the store at `store` (see the module docstring). Raises what the writer
    would refuse them with (InvalidMemory, naming the field), or StoreError for a folder that is
    not a store: a capture the writer would refuse is never acknowledged."""
    classify(store)  # a store, a new one or one being made; any other folder is refused untouched
    limit = Tuning().max_content_bytes
    for r in records:
        validate_memory(Memory(**r))
        if len(r["content"].encode("utf-8")) > limit:
            raise InvalidMemory(f"content is {len(r['content'].encode()):,} bytes, over {limit:,}")
    spool.put(store, records)


def capture_alone(event: str, obj: Any, path: str | None, namespace: str | None) -> tuple[Path | None, str | None]:
    """Spool `event`'s capture for its stdin, read as JSON (`obj`), when no store is opened for it
    (a read answered by a resident reader, a capture-only event): the same record, the same rules,
    the same spool as the hook answering alone. (the store it was spooled for, None) when kept;
    (None, None) when there is nothing to keep; else (None, what went wrong, with the count)."""
    make = CAPTURES.get(event)
    if make is None:
        return None, None
    try:
        payload = ev.payload_of(obj, event)
        store = ev.store_path(path, payload)
        record = make(payload, ev.namespace_of(namespace, payload))
    except ev.HookInputError as exc:
        return None, f"1 capture NOT kept ({exc})"
    except Exception as exc:  # noqa: BLE001 - whatever the input does to the record's making: said, never raised
        return None, f"1 capture NOT kept ({why(exc)})"
    if record is None:
        return None, None
    record["id"] = uuid.uuid4().hex
    try:
        keep(store, [record])
    except Exception as exc:  # noqa: BLE001 - said, with the count
        return None, f"1 capture NOT kept ({why(exc)})"
    return store, None


__all__ = ["CAPTURES", "capture_alone", "keep", "why"]
