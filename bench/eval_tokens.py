"""Token counts (issue "[6 of 7]"): the calibrated estimate's error against the real tokenizer, and the
real counts' exactness, on 1,000 texts.

The texts, in four kinds, drawn with a fixed seed:
- 400 LoCoMo turns (English chat; ../shared/data/locomo10.json, read in place), each as its
  stored content (the session date prefix included);
- 200 code windows: 3 to 30 consecutive lines of the Python standard library's own source files;
- 200 JSON documents, synthetic: records of random keys, numbers, booleans, nulls, words, ids
  and nested lists, dumped compact or indented;
- 200 non-English texts: the translated messages of the gettext catalogues installed here (vim's
  and those under /usr/share/locale: Japanese, Chinese, Korean, Russian, German, French, ...),
  one to four messages a text. Fewer when the machine has fewer; the report says how many.
For each text: the exact count by the chosen tokenizer (cl100k_base from bpe-openai, through
`engramdb.context.tokens.counter`), checked against bpe-openai's own encoder, and the estimate
(`engramdb.context.tokens.estimate`). Reported per kind and overall: percentiles of the relative
error (estimate - exact) / exact, the mean absolute error, and the share of texts the estimate
undercounts (a budget counted with the estimate could then overflow the real one), by how much
at the 95th percentile.

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/eval_tokens.py [--tokenizer cl100k_base] [--json PATH]`
"""

from __future__ import annotations

import argparse
import gettext
import json
import random
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import eval_locomo as ev
from engramdb.context.tokens import counter, estimate

SEED = 20261125
KINDS = {"locomo": 400, "code": 200, "json": 200, "non-english": 200}
CATALOGUES = (Path("/usr/share/vim"), Path("/usr/share/locale"))


def locomo_texts(n: int, rng: random.Random, data: Path) -> list[str]:
    turns = ev.load_locomo(data).turns
    return [t.content(True) for t in rng.sample(list(turns), n)]


def code_texts(n: int, rng: random.Random) -> list[str]:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    out: list[str] = []
    while len(out) < n and files:
        lines = rng.choice(files).read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < 30:
            continue
        a = rng.randrange(0, len(lines) - 30)
        chunk = "\n".join(lines[a: a + rng.randint(3, 30)]).strip()
        if chunk:
            out.append(chunk)
    return out


def json_texts(n: int, rng: random.Random) -> list[str]:
    words = ("alpha", "beta", "user", "status", "created_at", "price", "items", "tags", "ok", "error", "name",
             "id", "count", "enabled", "region", "latency_ms", "payload", "version", "owner", "score")

    def value(depth: int) -> Any:
        kind = rng.randrange(7 if depth < 2 else 5)
        if kind == 0:
            return rng.randint(-10_000, 10_000_000)
        if kind == 1:
            return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
        if kind == 2:
            return rng.choice([True, False, None])
        if kind == 3:
            return " ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
        if kind == 4:
            return f"{rng.getrandbits(64):016x}-{rng.randint(1, 99):02d}"
        if kind == 5:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(words): value(depth + 1) for _ in range(rng.randint(1, 4))}

    out = []
    for _ in range(n):
        doc = {rng.choice(words): value(0) for _ in range(rng.randint(2, 8))}
        out.append(json.dumps(doc, indent=rng.choice([None, 2])))
    return out


def non_english_texts(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """n texts from the non-English gettext catalogues installed, and the catalogues' languages."""
    messages: list[str] = []
    langs: set[str] = set()
    for root in CATALOGUES:
        for mo in sorted(root.rglob("*.mo")):
            lang = mo.parent.parent.name
            if lang.startswith("en") or "." in lang:  # English, or a copy in another charset
                continue
            catalog = _catalog(mo)
            found = [v for k, v in catalog.items() if isinstance(k, str) and k and isinstance(v, str)
                     and len(v) >= 12 and v != k]
            if found:
                langs.add(lang)
                messages += found
    if not messages:
        return [], []
    out = [" ".join(rng.sample(messages, rng.randint(1, 4))) for _ in range(n)]
    return out, sorted(langs)


def _catalog(path: Path) -> dict[Any, Any]:
    """A gettext catalogue's messages ({} when gettext cannot parse it: a charset or header it rejects)."""
    try:
        with open(path, "rb") as fh:
            out: dict[Any, Any] = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a file we did not write: skipped, whatever is wrong with it
        return {}
    return out


def errors(texts: list[str], count: Any) -> dict[str, Any]:
    exact = np.array([count(t) for t in texts], np.float64)
    est = np.array([estimate(t) for t in texts], np.float64)
    rel = (est - exact) / np.maximum(exact, 1)
    under = rel[rel < 0]
    pct = np.percentile(rel, [1, 5, 25, 50, 75, 95, 99])
    return {"texts": len(texts), "mean_exact_tokens": round(float(exact.mean()), 1),
            "relative_error_percentiles": {f"p{p}": round(float(v), 3) for p, v in zip((1, 5, 25, 50, 75, 95, 99), pct)},
            "mean_abs_relative_error": round(float(np.abs(rel).mean()), 3),
            "undercounted_share": round(float(len(under) / len(rel)), 3),
            "undercount_p95": round(float(-np.percentile(under, 5)), 3) if len(under) else 0.0}


def run(data: Path, tokenizer: str) -> dict[str, Any]:
    import bpe_openai  # type: ignore[import-untyped]

    count, name = counter(tokenizer)
    if name != tokenizer:
        raise SystemExit(f"tokenizer {tokenizer!r} is not installed (pip install 'engramdb[tokens]')")
    rng = random.Random(SEED)
    other, langs = non_english_texts(KINDS["non-english"], rng)
    texts = {"locomo": locomo_texts(KINDS["locomo"], rng, data), "code": code_texts(KINDS["code"], rng),
             "json": json_texts(KINDS["json"], rng), "non-english": other}
    enc = bpe_openai.get_encoding(tokenizer)
    everything = [t for ts in texts.values() for t in ts]
    exact = sum(count(t) == len(enc.encode_ordinary(t)) for t in everything)
    out: dict[str, Any] = {"tokenizer": name, "texts": len(everything), "exact_counts": f"{exact}/{len(everything)}",
                           "languages": langs, "kinds": {k: errors(v, count) for k, v in texts.items() if v},
                           "all": errors(everything, count)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO)
    ap.add_argument("--tokenizer", default="cl100k_base", choices=("cl100k_base", "o200k_base"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = run(args.data, args.tokenizer)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
