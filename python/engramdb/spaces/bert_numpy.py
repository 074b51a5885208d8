"""BertModel (all-MiniLM-L6-v2's shape) forward pass in plain numpy: the fallback runtime.

6 layers, 12 heads, hidden 384, FFN 1536, exact-erf GELU, LayerNorm eps 1e-12, float32; BLAS
matmuls. Same vectors as the onnxruntime backend to ~1e-6, about 0.6x its speed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .minilm_weights import F32

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
    out: np.ndarray = p.astype(F32)
    return out


def gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, 0.5 x (1 + erf(x / sqrt 2)), computed in place into x."""
    e = erf_f32(x * F32(0.7071067811865476))
    e += F32(1.0)
    x *= F32(0.5)
    x *= e
    return x


def _layernorm_(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis of a 2-D array, in place into x."""
    mu = x.mean(axis=-1, keepdims=True)
    x -= mu
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= F32(1.0 / x.shape[-1])
    var += F32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= g
    x += b
    return x


def layer_weights(w: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
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


def check_config(cfg: dict[str, Any]) -> None:
    if (
        cfg.get("hidden_act", "gelu") != "gelu"
        or cfg.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError("only BERT with exact GELU and absolute positions is supported")


class NumpyBert:
    """BertModel forward pass (inference, absolute positions, token type 0) in float32 numpy."""

    name = "numpy"
    # attention scores (texts, heads, L, L) are computed for a chunk of texts at a time, this many floats
    ATTN_CHUNK = 1 << 20

    def __init__(self, w: dict[str, np.ndarray], cfg: dict[str, Any]):
        check_config(cfg)
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.word = w["embeddings.word_embeddings.weight"]
        self.pos = w["embeddings.position_embeddings.weight"]
        self.type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.ln_e = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [layer_weights(w, i) for i in range(int(cfg["num_hidden_layers"]))]
        scale = F32(1.0 / np.sqrt(self.head_dim))  # folded into the query projection
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
        ctx = np.empty((B, L, nh, hd), F32)
        step = max(1, self.ATTN_CHUNK // (nh * L * L))
        for a in range(0, B, step):
            b = min(B, a + step)
            s = qkv[0, a:b] @ qkv[1, a:b].transpose(0, 1, 3, 2)  # (texts, heads, L, L)
            if int(lengths[a:b].min()) < L:  # mask the padding keys
                pad = np.arange(L)[None, :] >= lengths[a:b, None]
                s += np.where(pad, F32(-np.inf), F32(0.0)).astype(F32)[:, None, None, :]
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
