"""A static embedding distilled from all-MiniLM-L6-v2 (issue 28): a lookup table, no model at run time.

Made by bench/distill_static.py as model2vec does: each WordPiece vocabulary token through MiniLM,
PCA to 256 dimensions, a SIF weight per token. A text's vector is the weighted mean of its tokens'
rows, L2-normalised, so embedding costs a tokenisation and a gather: what the hashing space costs,
not a transformer's forward pass.

The folder it reads (``path``; default ``~/.cache/engramdb/static-minilm-l6-v2-256``, or the
``ENGRAMDB_STATIC_EMBEDDING`` environment variable):

- ``embeddings.npz``: ``rows`` int8 (V, dim), ``scales`` float32 (V,) (a token's row is
  ``rows[t] * scales[t]``), ``weights`` float32 (V,);
- ``vocab.txt``: the MiniLM WordPiece vocabulary the rows follow;
- ``config.json``: how it was made (not needed to embed).

Tokens are the repo's pure-Python WordPiece ids (`wordpiece.py`; with its word cache it measured
4x faster here than the ``tokenizers`` package's batch call, same ids), without ``[CLS]``/``[SEP]``
and without truncation: a long text is the mean of all its tokens. The version is a hash of ``embeddings.npz``
and ``vocab.txt``, and the static profile's dense space names it (spaces/profiles.py), so vectors of two
different distillations are never mixed in one space.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .protocol import SpaceKind
from .wordpiece import WordPieceTokenizer

__all__ = ["DEFAULT_PATH", "ENV_VAR", "NAME", "StaticEmbedder", "StaticEmbeddingMissing", "default_path", "installed"]

NAME = "static-minilm-l6-v2"
ENV_VAR = "ENGRAMDB_STATIC_EMBEDDING"
DEFAULT_PATH = Path.home() / ".cache" / "engramdb" / "static-minilm-l6-v2-256"
_MAX_TOKENS = 1 << 62  # no truncation: the tokeniser takes a maximum, a static mean needs none
_SHORT = 4096  # tokens summed in float32 in one gather; longer texts sum blocks of this in float64


class StaticEmbeddingMissing(FileNotFoundError):
    """The static embedding's folder or one of its files is missing or unreadable."""


def default_path() -> Path:
    """Where the static embedding is read from when no path is given."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_PATH


_INSTALLED: dict[tuple[str, int, int, int, int], StaticEmbedder] = {}


def installed() -> StaticEmbedder:
    """The table at `default_path()`, read once while its file stays the same (a profile's schema
    names its version and its embedder fills the space: one read for both)."""
    d = default_path()
    try:
        st = (d / "embeddings.npz").stat()
    except OSError:
        return StaticEmbedder(d)  # raises StaticEmbeddingMissing naming what is missing
    key = (str(d.resolve()), st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)  # ctime: a copy keeping mtime
    got = _INSTALLED.get(key)
    if got is None:
        got = _INSTALLED[key] = StaticEmbedder(d)
    return got


def _missing(path: Path, what: str) -> StaticEmbeddingMissing:
    return StaticEmbeddingMissing(
        f"static embedding at {str(path)!r}: {what}. Make it with "
        f"`OMP_NUM_THREADS=1 python bench/distill_static.py --out {path}` (needs the MiniLM weights "
        f"package), or point {ENV_VAR} / path= at a folder made that way"
    )


class StaticEmbedder:
    """Dense (n, dim) float32 unit rows: the SIF-weighted mean of a text's token rows.

    ``path``: the folder bench/distill_static.py wrote (default: `default_path()`). A text with no tokens (empty, only spaces) gets the
    zero row, as the hashing embedder gives. Raises `StaticEmbeddingMissing` (a FileNotFoundError)
    naming the path when the folder or a file is missing, ValueError when the files disagree.
    """

    name = NAME
    kind: SpaceKind = "dense"

    def __init__(self, path: str | Path | None = None):
        d = Path(path) if path is not None else default_path()
        self.path = d
        if not d.is_dir():
            raise _missing(d, "no such folder")
        npz, vocab = d / "embeddings.npz", d / "vocab.txt"
        for f in (npz, vocab):
            if not f.is_file():
                raise _missing(d, f"{f.name} is missing")
        try:
            with np.load(npz, allow_pickle=False) as z:
                rows, scales, weights = z["rows"], z["scales"], z["weights"]
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise _missing(d, f"embeddings.npz is unreadable ({e})") from e
        v = rows.shape[0] if rows.ndim == 2 else -1
        if rows.dtype != np.int8 or v < 1 or scales.shape != (v,) or weights.shape != (v,):
            raise ValueError(
                f"static embedding at {str(d)!r}: embeddings.npz needs int8 rows (V, dim) and "
                f"scales, weights (V,); got rows {rows.dtype} {rows.shape}, scales {scales.shape}, "
                f"weights {weights.shape}"
            )
        self.wordpiece = WordPieceTokenizer(vocab, _MAX_TOKENS)
        if len(self.wordpiece.inv_vocab) != v:
            raise ValueError(
                f"static embedding at {str(d)!r}: vocab.txt has {len(self.wordpiece.inv_vocab)} "
                f"tokens but embeddings.npz has {v} rows"
            )
        self.dim = int(rows.shape[1])
        # One float32 table with scale and weight folded in: pooling is a gather and a sum.
        self._table = rows.astype(np.float32) * (scales.astype(np.float32) * weights.astype(np.float32))[:, None]
        # the table and its vocabulary: the same rows under another vocabulary are another embedding
        self.version = "sha256-" + hashlib.sha256(npz.read_bytes() + b"\0" + vocab.read_bytes()).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"StaticEmbedder(path={str(self.path)!r}, dim={self.dim}, version={self.version!r})"

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's WordPiece ids, without ``[CLS]``/``[SEP]``."""
        return [self.wordpiece.encode(t)[1:-1] for t in texts]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised (zero rows for texts without tokens)."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
        ids = self.token_ids(texts)
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        table = self._table
        # One gather and sum per text: measured faster than one np.add.reduceat (or cumsum) over a
        # block of texts, whose axis-0 reduction numpy does not vectorise well.
        for i, t in enumerate(ids):
            if len(t) <= _SHORT:
                if t:
                    out[i] = table[t].sum(axis=0)
                continue
            acc = np.zeros(self.dim, dtype=np.float64)  # a long text: float64, a block at a time
            for s in range(0, len(t), _SHORT):
                acc += table[t[s : s + _SHORT]].sum(axis=0, dtype=np.float64)
            out[i] = acc
        # The weighted mean divides by the weights' sum; the L2 norm that follows makes that moot.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms > 0, norms, np.float32(1.0))
        return out
