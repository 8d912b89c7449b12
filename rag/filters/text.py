"""Canonical text of a filter tree: every operand parenthesised, parsed back to an equal tree.

A chain of the same operator along the left edge is written flat, `(a == 1) AND (b == 2) AND (c == 3)`,
because AND and OR group left to right; this keeps long chains readable and their text shallow.

Example:
    >>> from rag.filters import key
    >>> str((key("a") == 1) & (key("b") == 2) & (key("c") == 3))
    '(a == 1) AND (b == 2) AND (c == 3)'
"""

from __future__ import annotations

import re

from rag.filters.tree import And, Comparison, Filter, Not, Scalar, operands

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
        # repr is the shortest text that reads back to the same float; whole numbers keep a ".0"
        # so they read back as floats, not ints.
        if value.is_integer() and abs(value) < 1e16:
            return f"{value:.1f}"
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
    parts: list[str] = []
    # An explicit stack of nodes still to write and literal text, so deep trees need no recursion.
    stack: list[Filter | str] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Comparison):
            parts.append(_comparison_text(item))
        elif isinstance(item, Not):
            parts.append("NOT (")
            stack += [")", item.operand]
        else:
            separator = ") AND (" if isinstance(item, And) else ") OR ("
            chain = operands(item)
            parts.append("(")
            stack.append(")")
            for operand in reversed(chain[1:]):
                stack += [operand, separator]
            stack.append(chain[0])
    return "".join(parts)
