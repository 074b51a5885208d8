"""Ray at the edge: shard and replica actors made (or found by name) and called, with Ray's
failures turned into `ShardUnavailable` and an actor's own exception re-raised as itself.

An actor is named after its shard and folder, so every client in one Ray namespace (the
`namespace=` of `ray.init`) reaches the same single writer of a folder: a second client never
opens a second writer, it finds the first. Ray restarts a dead actor (`max_restarts=-1`: as
often as it dies) and retries the calls it was running, up to `TASK_RETRIES` times each (a call
that kills its actor every time it runs ends as `ShardUnavailable` instead of restarting the actor
forever); the restarted actor opens its folder again, which replays the WAL.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

import ray
import ray.exceptions

from .replica import Replica
from .shard import Shard
from .unavailable import ShardUnavailable

TASK_RETRIES = 10  # restarts one call may live through (a writer killed twice in one call is rare)
# failures of the actor or the call, not of the verb: the call may be sent again
_UNAVAILABLE = (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ray.exceptions.ObjectLostError,
                ray.exceptions.TaskCancelledError, ray.exceptions.RaySystemError)


def actor_name(shard: str, path: str, role: str = "writer") -> str:
    """The Ray actor name of a shard's writer (or a replica): the shard's name and its folder's."""
    where = hashlib.blake2b(os.path.abspath(path).encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"engramdb/{shard}/{where}/{role}"


def start_writer(shard: str, path: str, open_kwargs: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
    """The shard's writer actor, found by name or started."""
    cls: Any = ray.remote(Shard)
    return cls.options(name=actor_name(shard, path), get_if_exists=True, max_restarts=-1,
                       max_task_retries=TASK_RETRIES, **options).remote(shard, path, dict(open_kwargs))


def start_replica(shard: str, path: str, i: int, open_kwargs: Mapping[str, Any], refresh_seconds: float,
                  options: Mapping[str, Any]) -> Any:
    """Read replica `i` of a shard, found by name or started."""
    cls: Any = ray.remote(Replica)
    opts = {k: v for k, v in options.items() if k != "max_concurrency"}  # one read at a time: reopening is safe
    return cls.options(name=actor_name(shard, path, f"replica{i}"), get_if_exists=True, max_restarts=-1,
                       max_task_retries=TASK_RETRIES, **opts).remote(shard, path, dict(open_kwargs), actor_name(shard, path),
                                                               refresh_seconds)


def send(shard: str, handle: Any, method: str, *args: Any) -> Any:
    """`handle.method(*args)` sent to the actor; its object ref (`wait` gives the result)."""
    if not ray.is_initialized():  # else Ray starts a new local cluster, where the actor is not
        raise ShardUnavailable(shard, "Ray is not running in this process (ray.init was not called, or "
                                      "ray.shutdown ended it); start it and make the Cluster again")
    try:
        return getattr(handle, method).remote(*args)
    except _UNAVAILABLE as exc:
        raise ShardUnavailable(shard, f"{type(exc).__name__}: {exc}") from None


def call(shard: str, handle: Any, method: str, *args: Any, timeout: float | None) -> Any:
    """`handle.method(*args)` on the actor, waited for at most `timeout` seconds (see `wait`)."""
    return wait(shard, send(shard, handle, method, *args), timeout=timeout)


def wait(shard: str, ref: Any, *, timeout: float | None) -> Any:
    """The result of a call sent to a shard's actor. The verb's own errors (StoreError,
    ValueError, ...) come back as themselves; the actor's or Ray's failures as `ShardUnavailable`
    naming the shard."""
    try:
        return ray.get(ref, timeout=timeout)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, Exception):
            raise cause from None
        raise ShardUnavailable(shard, f"{type(exc).__name__}: {exc}") from None
    except _UNAVAILABLE as exc:
        raise ShardUnavailable(shard, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def kill(handle: Any) -> None:
    """End an actor for good (no restart)."""
    try:
        ray.kill(handle, no_restart=True)
    except (ValueError, ray.exceptions.RayError):
        pass


__all__ = ["actor_name", "call", "kill", "send", "start_replica", "start_writer", "wait"]
