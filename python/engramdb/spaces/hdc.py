"""`BinaryHDCEmbedder`: binary hyperdimensional codes by sign random projection (S5, N4).

Bit j of a text's code is ``<x, r_j> > 0`` where x is the text's embedding in a dense base space
and r_1..r_bits are random directions (normalised Gaussian vectors: Charikar's SimHash). For
unit x and y at angle theta, each bit differs with probability theta / pi, so
``hamming(x, y) / bits`` estimates
``theta / pi`` with standard deviation ``sqrt(p (1 - p) / bits)`` (at most 0.016 for 1,024 bits):
Hamming ranking approximates cosine ranking of the base space.

The projection matrix (base.dim, bits) is fixed by (base.name, base.version, base.dim, bits,
seed): it is drawn from ``np.random.default_rng(SeedSequence(...))``'s PCG64 bit stream (raw
64-bit words, whose stream NumPy keeps stable across versions, unlike its distribution methods)
turned into standard normals by Box-Muller in float64, each column then scaled to unit norm
(which changes no sign). Codes are ``np.packbits`` of the
(n, bits) sign matrix (bit 0 is the most significant bit of byte 0).

Bits are the signs of the float64 projections, so a text's code is the same alone or in any batch
and on any BLAS: the product runs in float32 (fast), and every entry whose float32 value lies
within the rounding-error bound ``1.01 * (dim + 2) * 2^-24 * |x|`` of 0 (a few in 10,000) is
recomputed in float64. A plain float32 sign would depend on the BLAS kernel's summation order
for about one 1,024-bit code in a thousand. A zero dense row (empty text) gives the all-zero code.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import numpy as np

from ..kernels.blas_threads import one_blas_thread
from ..kernels.codes import near_signs, sign_bits
from .protocol import Embedder, SpaceKind

__all__ = ["DEFAULT_SEED", "BinaryHDCEmbedder", "projection_matrix"]

DEFAULT_SEED = 0x5EED
_DEFAULT_BASE = ("hashing-384", "1")  # the base whose codes are named plainly "hdc-<bits>"
_CHUNK = 2048  # rows per projection block (bounds the float32 temporaries)


def projection_matrix(key: str, dim: int, bits: int, seed: int) -> np.ndarray:
    """(dim, bits) float64 matrix of unit columns (normalised standard normals: uniformly random
    directions) fixed by (key, dim, bits, seed)."""
    kh = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=16).digest(), "little")
    ss = np.random.SeedSequence([seed, kh, dim, bits])
    size = dim * bits
    raw = np.random.default_rng(ss).bit_generator.random_raw(2 * ((size + 1) // 2))
    u = (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53  # [0, 1), 53 bits
    half = u.shape[0] // 2
    radius = np.sqrt(-2.0 * np.log(1.0 - u[:half]))  # 1 - u in (0, 1]
    angle = 2.0 * np.pi * u[half:]
    z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:size]
    mat = z.reshape(dim, bits)
    out: np.ndarray = mat / np.sqrt(np.einsum("ij,ij->j", mat, mat))
    return out


@functools.lru_cache(maxsize=16)
def _matrices(key: str, dim: int, bits: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The projection (float64), its float32 copy and its columns as rows, made once per process
    and shared, read-only, by every embedder of those settings: 35-60 ms of each store's open on
    a 2-core machine when every open made them again, whether or not it then embedded a text (a
    reader's search and context never do)."""
    p64 = projection_matrix(key, dim, bits, seed)
    out = (p64, p64.astype(np.float32), np.ascontiguousarray(p64.T))
    for a in out:
        a.setflags(write=False)
    return out


def _norms(x: np.ndarray) -> np.ndarray:
    """Each row's L2 norm as float32 for the sign bound: summed in float32 (within ~dim * 2^-24 of the
    float64 norm, which the bound's 1% slack covers; a float64 sum of float32 rows cast every value
    first and cost 6x more), rows whose float32 sum could lose more (norm under 1e-15: their squares
    near float32's subnormals; or overflowing) summed in float64, as all were before."""
    xn: np.ndarray = np.sqrt(np.einsum("ij,ij->i", x, x))
    odd = ~(xn >= 1e-15) | ~np.isfinite(xn)
    if odd.any():
        xo = x[odd]
        xn[odd] = np.sqrt(np.einsum("ij,ij->i", xo, xo, dtype=np.float64)).astype(np.float32)
    return xn


class BinaryHDCEmbedder:
    """Sign random projection of a dense embedder into `bits`-bit packed codes (kind "binary").

    Args:
        base: a dense `Embedder` (its rows should be unit or zero vectors).
        bits: code length, a positive multiple of 8 (default 1024).
        seed: the projection's seed (default `DEFAULT_SEED`).

    `name` is ``hdc-<bits>`` over the default base (``hashing-384`` version 1) with the default
    seed, and otherwise says what differs (``hdc-1024-seed7-of-mybase-v2``), so two spaces share a
    name only when they share codes.
    """

    version = "1"
    kind: SpaceKind = "binary"

    def __init__(self, base: Embedder, bits: int = 1024, seed: int = DEFAULT_SEED) -> None:
        if base.kind != "dense":
            raise ValueError(f"base must be a dense embedder, got kind {base.kind!r}")
        if not isinstance(bits, int) or bits <= 0 or bits % 8:
            raise ValueError(f"bits must be a positive multiple of 8, got {bits!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.base = base
        self.bits = bits
        self.seed = seed
        self.dim = bits
        name = f"hdc-{bits}"
        if seed != DEFAULT_SEED:
            name += f"-seed{seed}"
        if (base.name, base.version) != _DEFAULT_BASE:
            name += f"-of-{base.name}-v{base.version}"
        self.name = name
        self._key = (f"{base.name}\x00{base.version}", base.dim, bits, seed)  # the projection: made at first use
        # float32 error bound of <x, r_j> for unit r_j: _gamma * |x| (incl. rounding r_j to float32)
        self._gamma = 1.01 * (base.dim + 2) * 2.0**-24

    def prepare(self) -> None:
        """Make the projection now (a writer's open does), not in the first `embed`."""
        _matrices(*self._key)

    @property
    def _proj64(self) -> np.ndarray:
        return _matrices(*self._key)[0]

    @property
    def _proj32(self) -> np.ndarray:
        return _matrices(*self._key)[1]

    @property
    def _cols64(self) -> np.ndarray:  # (bits, dim): r_j as a contiguous row
        return _matrices(*self._key)[2]

    def __repr__(self) -> str:
        return f"BinaryHDCEmbedder({self.base!r}, bits={self.bits}, seed={self.seed})"

    def project(self, dense: np.ndarray) -> np.ndarray:
        """Codes of already-embedded base vectors: (n, base.dim) -> (n, bits // 8) uint8."""
        x = np.ascontiguousarray(dense, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.base.dim:
            raise ValueError(f"dense must have shape (n, {self.base.dim}), got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("dense holds NaN or inf")
        out = np.empty((x.shape[0], self.bits // 8), dtype=np.uint8)
        for a in range(0, x.shape[0], _CHUNK):
            xc = x[a : a + _CHUNK]
            # a few rows (one add, a query) skip BLAS: its threads, woken for a tiny product on a
            # busy machine, cost 10-30 ms where this loop costs 0.1; the bits are the same (the
            # recheck below settles every sign the float32 error bound leaves open, whatever the order)
            if len(xc) > 8:
                with one_blas_thread():  # BLAS's spinning threads would compete with the ingest
                    y = xc @ self._proj32
            else:
                y = np.einsum("ij,jk->ik", xc, self._proj32, optimize=False)
            xn = _norms(xc)
            t = (self._gamma * xn).astype(np.float32, copy=False)
            t[xn == 0] = -1.0  # zero rows: all bits 0, nothing to recheck
            # one native pass: the packed signs, and the entries within the bound left open (what
            # packbits of y > 0 and the near mask made in numpy passes as large as y)
            bits, near = sign_bits(y, t)
            if near.size:
                # each open entry's float64 product in one native pass (numpy's gathers of its rows
                # and columns as float64 cost ~0.7 ms a 700-row batch, most of it fresh memory)
                r, c = np.divmod(near[near_signs(xc, self._cols64, near)], self.bits)
                np.bitwise_or.at(bits, (r, c >> 3), (0x80 >> (c & 7)).astype(np.uint8))
            out[a : a + _CHUNK] = bits
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), bits // 8) uint8 packed codes of the base space's embeddings."""
        dense = self.base.embed(texts)
        if not isinstance(dense, np.ndarray):
            raise TypeError(f"base embedder {self.base.name!r} did not return a dense array")
        return self.project(dense)
