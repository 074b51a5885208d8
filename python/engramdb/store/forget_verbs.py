"""Forgets the engine's own verbs make, recorded (S7, issue 25; see `engramdb.lifecycle.forgetting`):
who forgot each memory and why, the dream's proposals listed and confirmed.

Mixed into `Store` (under the upkeep verbs). A recorded forget is one write: every memory it
forgets (and the edges a dream proposes with them) is checked first, then written in one batch,
durable together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..graph import links
from ..lifecycle import forgetting
from ..model import checks
from ..model.edge import Edge
from ..model.memory import Memory, micros, utc_now, validate_memory
from ..storage.view import View

if TYPE_CHECKING:
    from .facade import Store

LinkSpec = tuple[str, str, str, float, str]  # src, dst, type, confidence, reason


def changed(view: View, mid: str, version: int) -> str | None:
    """Why a memory is no longer as a verb judged it (live, not archived, at `version`), or None
    when it still is."""
    m = view.get(mid, include_forgotten=True)
    if m is None:
        return "purged meanwhile"
    if m.forgotten_at is not None:
        return "forgotten meanwhile"
    if mid in view.archived:
        return "archived meanwhile"
    if m.version != version:
        return f"changed meanwhile (version {version} -> {m.version})"
    return None


class Forgetting:
    """Forgets the engine proposes and a person confirms, behind `db.lifecycle`."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def record(self, reasons: Mapping[str, str], by: str, *, confirmed: bool,
                         edges: Sequence[LinkSpec] = (), judged: Mapping[str, int] | None = None,
                         along: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """Forget the memories `reasons` names (id -> why), each forgotten version recording `by`,
        its reason and `confirmed`, and link `edges`, in one write. Every memory is checked before
        anything is written: one archived, forgotten or gone meanwhile refuses the whole call.

        With `judged` (id -> the version a verb decided on, for every memory it names), what
        changed since is left instead: a forget whose memory, or the memory it depends on
        (`along`: id -> the original a copy repeats), is no longer at its judged version, and an
        edge either end of which is not. Returns the ids forgotten and those left (id -> why)."""
        with self._db._engine.writing() as view:
            skipped: dict[str, str] = {}
            if judged is not None:
                def why(mid: str) -> str | None:
                    return changed(view, mid, judged.get(mid, 0))

                for mid in reasons:
                    w = why(mid) or (why(along[mid]) if along and mid in along else None)
                    if w is not None:
                        skipped[mid] = f"not forgotten: {w}"
                kept = []
                for spec in edges:
                    w_src, w_dst = why(spec[0]), why(spec[1])
                    if w_src is None and w_dst is None:
                        kept.append(spec)
                    else:
                        end, other = (spec[0], spec[1]) if w_src is not None else (spec[1], spec[0])
                        skipped.setdefault(end, f"not linked to {other}: {w_src or w_dst}")
                reasons, edges = {mid: r for mid, r in reasons.items() if mid not in skipped}, kept
            made = self.check(view, reasons, edges)
            now = utc_now()
            at = micros(now)
            news: list[Memory] = []
            given: list[Mapping[str, Any]] = []
            for mid, reason in reasons.items():
                old = links.current(view, mid)
                meta = {**old.metadata, forgetting.KEY: forgetting.record(by, reason, at, confirmed=confirmed)}
                news.append(validate_memory(old.with_changes(version=old.version + 1, learned_at=now, forgotten_at=now,
                                                             metadata=meta), old))
                given.append(view.row_vectors(mid))
            if news:
                self._db._write(news, given, made)
            elif made:
                self._db._engine.append_edges(made)
        return list(reasons), skipped

    @staticmethod
    def check(view: View, reasons: Mapping[str, str], edges: Sequence[LinkSpec] = ()) -> list[Edge]:
        """What `_forget_recorded` checks, on `view`, writing nothing: every memory current (not
        archived, not forgotten), every edge valid and joining none of them. Returns the edges."""
        for mid in reasons:
            links.current(view, mid)
        for src, dst, *_ in edges:
            if src in reasons or dst in reasons:
                raise ValueError(f"an edge {src!r} -> {dst!r} would join a memory this write forgets")
        return [links.edge_for(view, src, dst, kind, conf, reason, None, None) for src, dst, kind, conf, reason in edges]

    def forget_proposals(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """`LifecycleVerbs.forget_proposals`."""
        if namespace is not None:
            checks.name("namespace", namespace)
        view = self._db._view()
        out = []
        locs = view.current_locs(namespace, include_forgotten=True)
        for loc, forgotten in zip(locs, view.column_at("forgotten", locs).tolist()):
            if not forgotten:
                continue
            m = view.memory_at(*loc)
            rec = forgetting.of(m)
            if rec is not None and not forgetting.purgeable(m):
                out.append({"id": m.id, "namespace": m.namespace, "by": rec.get("by"), "reason": rec.get("reason"),
                            "forgotten_at": m.forgotten_at, "content": m.content[:200]})
        return sorted(out, key=lambda d: (d["forgotten_at"], d["id"]))

    def confirm_forgotten(self, ids: str | Iterable[str]) -> list[str]:
        """`LifecycleVerbs.confirm_forgotten`."""
        if not isinstance(ids, (str, Iterable)) or isinstance(ids, bytes):
            raise TypeError(f"ids must be a memory id or an iterable of them, got {ids!r:.80}")
        wanted = [ids] if isinstance(ids, str) else list(ids)
        bad = [i for i in wanted if not isinstance(i, str) or not i]
        if bad:
            raise TypeError(f"ids must be memory ids (non-empty strings), got {bad[0]!r}")
        for i in wanted:
            checks.utf8("ids", i, ValueError)
        with self._db._engine.writing() as view:
            now = utc_now()
            news: list[Memory] = []
            given: list[Mapping[str, Any]] = []
            for mid in dict.fromkeys(wanted):
                m = links.current(view, mid, include_forgotten=True)
                if m.forgotten_at is None:
                    raise ValueError(f"ids: memory {mid!r} is not forgotten: there is no forget to confirm")
                rec = forgetting.of(m)
                if rec is None or forgetting.purgeable(m):
                    continue
                meta = {**m.metadata, forgetting.KEY: forgetting.confirmed(rec, micros(now))}
                news.append(validate_memory(m.with_changes(version=m.version + 1, learned_at=now, metadata=meta), m))
                given.append(view.row_vectors(mid))
            if news:
                self._db._write(news, given)
        return [m.id for m in news]


__all__ = ["Forgetting", "changed"]
