"""The one error a cluster call adds to the store's own: a shard that did not answer."""

from __future__ import annotations


class ShardUnavailable(RuntimeError):
    """A shard's actor did not answer (it is restarting, its node is gone, or the call's timeout
    passed). Retryable: writes carry ids given by the client, so sending the same call again never
    stores twice. `shard` names the shard; `why` is what Ray said."""

    def __init__(self, shard: str, why: str) -> None:
        super().__init__(f"shard {shard!r} is unavailable (retry the call): {why}")
        self.shard = shard
        self.why = why

    def __reduce__(self) -> tuple[type[ShardUnavailable], tuple[str, str]]:
        return type(self), (self.shard, self.why)


__all__ = ["ShardUnavailable"]
