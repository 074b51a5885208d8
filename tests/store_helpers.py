"""A small schema and a deterministic toy embedder so store tests need no model and run fast."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from engramdb import Tuning
from engramdb.spaces.protocol import TokenBatch
from engramdb.spaces.schema import Schema, Space


class ToyDense:
    """Deterministic dense vectors from a text hash (only equality of texts is meaningful)."""

    name = "toy-dense"
    version = "1"
    kind = "dense"

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(self.dim)
            out[i] = v / np.linalg.norm(v)
        return out


class ToyBits:
    """Sign bits of ToyDense, packed."""

    name = "toy-bits"
    version = "1"
    kind = "binary"
    dim = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.packbits(ToyDense(64).embed(texts) > 0, axis=1)


def toy_schema() -> Schema:
    return Schema([Space("dense", "dense", 8, "cosine"), Space("bits", "binary", 64, "hamming", role="fuse")])


def int8_tokens(tokens: np.ndarray) -> np.ndarray:
    """What format 5 gives back for these token vectors: int8 codes round(x / s), s = max |x| / 127
    per token, times s (float32)."""
    t = np.asarray(tokens, np.float32)
    s = np.abs(t).max(axis=1) / np.float32(127.0)
    q = np.clip(np.rint(np.divide(t, s[:, None], out=np.zeros_like(t), where=s[:, None] > 0)), -127, 127)
    out: np.ndarray = q.astype(np.int8).astype(np.float32) * s[:, None]
    return out


def golden_schema() -> Schema:
    """The schema of tests/golden/store-v5 on: the toy spaces and 4-d tokens (format 5 stores
    tokens as int8 codes with a scale each)."""
    return Schema([*toy_schema(), Space("toks", "multivector", 4, "maxsim", role="rerank-only")])


def golden_tokens(i: int) -> TokenBatch:
    """Memory i's two tokens in the golden store: values float16 cannot hold exactly (1/3, 0.1)."""
    t = np.array([[1 / 3, -0.1, i, 0.0], [0.0, 0.5, -1 / 3, i / 7]], np.float32)
    return TokenBatch(t, np.array([0, 2], np.int64))


def toy_embedders() -> dict[str, object]:
    return {"dense": ToyDense(8), "bits": ToyBits()}


def small_trees(min_rows: int, leaf_size: int, **more: Any) -> Tuning:
    """Tuning that gives namespaces of `min_rows` memories centroid trees of `leaf_size`-memory
    leaves, so tests reach the tree paths with small stores."""
    return Tuning(tree_min_rows=min_rows, tree_leaf_size=leaf_size, **more)


def flipped_copies(golden: Path, name: str, dest: Path, samples: int) -> list[str]:
    """Copies of the golden store folder `golden` under `dest`, each with one byte of its file
    `name` flipped (XOR 0x41), at `samples` positions spread over the file; their paths."""
    raw = (golden / name).read_bytes()
    folders = []
    for pos in range(0, len(raw), max(1, len(raw) // samples)):
        copy = dest / f"f{pos}"
        shutil.copytree(golden, copy)
        data = bytearray(raw)
        data[pos] ^= 0x41
        (copy / name).write_bytes(bytes(data))
        folders.append(str(copy))
    return folders


def bit_flipped_copies(base: Path, name: str, clean: bytes, dest: Path, trials: int, seed: int) -> list[str]:
    """Copies of the store folder `base` under `dest`, each holding the file `name` as `clean`
    with 1 to 4 random bits flipped (trial t: 1 + t % 4), seeded; their paths."""
    rng = random.Random(seed)
    folders = []
    for trial in range(trials):
        copy = dest / f"s{trial}"
        shutil.copytree(base, copy)
        raw = bytearray(clean)
        for _ in range(1 + trial % 4):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        (copy / name).parent.mkdir(exist_ok=True)
        (copy / name).write_bytes(bytes(raw))
        folders.append(str(copy))
    return folders


def shown_long_ago(folder: Path, namespace: str, shown: Sequence[str], used: str, days: float,
                   times: int = 6) -> None:
    """Searches of `days` ago, in the access log of the store in `folder` (closed: the storage
    layer's seam writes the log), that showed `shown` scoring nothing and used only `used`. The
    store reads them into its ratings when it opens or updates: the others were first shown, and
    lost, that long ago, so by now they are LOW (E3: decayed toward 800, unused since)."""
    import uuid
    from datetime import datetime, timedelta, timezone

    from engramdb.storage.access_log import access_log

    log = access_log(folder, writable=True)
    at = datetime.now(timezone.utc) - timedelta(days=days)
    for _ in range(times):
        base = {"query_id": uuid.uuid4().hex, "namespace": namespace, "session_id": None, "at": at,
                "strategy": "hybrid"}
        log.append([{**base, "kind": "search", "query": "xylophone zebra", "memory_id": mid, "rank": r + 1,
                     "score": 0.0, "used": False, **({"latency_ms": 1.0} if r == 0 else {})}
                    for r, mid in enumerate([*shown, used])])
        log.append([{**base, "kind": "feedback", "query": None, "memory_id": used, "rank": None, "score": None,
                     "used": True}])
    log.flush()


def fork_child(note: Path, work: Callable[[], Any]) -> int:
    """Fork; the child runs `work()` (killed after 60 s: a child that hangs on a lock or a future
    of its parent's threads fails the test instead of hanging it) and writes what it returns to
    `note`. Returns the child's exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.alarm(60)
        try:
            note.write_text(str(work()))
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
