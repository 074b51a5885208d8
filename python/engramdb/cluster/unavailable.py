"""The one error a cluster call adds to the store's own: a shard that did not answer."""

from __future__ import annotations

from collections.abc import Iterable


class ShardUnavailable(RuntimeError):
    """A shard's actor did not answer (it is restarting, its node is gone, Ray is not running, or
    the call's timeout passed). Retryable, with care for writes: a write may have landed although
    its reply did not arrive, and only the same ids make sending it again store nothing twice.
    `ids` holds the ids the client gave the write's memories (empty for other calls): send the
    write again with them (`id=` / each record's "id") and it is stored once. `shard` names the
    shard; `why` is what Ray said."""

    def __init__(self, shard: str, why: str, ids: Iterable[str] = ()) -> None:
        self.shard = shard
        self.why = why
        self.ids: tuple[str, ...] = tuple(ids)
        again = (f"; the write may have landed: send it again with the same ids (ShardUnavailable.ids, "
                 f"{len(self.ids)}) and it is stored once") if self.ids else ""
        super().__init__(f"shard {shard!r} is unavailable (retry the call): {why}{again}")

    def __reduce__(self) -> tuple[type[ShardUnavailable], tuple[str, str, tuple[str, ...]]]:
        return type(self), (self.shard, self.why, self.ids)


__all__ = ["ShardUnavailable"]
