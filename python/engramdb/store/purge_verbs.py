"""What a purge (`Store.purge`, S7) does besides rewriting the segments: its arguments checked
and the spool taken in first, then the purged memories taken out of everything derived from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..context.lines import forget_made
from ..context.tokens import forget_counts
from ..model import checks
from ..model.errors import StoreError
from ..spaces.query import forget_queries
from ..storage import set_aside
from ..storage.view import View

if TYPE_CHECKING:
    from .facade import Store


class Purging:
    """The derived-data side of `Store.purge`."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def request(self, ids: str | Iterable[str] | None, namespace: str | None) -> list[str]:
        """`purge`'s arguments checked (before anything is written), then everything waiting in the
        spool for this writer taken in (captures, readers' access rows), so the purge covers it."""
        if namespace is not None:
            checks.name("namespace", namespace)
            if ids is not None:
                # read as "these ids of that namespace" (the cluster client's purge means that) it
                # would remove the whole namespace besides, even for ids a filter left empty: refused
                raise ValueError(f"purge takes ids or namespace=, not both: namespace={namespace!r} removes every "
                                 "memory of that namespace, not only the ids given; call purge(ids) for those")
        out = [] if ids is None else checks.id_list(
            "ids", [ids] if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable) else ids)
        while (drained := self._db._capture.drain_spool()) is not None and drained["files"]:
            pass
        return out

    def derived(self, view: View, ids: list[str], namespace: str | None) -> None:
        """What `Store.purge` does before the segments are rewritten, with the writer's lock and
        the topics' lock held: refuse an unknown id, then take the purged memories (`ids`, and
        every memory of `namespace`) out of everything derived from them: the access and ELO logs
        and the ratings (E1-E5; the searches that found nothing of a namespace purged whole, or
        whose every memory is purged, too), the curiosity queue (K7), topics, themes and their
        history (C4, H8), the tier state (H7), and the caches that held their text, ids or vectors
        (searches, type names, query vectors, list orders), and any damaged file the store set
        aside that holds them (storage/set_aside.py). A failure here raises with every memory as
        it was."""
        for mid in sorted(set(ids)):
            if view.key_of(mid) is None:
                raise StoreError(f"no memory with id {mid!r} to purge")
        gone = set(ids)
        if namespace is not None:
            gone |= set(view.ids_at(view.current_locs(namespace, include_forgotten=True)))
        whole = {namespace} if namespace is not None else set()
        touched = set(whole)
        for mid in gone:
            loc = view.loc_of(mid)
            if loc is not None:
                touched.add(view.namespace_at(loc))
        # ids that are all a namespace holds purge it whole: its searches that found nothing name no
        # memory, and are its text all the same
        whole |= {ns for ns in touched - whole
                  if all(mid in gone for mid in view.ids_at(view.current_locs(ns, include_forgotten=True)))}
        self._db._usage.purge(gone, whole)
        self._db.curiosity._forget(gone, whole)
        self._db.topics._forget_topics(touched, gone, whole)
        self._db.lifecycle._consolidation.forget_tiers(gone)
        if self._db.path is not None and not self._db.read_only:  # damaged files set aside may hold them too
            set_aside.scrub(self._db.path, gone, whole)
        self._db._search_cache = None
        self._db._types_cache = None
        self._db._pages.clear()  # the page orders of list() (ids and locations)
        forget_queries(self._db.embedders.values())  # the query vectors embedded for searches (keyed by their text)
        self._db._context._forget_maps()  # the topic maps of contexts (members' ids, labels)
        forget_made()  # the context lines made (their text)
        forget_counts()  # the token counts kept (keyed by their text)


__all__ = ["Purging"]
