"""Spaces (S4): the named vector spaces of a store and the checks every vector passes.

A store has a schema of spaces. Each space has a kind (dense | sparse | binary | multivector), a
dimension, a metric, a category (semantic 1.0, relational 0.5, structural 0.5, temporal 0.0: its
weight when spaces vote), a role (recall, fuse, rerank-only, post-retrieval-only) and high/low
similarity thresholds. A memory carries a vector for every space or is refused (all or nothing);
spaces are never compared with each other. The schema is stored in the manifest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from .protocol import Embedding, SpaceKind, SparseBatch, TokenBatch

Category = Literal["semantic", "relational", "structural", "temporal"]
Role = Literal["recall", "fuse", "rerank-only", "post-retrieval-only"]

CATEGORY_WEIGHTS: dict[str, float] = {"semantic": 1.0, "relational": 0.5, "structural": 0.5, "temporal": 0.0}
ROLES = ("recall", "fuse", "rerank-only", "post-retrieval-only")
METRICS: dict[str, tuple[str, ...]] = {
    "dense": ("cosine", "dot", "born"),
    "sparse": ("jaccard", "weighted_jaccard", "bm25"),
    "binary": ("hamming",),
    "multivector": ("maxsim",),
}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class SpaceError(ValueError):
    """A space definition or a vector for it is refused; the message names the space and field."""


@dataclass(frozen=True)
class Space:
    """One named vector space."""

    name: str
    kind: SpaceKind
    dim: int
    metric: str
    category: Category = "semantic"
    role: Role = "recall"
    high: float = 0.8
    low: float = 0.4
    embedder: str | None = None  # name of the embedder that fills it, None = caller-provided only

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise SpaceError(f"space name must be 1-40 of a-z, 0-9, _ starting with a letter, got {self.name!r}")
        if self.kind not in METRICS:
            raise SpaceError(f"space {self.name!r}: kind must be one of {list(METRICS)}, got {self.kind!r}")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1:
            raise SpaceError(f"space {self.name!r}: dim must be an integer >= 1, got {self.dim!r}")
        if self.kind == "binary" and self.dim % 8:
            raise SpaceError(f"space {self.name!r}: a binary space's dim (bits) must be a multiple of 8, got {self.dim}")
        if self.metric not in METRICS[self.kind]:
            raise SpaceError(
                f"space {self.name!r}: metric {self.metric!r} does not apply to {self.kind} spaces "
                f"(use one of {list(METRICS[self.kind])})"
            )
        if self.category not in CATEGORY_WEIGHTS:
            raise SpaceError(f"space {self.name!r}: category must be one of {list(CATEGORY_WEIGHTS)}, got {self.category!r}")
        if self.role not in ROLES:
            raise SpaceError(f"space {self.name!r}: role must be one of {list(ROLES)}, got {self.role!r}")
        for attr in ("high", "low"):
            v = getattr(self, attr)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SpaceError(f"space {self.name!r}: {attr} must be a finite number, got {v!r}")
        if self.low > self.high:
            raise SpaceError(f"space {self.name!r}: low ({self.low}) must not exceed high ({self.high})")

    @property
    def weight(self) -> float:
        """The category weight this space votes with (temporal spaces never vote)."""
        return CATEGORY_WEIGHTS[self.category]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self, value: Any, n: int) -> Embedding:
        """Validate `n` vectors for this space; returns them in canonical dtype and layout.

        Refuses wrong shapes, dtypes, NaN/inf, unsorted sparse ids and ragged offsets, naming the
        space and what was wrong.
        """
        where = f"vectors for space {self.name!r}"
        if self.kind == "dense":
            arr = np.asarray(value)
            if arr.dtype.kind not in "fiu":
                raise SpaceError(f"{where} must be real numbers, got dtype {arr.dtype}")
            if arr.ndim == 1 and n == 1:
                arr = arr[None, :]
            if arr.shape != (n, self.dim):
                raise SpaceError(f"{where} must have shape ({n}, {self.dim}), got {arr.shape}")
            arr = _float32(arr)
            _finite(where, arr, rows=True)
            return arr
        if self.kind == "binary":
            arr = np.asarray(value)
            if arr.ndim == 1 and n == 1:
                arr = arr[None, :]
            if arr.dtype != np.uint8 or arr.shape != (n, self.dim // 8):
                raise SpaceError(
                    f"{where} must be packed bits, uint8 of shape ({n}, {self.dim // 8}), got {arr.dtype} {arr.shape}"
                )
            return np.ascontiguousarray(arr)
        if self.kind == "sparse":
            if not isinstance(value, SparseBatch):
                raise SpaceError(f"{where} must be a SparseBatch, got {type(value).__name__}")
            ip = np.asarray(value.indptr, dtype=np.int64)
            ids = np.asarray(value.indices)
            w = _float32(np.asarray(value.weights))
            if ip.shape != (n + 1,) or ip[0] != 0 or (np.diff(ip) < 0).any() or ip[-1] != ids.shape[0]:
                raise SpaceError(f"{where}: indptr must rise from 0 to len(indices) over {n + 1} entries")
            if ids.dtype.kind not in "iu" or w.shape != ids.shape:
                raise SpaceError(f"{where}: indices must be integers with one weight each")
            if ids.size and (ids.min() < 0 or ids.max() >= min(self.dim, 2**31)):
                raise SpaceError(f"{where}: ids must lie in 0..{min(self.dim, 2**31) - 1}")
            if not np.isfinite(w).all() or (w <= 0).any():
                raise SpaceError(f"{where}: weights must be finite and > 0")
            if ids.size > 1:  # strictly increasing within rows; the step into a new row may drop
                falls = np.diff(ids) <= 0
                inside = np.ones(ids.size - 1, bool)
                starts = ip[1:-1]
                inside[starts[(starts > 0) & (starts < ids.size)] - 1] = False
                bad = np.flatnonzero(falls & inside)
                if bad.size:
                    t = int(np.searchsorted(ip, bad[0], side="right")) - 1
                    raise SpaceError(f"{where}: row {t} ids are not strictly increasing")
            return SparseBatch(ip, ids.astype(np.int32), w)
        if not isinstance(value, TokenBatch):
            raise SpaceError(f"{where} must be a TokenBatch, got {type(value).__name__}")
        if value.table is not None and value.table_rows is not None:
            return self._check_table(where, value, n)
        tok = np.asarray(value.tokens)
        off = np.asarray(value.offsets, dtype=np.int64)
        if tok.ndim != 2 or tok.shape[1] != self.dim or tok.dtype.kind != "f":
            raise SpaceError(f"{where}: tokens must be float of shape (T, {self.dim}), got {tok.dtype} {tok.shape}")
        if off.shape != (n + 1,) or off[0] != 0 or (np.diff(off) < 0).any() or off[-1] != tok.shape[0]:
            raise SpaceError(f"{where}: offsets must rise from 0 to len(tokens) over {n + 1} entries")
        tok = _float32(tok)
        _finite(where, tok, rows=False)
        # the embedder's own int8 codes ride along only with the very tokens they were made from
        return TokenBatch(tok, off, value.codes if tok is value.tokens else None)

    def _check_table(self, where: str, value: TokenBatch, n: int) -> TokenBatch:
        """`check` of a batch held as rows of a table (`TokenBatch.of_rows`): the table's values and
        the row numbers are checked, so every token is, without gathering them; the same refusals."""
        assert value.table is not None and value.table_rows is not None
        tab = np.asarray(value.table)
        rows = np.asarray(value.table_rows)
        off = np.asarray(value.offsets, dtype=np.int64)
        if tab.ndim != 2 or tab.shape[1] != self.dim or tab.dtype.kind != "f":
            raise SpaceError(f"{where}: tokens must be float of shape (T, {self.dim}), got {tab.dtype} "
                             f"(T, {tab.shape[1:]})")
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or (rows.size and (rows.min() < 0 or rows.max() >= len(tab))):
            raise SpaceError(f"{where}: token rows must be integers within the table's {len(tab)} rows")
        if off.shape != (n + 1,) or off[0] != 0 or (np.diff(off) < 0).any() or off[-1] != rows.shape[0]:
            raise SpaceError(f"{where}: offsets must rise from 0 to len(tokens) over {n + 1} entries")
        tab32 = _float32(tab)
        _finite(where, tab32, rows=False)  # a table row no token uses is one of the embedder's: checked too
        return TokenBatch.of_rows(tab32, rows.astype(np.int64, copy=False), off,
                                  value.table_codes if tab32 is value.table else None)


def _float32(arr: np.ndarray) -> np.ndarray:
    """`arr` as C-contiguous float32 (itself when it is one). A float64 beyond float32's range becomes
    inf silently: `_finite` then refuses it by name, without numpy's overflow warning first."""
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


def _finite(where: str, arr: np.ndarray, rows: bool) -> None:
    """Refuse NaN or inf (naming the first row that holds one when `rows`), then rows whose squared
    length overflows float32 (values near 1e19 and up: finite, yet every cosine and dot product the
    kernels take with them would be inf or NaN). One pass over the values when all is well: a NaN
    or inf makes its row's squared length NaN or inf too, so the values are scanned only to say
    which fault a non-finite squared length comes from."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("ij,ij->i", arr, arr, dtype=np.float32)
    if np.isfinite(sq).all():
        return
    bad = ~np.isfinite(arr)
    if bad.any():
        if rows:
            raise SpaceError(f"{where}: row {int(np.argwhere(bad)[0][0])} contains NaN or inf")
        raise SpaceError(f"{where}: tokens contain NaN or inf")
    row = int(np.argwhere(~np.isfinite(sq))[0][0])
    raise SpaceError(f"{where}: row {row} is too long for float32 (its squared length overflows); scale it down")


class Schema:
    """An ordered set of spaces with one main dense space (the first dense one, or named)."""

    def __init__(self, spaces: Iterable[Space], main: str | None = None) -> None:
        self.spaces: dict[str, Space] = {}
        for s in spaces:
            if not isinstance(s, Space):
                raise SpaceError(f"a schema holds Space objects, got {type(s).__name__}")
            if s.name in self.spaces:
                raise SpaceError(f"space {s.name!r} is defined twice")
            self.spaces[s.name] = s
        if not self.spaces:
            raise SpaceError("a schema needs at least one space")
        dense = [s.name for s in self.spaces.values() if s.kind == "dense"]
        if main is None:
            if not dense:
                raise SpaceError("a schema needs a dense space to be its main semantic space")
            main = dense[0]
        if main not in self.spaces or self.spaces[main].kind != "dense":
            raise SpaceError(f"main space {main!r} must be one of the dense spaces {dense}")
        self.main = main

    def __getitem__(self, name: str) -> Space:
        try:
            return self.spaces[name]
        except KeyError:
            raise SpaceError(f"unknown space {name!r}; this store has {list(self.spaces)}") from None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.spaces.values())

    def __len__(self) -> int:
        return len(self.spaces)

    def check_all(self, vectors: Mapping[str, Any], n: int) -> dict[str, Embedding]:
        """All or nothing: a vector batch for every space, each valid, and no unknown space."""
        unknown = sorted(set(vectors) - set(self.spaces))
        if unknown:
            raise SpaceError(f"unknown space(s) {unknown}; this store has {list(self.spaces)}")
        missing = [name for name in self.spaces if name not in vectors]
        if missing:
            raise SpaceError(f"vectors missing for space(s) {missing}: a memory needs a vector in every space")
        return {name: self.spaces[name].check(vectors[name], n) for name in self.spaces}

    def to_dict(self) -> dict[str, Any]:
        return {"main": self.main, "spaces": [s.to_dict() for s in self.spaces.values()]}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Schema:
        return cls([Space(**s) for s in raw["spaces"]], main=raw.get("main"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Schema(main={self.main!r}, spaces={[s.name for s in self.spaces.values()]})"

    def differences(self, other: Schema) -> str:
        """What differs from `other` (the one given), space by space and field by field ("dense.embedder
        'a', given 'b'"): an error about two schemas of the same space names says where they part."""
        said = [f"main {self.main!r}, given {other.main!r}"] if self.main != other.main else []
        if set(self.spaces) == set(other.spaces) and list(self.spaces) != list(other.spaces):
            said.append(f"spaces in the order {list(self.spaces)}, given {list(other.spaces)}")
        for name in dict.fromkeys([*self.spaces, *other.spaces]):
            a, b = self.spaces.get(name), other.spaces.get(name)
            if a is None or b is None:
                said.append(f"space {name!r} {'not given' if b is None else 'only given'}")
                continue
            da, db = a.to_dict(), b.to_dict()
            said += [f"{name}.{k} {da[k]!r}, given {db.get(k)!r}" for k in da if da[k] != db.get(k)]
        return "; ".join(said) or "none"


def default_schema() -> Schema:
    """The default profile: dense semantic + sparse lexical + binary HDC + token multivector.

    Its dense space is the hashing embedder version 2 (negations kept); stores made before it
    name version 1 (`hashing-384`, `hdc-1024`) and keep it (see `profiles.earlier_schemas`)."""
    return Schema(
        [
            Space("dense", "dense", 384, "cosine", "semantic", "recall", 0.8, 0.4, embedder="hashing2-384"),
            Space("lexical", "sparse", 2**31, "jaccard", "structural", "recall", 0.5, 0.1, embedder="lexical"),
            Space("hdc", "binary", 1024, "hamming", "semantic", "fuse", 0.8, 0.55,
                  embedder="hdc-1024-of-hashing2-384-v2"),
            Space("tokens", "multivector", 128, "maxsim", "semantic", "rerank-only", 0.8, 0.4, embedder="tokens-128"),
        ],
        main="dense",
    )


def match_strength(best_main: float | None, high: float, low: float) -> float:
    """How much the main space's ranking is worth for this query, 0..1: linear from its `low`
    threshold (0) to its `high` threshold (1) on its best score."""
    if best_main is None or not high > low:
        return 1.0 if best_main is not None else 0.0
    return min(1.0, max(0.0, (best_main - low) / (high - low)))
