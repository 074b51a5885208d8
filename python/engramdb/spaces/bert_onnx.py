"""BertModel as an ONNX graph of onnxruntime's fused operators, built here from the weights
(no ONNX file, no ``onnx`` package): the fast runtime when onnxruntime is installed."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .bert_numpy import check_config, layer_weights


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
    check_config(cfg)
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
        lw = {k: init(f"l{i}.{k}", v) for k, v in layer_weights(w, i).items()}
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


class OrtBert:
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
