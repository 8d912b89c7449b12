"""Canonical text of a filter tree: fully parenthesised, and parsed back to an equal tree."""

from __future__ import annotations

import math
import re

from rag.filters.tree import And, Comparison, Filter, Not, Or, Scalar

__all__ = ["to_text"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_KEYWORDS = frozenset({"and", "or", "not", "in", "nin", "contains", "is", "null", "true", "false", "where"})
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}


def _quote(text: str) -> str:
    return "'" + "".join(_ESCAPES.get(ch, ch) for ch in text) + "'"


def _key_text(name: str) -> str:
    parts_are_plain = _IDENTIFIER.match(name) and not any(p.lower() in _KEYWORDS for p in name.split("."))
    return name if parts_are_plain else _quote(name)


def _value_text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return f"{value:.1f}"
        assert math.isfinite(value)
        return repr(value)
    return _quote(value)


def _comparison_text(node: Comparison) -> str:
    name = _key_text(node.key)
    if node.op.takes_no_value:
        return f"{name} {node.op.value}"
    if isinstance(node.value, tuple):
        return f"{name} {node.op.value} [{', '.join(_value_text(v) for v in node.value)}]"
    assert node.value is not None
    return f"{name} {node.op.value} {_value_text(node.value)}"


def to_text(node: Filter) -> str:
    """The canonical text of `node`; `parse(to_text(node)) == node` for every tree with non-empty lists."""
    if isinstance(node, Comparison):
        return _comparison_text(node)
    if isinstance(node, Not):
        return f"NOT ({to_text(node.operand)})"
    word = "AND" if isinstance(node, And) else "OR"
    assert isinstance(node, And | Or)
    return f"({to_text(node.left)}) {word} ({to_text(node.right)})"
