"""Real-text benchmark data: English sentences found on this machine, LoCoMo turns, MiniLM vectors.

* `sentences(n)`: n distinct English sentences from the docstrings of the Python standard library and
  site-packages (read with `ast`, nothing imported), the text files of /usr/share/doc (gzipped or not)
  and the English man pages, filtered to prose and ordered by a blake2b hash of each sentence (so the
  order and content depend only on what is installed here).
* `minilm_vectors(n)`, `minilm_queries(m)`: their all-MiniLM-L6-v2 embeddings (float32, unit rows);
  the queries are the m sentences after the first n in the same order, so never in the corpus.
* `locomo_turns()`, `locomo_vectors()`: the dialogue turns of LoCoMo (../shared/data/locomo10.json
  from the repo root; CC BY-NC, so read in place and never copied into the repo) and their embeddings.

Everything is cached under ~/.cache/engramdb-bench/ (sentences-<n>.txt, one sentence a line;
minilm-<n>.npy; minilm-queries-<n>-<m>.npy; locomo10-minilm.npy); delete a file to rebuild it.
"""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import json
import re
import site
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

CACHE = Path.home() / ".cache" / "engramdb-bench"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_ROFF = re.compile(r"\\f(\[[^]]*\]|\(..|.)|\\\(..|\\\*(\(..|.)|\\[&|^%]")
_CODE = re.compile(r"[_=`{}<>|\\$#@~^*\[\]]|\(\)|::|\.\w|\.\.|--|//|https?:|\s[.,;:!?]")  # code, not prose
_COMMON = re.compile(r"(?i)\b(the|an?|is|are|be|to|of|and|in|for|this|that|with|it|or|if|not|on|by|as)\b")
_DOC_SKIP = set(re.findall(r"\.\w+", ".png .gif .jpg .svg .pdf .ico .css .js .c .h .pl .py .sh .el .pem"))


def _docstrings(root: Path, site_packages: bool = True) -> Iterator[str]:
    for path in sorted(root.rglob("*.py")):
        if not site_packages and "site-packages" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, RecursionError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    yield doc


def _read(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return "" if b"\0" in data[:4096] else data.decode("utf-8", errors="replace")


def _doc_files() -> Iterator[str]:
    for path in sorted(Path("/usr/share/doc").rglob("*")):
        name = path.name.removesuffix(".gz")
        if path.is_file() and not path.is_symlink() and Path(name).suffix not in _DOC_SKIP:
            try:
                yield _read(path)
            except (OSError, EOFError, gzip.BadGzipFile):
                continue


def _man_pages() -> Iterator[str]:
    for path in sorted(Path("/usr/share/man").glob("man[1-8]/*")):
        try:
            text = _read(path)
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        lines = ("" if ln.startswith((".", "'")) else ln for ln in text.splitlines())
        yield _ROFF.sub("", "\n".join(lines).replace("\\-", "-").replace("\\ ", " "))


def _keep(s: str) -> bool:
    """A prose sentence: 5-60 words, ASCII, capitalised, full stop, no code, mostly letters, English."""
    words = s.split()
    if not 5 <= len(words) <= 60 or not s.isascii() or not s[0].isupper() or s[-1] not in ".!?":
        return False
    if (
        _CODE.search(s)
        or s.count("(") != s.count(")")
        or sum(c.isalpha() for c in s) < 0.8 * (len(s) - len(words) + 1)
    ):
        return False
    return len(_COMMON.findall(s)) >= 2


def _sentences_of(texts: Iterator[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        for para in re.split(r"\n\s*\n", text):
            out += [s for s in _SPLIT.split(" ".join(para.split())) if _keep(s)]
    return out


@functools.cache
def _pool() -> tuple[str, ...]:
    """Every distinct sentence found, in blake2b-hash order; per-source counts go to stderr."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = {
        "stdlib docstrings": lambda: _docstrings(stdlib, site_packages=False),
        "site-packages docstrings": lambda: (d for p in site.getsitepackages() for d in _docstrings(Path(p))),
        "/usr/share/doc": _doc_files,
        "man pages": _man_pages,
    }
    seen: set[str] = set()
    for name, texts in sources.items():
        found = _sentences_of(texts())
        new = set(found) - seen
        seen |= new
        print(f"_corpus: {name}: {len(found)} sentences, {len(new)} new distinct", file=sys.stderr)
    return tuple(sorted(seen, key=lambda s: hashlib.blake2b(s.encode(), digest_size=16).digest()))


def sentences(n: int = 100_000) -> list[str]:
    """The first `n` distinct English sentences found on this machine (cached as sentences-<n>.txt)."""
    path = CACHE / f"sentences-{n}.txt"
    if path.exists():
        return path.read_text(encoding="utf-8").splitlines()
    pool = _pool()
    if len(pool) < n:
        raise RuntimeError(f"asked for {n} sentences but only {len(pool)} distinct ones were found")
    out = list(pool[:n])
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(out) + "\n", encoding="utf-8")
    tmp.replace(path)
    return out


def _embed_cached(name: str, texts: Callable[[], list[str]]) -> np.ndarray:
    """MiniLM rows of texts() in chunks of 2,048 (tqdm on stderr), cached as CACHE/name."""
    path = CACHE / name
    if not path.exists():
        from engramdb.spaces.minilm import MiniLMEmbedder
        from tqdm import tqdm

        batch, emb = texts(), MiniLMEmbedder()
        out = np.empty((len(batch), emb.dim), dtype=np.float32)
        with tqdm(total=len(batch), desc=name, unit="text", file=sys.stderr) as bar:
            for i in range(0, len(batch), 2048):
                out[i : i + 2048] = emb.embed(batch[i : i + 2048])
                bar.update(len(batch[i : i + 2048]))
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path.with_suffix(".tmp.npy"), out)
        path.with_suffix(".tmp.npy").replace(path)
    return np.ascontiguousarray(np.load(path, mmap_mode="r"))


def minilm_vectors(n: int = 100_000) -> np.ndarray:
    """(n, 384) float32 unit MiniLM embeddings of `sentences(n)` (cached as minilm-<n>.npy)."""
    return _embed_cached(f"minilm-{n}.npy", lambda: sentences(n))


def minilm_queries(m: int = 200, n: int = 100_000) -> np.ndarray:
    """(m, 384) embeddings of sentences n..n+m of the same order: held out of `minilm_vectors(n)`."""

    def held_out() -> list[str]:
        queries = sentences(n + m)[n:]
        if not set(queries).isdisjoint(sentences(n)):  # the text on this machine changed in between
            raise RuntimeError(f"queries overlap sentences({n}): delete {CACHE}/sentences-*.txt and retry")
        return queries

    return _embed_cached(f"minilm-queries-{n}-{m}.npy", held_out)


def locomo_turns(path: str | None = None) -> list[dict[str, object]]:
    """Every LoCoMo dialogue turn, in order: dicts with conversation (index), sample_id, session (number),
    dia_id, speaker, text and date (the session's date string, e.g. "1:56 pm on 8 May, 2023")."""
    data = json.loads(Path(path or LOCOMO).read_text(encoding="utf-8"))
    turns: list[dict[str, object]] = []
    for ci, sample in enumerate(data):
        conv = sample["conversation"]
        sessions = sorted(int(k[8:]) for k, v in conv.items() if re.fullmatch(r"session_\d+", k) and v)
        for s in sessions:
            date = conv.get(f"session_{s}_date_time", "")
            for t in conv[f"session_{s}"]:
                base = {"conversation": ci, "sample_id": sample.get("sample_id"), "session": s, "date": date}
                turns.append({**base, "dia_id": t["dia_id"], "speaker": t["speaker"], "text": t["text"]})
    return turns


def locomo_vectors(path: str | None = None) -> np.ndarray:
    """(turns, 384) MiniLM embeddings of the `locomo_turns` texts (cached as locomo10-minilm.npy)."""
    texts = [str(t["text"]) for t in locomo_turns(path)]
    name = f"{Path(path or LOCOMO).stem}-minilm.npy"
    vecs = _embed_cached(name, lambda: texts)
    if len(vecs) != len(texts):  # the file changed: rebuild
        (CACHE / name).unlink()
        vecs = _embed_cached(name, lambda: texts)
    return vecs
