"""What a coding agent's hook hands us and what we keep of it (C8), with no store in sight.

Claude Code runs `engramdb hook EVENT` with one JSON object on stdin: `session_id`,
`transcript_path`, `cwd`, `hook_event_name`, and per event `prompt` (UserPromptSubmit),
`tool_name` / `tool_input` / `tool_response` (PreToolUse, PostToolUse), `last_assistant_message`
(Stop, SubagentStop), `source` (SessionStart), `reason` (SessionEnd). This module reads that
object (`parse`), says where the store and the namespace are (`store_path`, `namespace_of`),
turns the event into the records a capture stores (`prompt_record`, `tool_record`,
`reply_record`) or the query a read asks (`tool_query`), and holds each event's time budget
(`budget_ms`). hooks.py runs them against the store.

The namespace of a project is its folder's name as a reversible slug (`folder_namespace`), since
a namespace is 1-128 of the characters `A-Za-z0-9._:@/+-` starting with a letter or digit: ASCII
letters and digits stay, and so do `.`, `_` and `-` after the first character; every other
character is written as its UTF-8 bytes, each as `+` and two upper-case hex digits (`My Project`
-> `My+20Project`, `café` -> `caf+C3+A9`, `a+b` -> `a+2Bb`). A slug that would start with `+`
(or with `x`s and then `+`) gets one more `x` in front, since a namespace starts with a letter or
digit (`.dotfiles` -> `x+2Edotfiles`); reading back, one leading `x` before `x...+` is dropped.
`namespace_folder` reads a slug back. A slug that would pass 128 characters keeps at most its
first 119 and ends with `:` and 8 hex digits of a hash of the name (`:` is never in a plain slug,
so such a namespace says it is one; it cannot be read back). An explicit `--namespace` or
$ENGRAMDB_NAMESPACE is used as given.

The agent's text (prompt, tool input and response, reply, session id) is kept as sent, except
that a lone surrogate in it (half an emoji, as clipping UTF-16 leaves it), which no file can
hold, becomes U+FFFD: a hook never drops a capture for one character.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Each event's time budget in ms (seed 003, section 7): past it the hook prints nothing, exits 0.
BUDGETS_MS = {
    "SessionStart": 5_000,
    "UserPromptSubmit": 2_000,
    "PreToolUse": 500,
    "PostToolUse": 3_000,
    "Stop": 3_000,
    "SubagentStop": 3_000,
    "SessionEnd": 30_000,
}
EVENTS = tuple(BUDGETS_MS)
BUDGET_ENV = "ENGRAMDB_HOOK_BUDGET_MS"  # one budget in ms for every event (tests, slow machines)
STORE_FOLDER = ".engramdb"  # under the project folder when neither --path nor $ENGRAMDB_PATH says
DEFAULT_NAMESPACE = "default"  # when the project folder has no name (the filesystem root)

INPUT_CHARS = 600  # a tool call's input as stored and searched
VALUE_CHARS = 240  # one input field within it (an Edit's old_string must not crowd out the path)
RESPONSE_CHARS = 2_000  # a tool's response as stored
REPLY_CHARS = 16_000  # an assistant message as stored (a long one is indexed as passages, C7)
QUERY_CHARS = 300  # a PreToolUse search query
TRANSCRIPT_TAIL = 512 * 1024  # bytes of the transcript read back for a Stop without the message
# The input fields that say what a tool call is about, in the order they are worth keeping.
KEY_FIELDS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt", "glob",
              "notebook_path", "skill", "subagent_type")


class HookInputError(ValueError):
    """Stdin is not a hook's JSON object (empty, not JSON, not an object, or for another event)."""


@dataclass(frozen=True)
class Payload:
    """One hook call: the event (from the command line), the fields every event has, and the rest."""

    event: str
    session_id: str | None
    cwd: str
    transcript_path: str | None
    fields: dict[str, Any] = field(default_factory=dict)

    def text(self, key: str) -> str:
        """A string field, "" when missing or not a string (lone surrogates replaced: `mend`)."""
        value = self.fields.get(key)
        return mend(value) if isinstance(value, str) else ""


def mend(text: str) -> str:
    """`text` with each lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD; a surrogate
    pair split over two code points is joined back into its character."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def parse(raw: str, event: str) -> Payload:
    """The hook's JSON object for `event`; HookInputError says why when it is not one. A payload
    naming another `hook_event_name` is refused: the settings wired the wrong command."""
    if not raw.strip():
        raise HookInputError("empty stdin: expected the hook's JSON object")
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise HookInputError(f"stdin is not JSON ({exc})") from None
    except RecursionError:  # nested past the parser's depth (which depends on the stack at hand)
        raise HookInputError("stdin is JSON nested too deeply to read") from None
    return payload_of(obj, event)


def payload_of(obj: Any, event: str) -> Payload:
    """`parse` of stdin already read as JSON (`obj`): the same checks past the JSON's own."""
    if not isinstance(obj, dict):
        raise HookInputError(f"stdin is JSON but not an object ({type(obj).__name__})")
    named = obj.get("hook_event_name")
    if isinstance(named, str) and named and named != event:
        raise HookInputError(f"stdin is a {named} event, this command handles {event}")
    sid = obj.get("session_id")
    cwd = obj.get("cwd")
    transcript = obj.get("transcript_path")
    return Payload(event, session_key(mend(sid)) if isinstance(sid, str) and sid else None,
                   cwd if isinstance(cwd, str) and cwd else os.getcwd(),
                   transcript if isinstance(transcript, str) and transcript else None, obj)


SESSION_MAX = 256  # the store's limit on session_id


def session_key(sid: str) -> str:
    """An agent's session id as the store keeps it: as it is up to SESSION_MAX characters; a
    longer one cut and ended with `:` and 16 hex digits of its SHA-256 (one session, one key), so
    a capture is never lost to the length of an id."""
    if len(sid) <= SESSION_MAX:
        return sid
    return sid[: SESSION_MAX - 17] + ":" + hashlib.sha256(sid.encode("utf-8")).hexdigest()[:16]


def budget_ms(event: str) -> int:
    """The event's budget: $ENGRAMDB_HOOK_BUDGET_MS when set to a positive integer, else
    `BUDGETS_MS`."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value > 0:
            return value
    return BUDGETS_MS[event]


def store_path(path: str | None, payload: Payload) -> Path:
    """`--path`, else $ENGRAMDB_PATH, else `<the session's cwd>/.engramdb`. A blank $ENGRAMDB_PATH
    (only spaces: a template's missing variable) is unset, as an empty one is (and as the CLI has it)."""
    env = os.environ.get("ENGRAMDB_PATH", "")
    chosen = path or (env if env.strip() else None)
    return Path(chosen) if chosen else Path(payload.cwd) / STORE_FOLDER


def namespace_of(namespace: str | None, payload: Payload) -> str:
    """`--namespace`, else $ENGRAMDB_NAMESPACE (either as given), else the project folder's name (the
    session's cwd) as a slug (`folder_namespace`)."""
    return namespace or os.environ.get("ENGRAMDB_NAMESPACE") or folder_namespace(Path(payload.cwd).name)


_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_KEPT_AFTER_FIRST = _KEPT | {".", "_", "-"}
NAMESPACE_CHARS = 128  # a namespace's length limit (model/memory.py)
_HASHED_AT = NAMESPACE_CHARS - 9  # a slug too long keeps this much, then ":" and 8 hex digits
_LEADS = re.compile(r"x*\+")  # a slug that needs an "x" in front: it would start with "+" (or "x...x+")
_LED = re.compile(r"x+\+")  # a slug that has one


def folder_namespace(name: str) -> str:
    """The namespace of a project folder named `name` (see the module docstring): ASCII letters and
    digits kept, `.`, `_`, `-` kept after the first character, every other character as `+XX` per
    UTF-8 byte; DEFAULT_NAMESPACE for no name (the filesystem root)."""
    if not name:
        return DEFAULT_NAMESPACE
    raw = name.encode("utf-8", "surrogatepass")  # a name Python decoded with surrogates keeps its bytes
    out = []
    for i, byte in enumerate(raw):
        ch = chr(byte)
        out.append(ch if ch in (_KEPT_AFTER_FIRST if i else _KEPT) else f"+{byte:02X}")
    slug = "".join(out)
    if _LEADS.match(slug):  # a namespace starts with a letter or digit
        slug = "x" + slug
    if len(slug) <= NAMESPACE_CHARS:
        return slug
    cut = slug[:_HASHED_AT]
    plus = cut.rfind("+", len(cut) - 2)  # never half an escape
    if plus >= 0:
        cut = cut[:plus]
    return f"{cut}:{hashlib.blake2b(raw, digest_size=4).hexdigest()}"


def namespace_folder(namespace: str) -> str | None:
    """The folder name `folder_namespace` made `namespace` from; None for a hashed slug (a name
    too long to keep whole) or a namespace no folder maps to."""
    original = namespace
    if ":" in namespace:
        return None
    if _LED.match(namespace):
        namespace = namespace[1:]
    raw = bytearray()
    i = 0
    while i < len(namespace):
        ch = namespace[i]
        if ch == "+":
            try:
                raw.append(int(namespace[i + 1:i + 3], 16))
            except ValueError:
                return None
            i += 3
        else:
            raw += ch.encode("ascii", "replace")
            i += 1
    try:
        name = bytes(raw).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return name if name and folder_namespace(name) == original else None


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    note = f" ... [{len(text) - limit} more chars]"
    return text[:max(0, limit - len(note))] + note


def as_text(value: Any) -> str:
    """A JSON value as text: a string as is, anything else as compact JSON (lone surrogates
    replaced: `mend`)."""
    if isinstance(value, str):
        return mend(value)
    try:
        return mend(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    except (ValueError, RecursionError):  # a circular or too deep structure: its repr says enough
        return mend(str(value))


def compact_input(tool_input: Any) -> str:
    """A tool call's input in at most INPUT_CHARS: the fields that say what it is about first
    (command, file_path, pattern ...), each value clipped, then the others."""
    if not isinstance(tool_input, dict):
        return clip(as_text(tool_input), INPUT_CHARS)
    keys = [k for k in KEY_FIELDS if k in tool_input] + sorted(k for k in tool_input if k not in KEY_FIELDS)
    parts = [f"{k}={clip(' '.join(as_text(tool_input[k]).split()), VALUE_CHARS)}" for k in keys]
    return clip(" ".join(parts), INPUT_CHARS)


def _base(payload: Payload, namespace: str) -> dict[str, Any]:
    meta = {"hook": payload.event, "cwd": mend(payload.cwd)}
    if payload.transcript_path:
        meta["transcript_path"] = mend(payload.transcript_path)
    return {"namespace": namespace, "session_id": payload.session_id, "metadata": meta,
            "provenance": {"extractor": f"engramdb hook {payload.event}"}}


def prompt_record(payload: Payload, namespace: str) -> dict[str, Any] | None:
    """The user's prompt as a turn (role "user"); None for an empty prompt."""
    prompt = payload.text("prompt").strip()
    if not prompt:
        return None
    return {**_base(payload, namespace), "content": clip(prompt, REPLY_CHARS), "role": "user",
            "memory_type": "turn", "source": "turn"}


def tool_record(payload: Payload, namespace: str) -> dict[str, Any] | None:
    """A tool use (memory_type "hook", role "tool"): its name, a compact input and a clipped
    response; None without a tool name."""
    name = payload.text("tool_name").strip()
    if not name:
        return None
    content = f"Tool {name}: {compact_input(payload.fields.get('tool_input'))}"
    if "tool_response" in payload.fields:
        content += "\nResult: " + clip(as_text(payload.fields["tool_response"]).strip(), RESPONSE_CHARS)
    rec = _base(payload, namespace)
    rec["metadata"]["tool_name"] = name
    tool_use_id = payload.text("tool_use_id")
    if tool_use_id:
        rec["metadata"]["tool_use_id"] = tool_use_id
    return {**rec, "content": content, "role": "tool", "memory_type": "hook", "source": "hook"}


def reply_record(payload: Payload, namespace: str) -> dict[str, Any] | None:
    """The assistant's last message (role "assistant", source "response"): `last_assistant_message`,
    else the last assistant text in the transcript's tail; None when there is neither."""
    text = payload.text("last_assistant_message").strip() or last_assistant_text(payload.transcript_path)
    if not text:
        return None
    rec = _base(payload, namespace)
    agent = payload.text("agent_type")
    if agent:
        rec["metadata"]["agent_type"] = agent
    return {**rec, "content": clip(text, REPLY_CHARS), "role": "assistant", "memory_type": "turn",
            "source": "response"}


def last_assistant_text(transcript_path: str | None) -> str:
    """The text of the last assistant entry in a Claude Code transcript (JSON lines), read from
    its last TRANSCRIPT_TAIL bytes; "" when there is none or the file cannot be read (older
    agents send no `last_assistant_message` with Stop)."""
    if not transcript_path:
        return ""
    try:
        with open(transcript_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TRANSCRIPT_TAIL))
            lines = deque(f.read().splitlines(), maxlen=200)
    except OSError:
        return ""
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:  # the first line of the tail is usually cut
            continue
        msg = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [c["text"] for c in content if isinstance(c, dict) and c.get("type") == "text"
                     and isinstance(c.get("text"), str)]
        else:
            texts = []
        text = "\n".join(t for t in texts if t.strip()).strip()
        if text:
            return mend(text)
    return ""


def tool_query(payload: Payload) -> str:
    """What a PreToolUse searches for: the tool's name and what its input is about."""
    name = payload.text("tool_name").strip()
    tool_input = payload.fields.get("tool_input")
    if isinstance(tool_input, dict):
        about = [as_text(tool_input[k]) for k in KEY_FIELDS if k in tool_input] or \
                [as_text(v) for _, v in sorted(tool_input.items())]
        body = " ".join(" ".join(about).split())
    else:
        body = " ".join(as_text(tool_input).split()) if tool_input is not None else ""
    return f"{name} {body}".strip()[:QUERY_CHARS]  # a plain cut: a note would be searched too


__all__ = ["BUDGETS_MS", "BUDGET_ENV", "EVENTS", "HookInputError", "Payload", "as_text", "budget_ms", "clip",
           "compact_input", "folder_namespace", "last_assistant_text", "mend", "namespace_folder", "namespace_of",
           "parse", "prompt_record", "reply_record", "store_path", "tool_query", "tool_record"]
