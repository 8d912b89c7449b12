"""Canonical text of filter comparisons: keys and values quoted so the text parses back to the same tree.

`rag.filters.tree.to_text` walks a tree and writes each comparison with `comparison_text`.

Example:
    >>> from rag.filters import key
    >>> str((key("a") == 1) & (key("b") == 2) & (key("c") == 3))
    '(a == 1) AND (b == 2) AND (c == 3)'
"""

from __future__ import annotations

import re

__all__ = ["comparison_text"]

Scalar = str | int | float | bool

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


def comparison_text(name: str, op: str, takes_no_value: bool, value: object) -> str:
    """The text of one comparison: `name op value`, the key and the value quoted where needed."""
    key_text = _key_text(name)
    if takes_no_value:
        return f"{key_text} {op}"
    if isinstance(value, tuple):
        return f"{key_text} {op} [{', '.join(_value_text(v) for v in value)}]"
    assert isinstance(value, str | int | float | bool)
    return f"{key_text} {op} {_value_text(value)}"
