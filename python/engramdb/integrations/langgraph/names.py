"""LangGraph namespaces and keys as engramdb namespaces and ids, reversibly.

An engramdb namespace is 1-128 characters of letters, digits and `._:@/+-`; a LangGraph namespace
is a tuple of arbitrary strings. The tuple `("users", "maya")` becomes `langgraph/users/maya`:
the store's prefix, then each label after a `/`. Inside a label every character outside
`A-Za-z0-9._:@-` (the separator `/`, the escape `+`, spaces, non-ASCII) is written as `+` and two
upper-case hex digits per UTF-8 byte, so `a/b` is `a+2Fb` and `ü` is `+C3+BC`. A label's
encoding never holds a `/`, so splitting on it finds the labels again; `+` is always followed by
exactly two upper-case hex digits of a byte that needed escaping, so each tuple has exactly one
encoding and `decode_namespace(encode_namespace(t)) == t` for every tuple, the empty label and
the empty tuple included. A string that is not the canonical encoding of some tuple (a
namespace another writer made by hand, `+2f`, `+41`) decodes to None: it is not this adapter's.

A key becomes the id `lg-` + 32 hex digits of BLAKE2b-128 over (encoded namespace, key): stable
(the same key in the same namespace is always the same memory, so a second put is an update),
fixed in length whatever the key, and distinct per namespace (ids are unique store-wide).
"""

from __future__ import annotations

import hashlib
import json
import re

from langgraph.store.base import InvalidNamespaceError

DEFAULT_PREFIX = "langgraph"
MAX_NAMESPACE = 128  # engramdb's limit on a namespace's length (model/memory.py)
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-")
_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$")
_LABEL_RE = re.compile(r"^(?:[A-Za-z0-9._:@-]|\+[0-9A-F]{2})*$")


def check_prefix(prefix: object) -> str:
    """The root every namespace of this adapter is stored under: 1-64 characters of letters,
    digits and `._:@-`, starting with a letter or digit (no `/` or `+`: they delimit and escape)."""
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise ValueError(f"namespace_prefix must be 1-64 characters of letters, digits and ._:@- starting with a "
                         f"letter or digit, got {prefix!r}")
    return prefix


def encode_label(label: str) -> str:
    """One namespace label in the characters an engramdb namespace allows (see the module doc)."""
    if not isinstance(label, str):
        raise InvalidNamespaceError(f"namespace labels must be strings, got {type(label).__name__} {label!r:.80}")
    if all(c in _SAFE for c in label):
        return label
    try:
        label.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidNamespaceError(f"namespace label {label!r:.80} holds a character UTF-8 cannot encode "
                                    f"({exc.reason} at position {exc.start})") from None
    return "".join(c if c in _SAFE else "".join(f"+{b:02X}" for b in c.encode("utf-8")) for c in label)


def decode_label(text: str) -> str | None:
    """The label `encode_label` made `text` from, or None when `text` is not such an encoding."""
    if not _LABEL_RE.match(text):
        return None
    if "+" not in text:
        return text
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "+":
            raw.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            raw.extend(text[i].encode("ascii"))
            i += 1
    try:
        label = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return label if encode_label(label) == text else None  # one encoding per label: `+41` is not "A"


def encode_namespace(namespace: tuple[str, ...], prefix: str = DEFAULT_PREFIX) -> str:
    """The engramdb namespace of a LangGraph namespace (may be longer than engramdb allows: see
    `storable_namespace`)."""
    return prefix + "".join("/" + encode_label(label) for label in namespace)


def storable_namespace(namespace: tuple[str, ...], prefix: str = DEFAULT_PREFIX) -> str:
    """`encode_namespace`, refused (InvalidNamespaceError naming it) when the encoding is longer
    than an engramdb namespace may be."""
    text = encode_namespace(namespace, prefix)
    if len(text) > MAX_NAMESPACE:
        raise InvalidNamespaceError(
            f"namespace {namespace!r:.200} is stored as {len(text)} characters ({text[:40]}...); engramdb "
            f"namespaces hold at most {MAX_NAMESPACE} (each character outside A-Za-z0-9._:@- takes 3 per UTF-8 "
            "byte): use shorter labels")
    return text


def decode_namespace(text: str, prefix: str = DEFAULT_PREFIX) -> tuple[str, ...] | None:
    """The LangGraph namespace stored as engramdb namespace `text`, or None when `text` is not
    one this adapter (with this prefix) writes."""
    if text == prefix:
        return ()
    if not text.startswith(prefix + "/"):
        return None
    labels = []
    for part in text[len(prefix) + 1:].split("/"):
        label = decode_label(part)
        if label is None:
            return None
        labels.append(label)
    return tuple(labels)


def item_id(stored_namespace: str, key: str) -> str:
    """The engramdb id of `key` in the (encoded) namespace: `lg-` + BLAKE2b-128 hex."""
    # ensure_ascii: a key holding a lone surrogate still hashes (and is refused where it is stored)
    raw = json.dumps([stored_namespace, key], ensure_ascii=True).encode("ascii")
    return "lg-" + hashlib.blake2b(raw, digest_size=16).hexdigest()


__all__ = ["DEFAULT_PREFIX", "MAX_NAMESPACE", "check_prefix", "decode_label", "decode_namespace", "encode_label",
           "encode_namespace", "item_id", "storable_namespace"]
