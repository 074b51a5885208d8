"""Capture (C7) and the conversation API for services: what agents and the services around them
call without knowing the store's own vocabulary.

- the spool: what `engramdb.capture` (folder_ops.py) spooled while another process held the
  writer's lock is ingested here, exactly once, when a writer opens and before each `add_many`.
- `add_file`: a markdown or text file as chunks of ~200 words overlapping by ~50, cut at sentence
  ends (the passage rule of spaces/passages.py); a changed file supersedes its old chunks (the old
  text stays true until the change, for `as_of`), an unchanged one is skipped.
- `add_messages`, `list` (paged), `history`, and the names mem0 users look for (`get_all`, `delete`).
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import checks
from ..model.errors import InvalidMemory
from ..model.memory import Memory, as_utc, check_namespace, utc_now
from ..spaces.passages import passages
from ..storage import spool
from .added import Added

if TYPE_CHECKING:
    from .facade import Store

_log = logging.getLogger("engramdb")
_drainer = threading.local()  # .store: the store this thread is taking the spool in for


class Capture:
    """Conversation and file capture, and the spool (`Store.add_messages`, `add_file`; `db.admin.ingest_spool`)."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def drain_spool(self) -> dict[str, int] | None:
        """Ingest what other processes spooled while this store's writer held the lock: captures,
        and readers' access rows (to the access log). Under the writer's lock, by one thread at a
        time: a thread that finds another draining waits for it, then finds the files gone (each is
        taken in once; before, two threads could take in the same files)."""
        if self._db.read_only or self._db.path is None or getattr(_drainer, "store", None) is self:
            return None  # read-only, in memory, or this thread is draining already (add_many within apply)
        if spool.quiet(self._db.path) or (not spool.pending(self._db.path) and not spool.access_pending(self._db.path)
                                          and not spool.torn(self._db.path)):
            return None
        with self._db._engine.writing():
            _drainer.store = self
            try:
                self._db._usage.ingest_spooled()
                if not spool.pending(self._db.path) and not spool.torn(self._db.path):
                    return None

                def apply(records: builtins.list[dict[str, Any]]) -> None:
                    view = self._db._view()
                    fresh: dict[str, dict[str, Any]] = {}
                    for r in records:  # ingested before a crash: skipped; spooled twice (a hook's late
                        held = fresh.get(r["id"]) or (view.get(r["id"], include_forgotten=True)  # capture and
                                                       if r["id"] in view else None)  # its rescue): taken once
                        if held is None:
                            fresh[r["id"]] = r
                        elif _content(held) != (r.get("content"), r.get("namespace")):
                            # another record under one id: never dropped in silence, its file set aside
                            raise ValueError(f"spooled record {r['id']!r} differs from the one this store holds "
                                             "under that id")
                    if fresh:
                        self._db.add_many(list(fresh.values()))

                done = spool.drain(self._db.path, apply)
            finally:
                _drainer.store = None
        if done["damaged"] or done["rejected"]:
            _log.warning("engramdb: spool in %s: %s", self._db.path, done)
        return done

    # ------------------------------------------------------------------------------ files (C7)
    def add_file(self, path: str | Path, *, namespace: str, encoding: str = "utf-8") -> dict[str, Any]:
        """`Store.add_file`."""
        check_namespace(namespace)  # both go into ids and metadata: checked before the file is read
        checks.utf8("add_file path", str(path))
        p = Path(path).resolve()
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise ValueError(f"add_file: cannot read {str(path)!r}: {exc.strerror}") from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ValueError(f"add_file: {str(path)!r} is not {encoding} text") from None
        digest = hashlib.sha256(raw).hexdigest()
        # a file's chunks have ids of their own, one generation per distinct content ingested
        stem = hashlib.sha1(f"{namespace}\0{p}".encode()).hexdigest()[:20]
        gen = 0
        while f"file-{stem}-{gen}-0" in self._db._view():
            gen += 1
        old: builtins.list[Memory] = []
        while gen and (m := self._db.get(f"file-{stem}-{gen - 1}-{len(old)}", include_forgotten=True)) is not None:
            old.append(m)
        report: dict[str, Any] = {"file": str(p), "chunks": 0, "added": 0, "superseded": 0, "skipped": False}
        if old and old[0].metadata.get("sha256") == digest:
            report.update(chunks=len(old), skipped=True)
            return report
        spans = [s for s in passages(text) if text[s[0]:s[1]].strip()]
        now = utc_now()
        records = [{"id": f"file-{stem}-{gen}-{i}", "content": text[a:b].strip(), "namespace": namespace,
                    "memory_type": "chunk", "source": "file", "valid_from": now,
                    "metadata": {"file": str(p), "chunk": i, "chunks": len(spans), "sha256": digest},
                    "provenance": {"uri": p.as_uri(), "extractor": "add_file"}}
                   for i, (a, b) in enumerate(spans)]
        ids = self._db.add_many(records)
        for i, m in enumerate(old):
            if m.is_current():
                if i < len(ids):
                    self._db.supersede(m.id, ids[i])
                else:  # the file shrank: its tail stops being true now
                    self._db.update(m.id, valid_until=now)
                report["superseded"] += 1
        report.update(chunks=len(ids), added=len(ids))
        return report

    # ------------------------------------------------------------------------------ conversations
    def add_messages(self, messages: Iterable[Mapping[str, Any]], *, namespace: str,
                     session_id: str | None = None, memory_type: str = "turn") -> Added:
        """`Store.add_messages`."""
        refused = InvalidMemory(f"messages must be a list of dicts with role and content, got "
                                f"{'one ' if isinstance(messages, Mapping) else ''}{type(messages).__name__}")
        if isinstance(messages, (Mapping, str, bytes, bytearray, memoryview)) or not isinstance(messages, Iterable):
            # one message, or a string or bytes, would be read key by key or character by character
            raise refused
        try:
            each = iter(messages)
        except TypeError:  # iterable by its type, not this value (a 0-d numpy array)
            raise refused from None
        records = []
        for i, msg in enumerate(each):
            if not isinstance(msg, Mapping):
                raise InvalidMemory(f"message {i}: must be a dict with role and content, got {type(msg).__name__}")
            role, content = msg.get("role"), msg.get("content")
            if not isinstance(role, str) or not role:
                raise InvalidMemory(f"message {i}: role must be a non-empty string, got {role!r}")
            if not isinstance(content, str):
                raise InvalidMemory(f"message {i}: content must be a string, got {type(content).__name__}")
            said = msg.get("valid_from")
            extra = {k: v for k, v in msg.items() if k not in ("role", "content", "id", "valid_from")}
            records.append({"content": content, "role": role, "namespace": namespace, "session_id": session_id,
                            "memory_type": memory_type, **({"metadata": extra} if extra else {}),
                            **({"id": msg["id"]} if "id" in msg else {}),
                            **({"valid_from": _message_time(i, said)} if said is not None else {})})
        return self._db.add_many(records)



def _message_time(i: int, value: Any) -> datetime:
    """A message's "valid_from": an aware datetime, or an ISO-8601 string with its UTC offset (a
    chat API's JSON carries times as strings); as UTC. Refused naming the message and the value."""
    if isinstance(value, str):
        try:
            value = checks.iso_time("valid_from", value)
        except ValueError as exc:
            raise InvalidMemory(f"message {i}: {exc}") from None
    elif not isinstance(value, datetime):
        raise InvalidMemory(f"message {i}: valid_from must be an aware datetime or an ISO-8601 string with a UTC "
                            f"offset, got {type(value).__name__} {value!r:.80}")
    try:
        t = as_utc("valid_from", value)
    except InvalidMemory as exc:
        raise InvalidMemory(f"message {i}: {exc}") from None
    assert t is not None
    return t


def _content(held: Memory | dict[str, Any]) -> tuple[Any, Any]:
    """(content, namespace) of a stored memory or a spooled record."""
    if isinstance(held, Memory):
        return held.content, held.namespace
    return held.get("content"), held.get("namespace")





__all__ = ["Capture"]
