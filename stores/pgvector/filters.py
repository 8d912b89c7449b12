"""Filter trees compiled to a SQL condition over the JSONB column `metadata`, every value bound.

The meaning is docs/filters.md's. `NOT` is pushed down first, so a missing key makes each comparison
true or false, never SQL NULL. `==`, `IN` and `CONTAINS` are JSONB containment (`metadata @>
'{"k": v}'`, `'{"k": [v]}'`), which compares numbers by value, keeps booleans apart and matches lists
only through `CONTAINS`; ordering checks the stored type first, strings in the "C" collation.

JSONB numbers are `numeric`, compared exactly, so `json_value` writes a float as its exact decimal
value: int and float compare in SQL as in Python, at any size, and read back as the same value. A key
or string holding what PostgreSQL cannot store (`first_unstorable`; `add` refuses it) is answered
without sending it: nothing stored has such a key or equals such a value, and ordering compares with
the value's storable prefix.

Example:
    >>> from rag.filters import parse
    >>> compile_filter(parse("year >= 2020 AND NOT draft == true")).params
    ['year', 'year', '2020', '{"draft": true}']
    >>> json_value({"n": [2020, 0.5, "a", True]})
    '{"n": [2020, 0.5, "a", true]}'
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, NamedTuple

from rag.errors import InvalidRequestError
from rag.filters import And, Comparison, Filter, Op, Or, push_not_down
from rag.filters.tree import operands

__all__ = ["Condition", "compile_filter", "first_unstorable", "json_value"]

_ORDER_SQL = {Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_ORDERED = (
    "coalesce(jsonb_typeof(metadata -> %s::text) = '{kind}' AND (metadata {arrow} %s::text){collate} "
    "{symbol} %s::{cast}{collate}, FALSE)"
)


class Condition(NamedTuple):
    """A SQL condition (text with `%s` placeholders) and its parameters in order."""

    text: str
    params: list[Any]


def json_value(value: object) -> str:
    """Metadata (a dict), a metadata value or a list of them as JSON text, floats exact."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json_value(k)}: {json_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(json_value(item) for item in value) + "]"
    if isinstance(value, float):
        text = format(Decimal(value), "f")
        return text if "." in text else text + ".0"
    if isinstance(value, bool | int | str):
        return json.dumps(value, ensure_ascii=False)
    raise InvalidRequestError(f"cannot store {value!r} as a metadata value")


def first_unstorable(text: str) -> int | None:
    """Where `text` first holds what PostgreSQL text cannot (NUL, a lone surrogate), or None."""
    positions = [text.find("\x00")]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            positions.append(exc.start)
    return min((p for p in positions if p >= 0), default=None)


def _storable(value: Any) -> bool:
    return not isinstance(value, str) or first_unstorable(value) is None


def _ordered(node: Comparison, params: list[Any]) -> str:
    value, symbol = node.value, _ORDER_SQL[node.op]
    if isinstance(value, bool):
        return "FALSE"
    if isinstance(value, str) and (index := first_unstorable(value)) is not None:
        # Nothing stored holds such a character, so nothing equals the value, and a stored string
        # orders below it exactly when it orders below the storable prefix followed by the next
        # storable character (code points, as "C" collation orders UTF-8).
        value = value[:index] + ("\x01" if value[index] == "\x00" else "\ue000")
        symbol = "<" if node.op in (Op.LT, Op.LE) else ">="
    if isinstance(value, str):
        params += [node.key, node.key, value]
        return _ORDERED.format(kind="string", arrow="->>", collate=' COLLATE "C"', symbol=symbol, cast="text")
    params += [node.key, node.key, json_value(value)]
    return _ORDERED.format(kind="number", arrow="->", collate="", symbol=symbol, cast="jsonb")


def _comparison(node: Comparison, params: list[Any]) -> str:
    op = node.op
    if not _storable(node.key):  # no stored record has such a key
        return "FALSE" if op.is_positive else "TRUE"
    if op in _ORDER_SQL:
        return _ordered(node, params)
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        params.append(node.key)
        return "(metadata ? %s::text)" if op is Op.IS_NOT_NULL else "(NOT (metadata ? %s::text))"
    negated = not op.is_positive
    values = node.value if op in (Op.IN, Op.NIN) else (node.value,)
    assert isinstance(values, tuple)
    wrap = "[{}]" if op in (Op.CONTAINS, Op.NOT_CONTAINS) else "{}"
    entries = [f"{{{json_value(node.key)}: {wrap.format(json_value(v))}}}" for v in values if _storable(v)]
    if not entries:  # nothing stored equals an unstorable value, and `IN []` matches nothing
        return "TRUE" if negated else "FALSE"
    params.append(entries if op in (Op.IN, Op.NIN) else entries[0])
    test = "(metadata @> ANY(%s::jsonb[]))" if op in (Op.IN, Op.NIN) else "(metadata @> %s::jsonb)"
    return f"(NOT {test})" if negated else test


def compile_filter(tree: Filter | None) -> Condition:
    """The SQL condition for `tree` (None: no condition).

    An explicit stack of nodes and literal text, not recursion, so a filter of any depth compiles;
    chains of one operator are written flat (`operands`).
    """
    if tree is None:
        return Condition("TRUE", [])
    parts: list[str] = []
    params: list[Any] = []
    stack: list[Filter | str] = [push_not_down(tree)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Comparison):
            parts.append(_comparison(item, params))
        else:
            assert isinstance(item, And | Or)
            joiner = " AND " if isinstance(item, And) else " OR "
            chain = operands(item)
            parts.append("(")
            stack.append(")")
            for operand in reversed(chain[1:]):
                stack += [operand, joiner]
            stack.append(chain[0])
    return Condition("".join(parts), params)
