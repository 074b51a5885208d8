"""A LangGraph item's value: the checks before it is stored, the text it is searched by, and the
`filter` of a search (what `InMemoryStore` supports: equality on fields, nested dicts and lists,
and the operators $eq, $ne, $gt, $gte, $lt, $lte).

The value is kept whole in the memory's metadata (JSON); the memory's content is the text a
query is matched against: the text at the store's (or the put's) index fields, as LangGraph
extracts it (`get_text_at_path`), or the whole value as JSON, which is what LangGraph embeds for
the default field `$`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from langgraph.store.base import get_text_at_path, tokenize_path

from ...model import checks
from ...model.errors import InvalidMemory

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_ORDERED = ("$gt", "$gte", "$lt", "$lte")
VALUE_DEPTH = checks.MAX_DEPTH - 2  # the value sits two levels down in the memory's metadata


def check_value(where: str, value: Any) -> dict[str, Any]:
    """A put's value as stored: a mapping with string keys at every depth, JSON-serialisable
    (no NaN or infinity), its strings encodable, nested at most VALUE_DEPTH levels; else
    InvalidMemory (TypeError for a value that is not a mapping) naming `where` and the part."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: the value must be a dict (a JSON object), got {type(value).__name__} {value!r:.80}")
    out: dict[str, Any] = dict(value)
    stack: list[tuple[str, Any, int]] = [("value", out, 1)]
    while stack:
        path, node, depth = stack.pop()
        if depth > VALUE_DEPTH:
            raise InvalidMemory(f"{where}: the value is nested deeper than {VALUE_DEPTH} levels (at {path[:80]}...)")
        if isinstance(node, Mapping):
            for k, v in node.items():
                if not isinstance(k, str):
                    # JSON would turn it into a string: the value read back would not be the one put
                    raise InvalidMemory(f"{where}: {path} has the key {k!r:.40} ({type(k).__name__}); JSON object "
                                        "keys are strings")
                stack.append((f"{path}[{k!r}]", v, depth + 1))
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{path}[{i}]", v, depth + 1) for i, v in enumerate(node))
    checks.json_tree(f"{where}: value", out)  # JSON-serialisable, no NaN, every string encodable
    return out


def index_fields(where: str, index: Any) -> list[str] | Literal[False] | None:
    """A put's `index`: None (the store's fields), False (not indexed) or a list of field paths."""
    if index is None or index is False:
        return index
    if not isinstance(index, (list, tuple)) or not all(isinstance(p, str) and p for p in index):
        raise TypeError(f"{where}: index must be None, False or a list of field paths (strings), got {index!r:.80}")
    for p in index:
        if p != "$":
            try:
                tokenize_path(p)
            except Exception as exc:  # noqa: BLE001 - LangGraph's parser raises several kinds
                raise ValueError(f"{where}: index field path {p!r:.80} cannot be read: {exc}") from None
    return list(index)


def whole(value: Mapping[str, Any]) -> str:
    """The value as JSON text, as LangGraph embeds the field `$`."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def search_text(value: Mapping[str, Any], fields: list[str] | Literal[False]) -> str | None:
    """The text a query matches the value by: the text at each field path, one per line; None
    when the value is not indexed (`fields` False) or holds no text there (LangGraph then stores
    no vector for it)."""
    if fields is False:
        return None
    texts: list[str] = []
    for path in fields:
        texts += get_text_at_path(value, path)  # "$": the whole value as JSON
    text = "\n".join(t for t in texts if t.strip())
    return text or None


def check_filter(where: str, filter: Any) -> None:
    """A search's filter: None or a dict of field -> expected value, where a dict with `$` keys is
    operators; an unknown operator or an ordering operator given something that is not a number
    is refused (ValueError naming it) before the batch runs."""
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise TypeError(f"{where}: filter must be a dict, got {type(filter).__name__} {filter!r:.80}")
    stack: list[tuple[str, Any]] = [(f"filter[{k!r}]", v) for k, v in filter.items()]
    while stack:
        path, node = stack.pop()
        if isinstance(node, Mapping):
            if any(isinstance(k, str) and k.startswith("$") for k in node):
                for op, arg in node.items():
                    if op not in OPERATORS:
                        raise ValueError(f"{where}: {path} has the unsupported operator {op!r:.40}; use one of "
                                         f"{', '.join(OPERATORS)}")
                    if op in _ORDERED and _number(arg) is None:
                        raise ValueError(f"{where}: {path}[{op!r}] compares numbers, got {arg!r:.80}")
            else:
                stack.extend((f"{path}[{k!r}]", v) for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether a stored value passes a (checked) filter, as InMemoryStore compares: every field
    equal (nested dicts field by field, lists element by element) or passing its operators. An
    ordering operator on a field that is missing or not a number does not match (InMemoryStore
    raises there)."""
    return not filter or all(_compare(value.get(k), f) for k, f in filter.items())


def _compare(item: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_apply(item, op, arg) for op, arg in expected.items())
        return isinstance(item, Mapping) and all(_compare(item.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return isinstance(item, (list, tuple)) and len(item) == len(expected) and \
            all(_compare(a, b) for a, b in zip(item, expected))
    return bool(item == expected)


def _apply(item: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(item == arg)
    if op == "$ne":
        return bool(item != arg)
    a, b = _number(item), _number(arg)
    if a is None or b is None:
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    return a <= b


def _number(x: Any) -> float | None:
    """`float(x)` as InMemoryStore takes it (numbers, booleans, numeric strings), None when it fails."""
    if isinstance(x, (dict, list, tuple)) or x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(f) else f


__all__ = ["OPERATORS", "VALUE_DEPTH", "check_filter", "check_value", "index_fields", "matches", "search_text",
           "whole"]
