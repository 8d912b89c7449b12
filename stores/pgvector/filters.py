"""Filter trees compiled to a SQL condition over the store's JSONB metadata column, values bound.

The meaning is docs/filters.md's, the same as `rag.filters.matches` (the numpy store's reference):

- `NOT` is pushed down first (`rag.filters.push_not_down`), so every comparison is compiled as its
  own operator and evaluates to true or false, never SQL NULL, even when the key is missing.
- `==`, `IN` and `CONTAINS` are JSONB containment (`metadata @> '{"k": v}'`, `'{"k": [v]}'`): JSONB
  compares numbers by value (2020 equals 2020.0), never equates a boolean with a number, matches a list
  only through `CONTAINS`, and is false for a missing key. `!=`, `NOT IN` and `NOT CONTAINS` negate them.
- `<`, `<=`, `>`, `>=` check the stored type first: numbers compare as JSONB numbers (exact: see
  `stores.pgvector.encoding`), strings as text in the "C" collation (code-point order); any other pair,
  and every boolean operand, is false.
- `IS NULL` / `IS NOT NULL` test whether the key is present (`metadata ? k`).
- A key or string value holding what PostgreSQL cannot store (NUL, a lone surrogate; `add` refuses
  both) is answered exactly without sending it: no record has such a key or equals such a value, and
  ordering compares with the value's storable prefix.

Keys and values are always bound parameters; identifiers come from `psycopg.sql`. No value is ever part
of the SQL text, so there is nothing to escape and nothing to inject.

Example:
    >>> from rag.filters import parse
    >>> condition = compile_filter(parse("year >= 2020 AND NOT draft == true"))
    >>> condition.params
    ['year', 'year', '2020', '{"draft": true}']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rag.filters import And, Comparison, Filter, Op, Or, push_not_down
from rag.filters.tree import operands
from stores.pgvector.encoding import json_scalar

__all__ = ["Condition", "compile_filter"]

_ORDER_SQL = {Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}


@dataclass
class Condition:
    """A SQL condition (text with `%s` placeholders, JSONB column `metadata`) and its parameters in order."""

    text: str = "TRUE"
    params: list[Any] = field(default_factory=list)

    @property
    def always(self) -> bool:
        """Whether the condition keeps every row (no filter)."""
        return self.text == "TRUE"


def _entry(name: str, value: str) -> str:
    return "{" + json.dumps(name, ensure_ascii=False) + ": " + value + "}"


def _first_unstorable(text: str) -> int | None:
    """Where `text` first holds what PostgreSQL cannot store (NUL, a lone surrogate), or None."""
    positions = [i for i in (text.find("\x00"),) if i >= 0]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            positions.append(exc.start)
    return min(positions) if positions else None


def _storable(value: Any) -> bool:
    return not isinstance(value, str) or _first_unstorable(value) is None


def _ordered(node: Comparison, params: list[Any]) -> str:
    value = node.value
    if isinstance(value, bool):
        return "FALSE"
    symbol = _ORDER_SQL[node.op]
    if isinstance(value, str) and not _storable(value):
        # No stored string holds such a character, so none equals the value, and one orders below it
        # exactly when it orders below the value's storable prefix followed by the next storable
        # character (code-point order, as "C" collation orders UTF-8).
        index = _first_unstorable(value)
        assert index is not None
        value = value[:index] + ("\x01" if value[index] == "\x00" else "\ue000")
        symbol = "<" if node.op in (Op.LT, Op.LE) else ">="
    if isinstance(value, str):
        params += [node.key, node.key, value]
        return (
            f"coalesce(jsonb_typeof(metadata -> %s::text) = 'string' "
            f'AND (metadata ->> %s::text) COLLATE "C" {symbol} %s::text COLLATE "C", FALSE)'
        )
    params += [node.key, node.key, json_scalar(value)]
    return (
        f"coalesce(jsonb_typeof(metadata -> %s::text) = 'number' "
        f"AND (metadata -> %s::text) {symbol} %s::jsonb, FALSE)"
    )


def _comparison(node: Comparison, params: list[Any]) -> str:
    op = node.op
    if not _storable(node.key):
        # No stored record has such a key: the positive operators are false, the negative ones true.
        return "FALSE" if op.is_positive else "TRUE"
    if op in _ORDER_SQL:
        return _ordered(node, params)
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        params.append(node.key)
        return "(metadata ? %s::text)" if op is Op.IS_NOT_NULL else "(NOT (metadata ? %s::text))"
    negated = op in (Op.NE, Op.NIN, Op.NOT_CONTAINS)
    if op in (Op.IN, Op.NIN):
        assert isinstance(node.value, tuple)
        values = [v for v in node.value if _storable(v)]  # no stored value equals the others
        if not values:
            return "TRUE" if negated else "FALSE"
        params.append([_entry(node.key, json_scalar(v)) for v in values])
        test = "(metadata @> ANY(%s::jsonb[]))"
    else:
        if not _storable(node.value):
            return "TRUE" if negated else "FALSE"
        value = json_scalar(node.value)
        params.append(_entry(node.key, f"[{value}]" if op in (Op.CONTAINS, Op.NOT_CONTAINS) else value))
        test = "(metadata @> %s::jsonb)"
    return f"(NOT {test})" if negated else test


def _compile(node: Filter, params: list[Any]) -> str:
    """The SQL text of `node` (no `Not` left in it), parameters appended in order.

    Written with an explicit stack of nodes still to write and literal text, so a filter of any depth
    compiles without recursion; chains of one operator are written flat (`operands`).
    """
    parts: list[str] = []
    stack: list[Filter | str] = [node]
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
    return "".join(parts)


def compile_filter(tree: Filter | None) -> Condition:
    """The SQL condition for `tree` over the JSONB column `metadata` (None: no condition)."""
    if tree is None:
        return Condition()
    params: list[Any] = []
    text = _compile(push_not_down(tree), params)
    return Condition(text, params)
