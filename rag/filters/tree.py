"""The filter tree: frozen nodes every store compiles, and the Python builder that makes them.

A filter is a tree of `Comparison`, `And`, `Or` and `Not` nodes. `And` and `Or` are binary and group left to
right, as the text does, so `a & b & c` and `parse("a AND b AND c")` give the same tree.

Example:
    >>> from rag.filters import key, parse
    >>> f = (key("year") >= 2020) & key("country").in_(["BG", "NL"])
    >>> f == parse("year >= 2020 AND country IN ['BG', 'NL']")
    True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Union

from rag.errors import FilterError
from rag.filters.text import comparison_text

__all__ = [
    "And",
    "Comparison",
    "Filter",
    "Not",
    "Op",
    "Or",
    "Scalar",
    "negate",
    "operands",
    "push_not_down",
    "to_text",
]

Scalar = str | int | float | bool


class Op(StrEnum):
    """Comparison operators, spelled as in the filter text."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "IN"
    NIN = "NOT IN"
    CONTAINS = "CONTAINS"
    NOT_CONTAINS = "NOT CONTAINS"
    IS_NULL = "IS NULL"
    IS_NOT_NULL = "IS NOT NULL"

    @property
    def opposite(self) -> Op:
        """The operator that is true exactly where this one is false (docs/filters.md, "Meaning")."""
        return _OPPOSITE[self]

    @property
    def takes_list(self) -> bool:
        return self in (Op.IN, Op.NIN)

    @property
    def takes_no_value(self) -> bool:
        return self in (Op.IS_NULL, Op.IS_NOT_NULL)

    @property
    def is_positive(self) -> bool:
        """True for the operators that are false on a document without the key."""
        return self in _POSITIVE


_OPPOSITE = {
    Op.EQ: Op.NE,
    Op.NE: Op.EQ,
    Op.LT: Op.GE,
    Op.GE: Op.LT,
    Op.LE: Op.GT,
    Op.GT: Op.LE,
    Op.IN: Op.NIN,
    Op.NIN: Op.IN,
    Op.CONTAINS: Op.NOT_CONTAINS,
    Op.NOT_CONTAINS: Op.CONTAINS,
    Op.IS_NULL: Op.IS_NOT_NULL,
    Op.IS_NOT_NULL: Op.IS_NULL,
}
_POSITIVE = frozenset({Op.EQ, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.CONTAINS, Op.IS_NOT_NULL})


def _value_key(value: object) -> tuple[object, ...]:
    """A comparison key that keeps booleans apart from numbers (`True` is not `1` in a filter)."""
    if isinstance(value, tuple):
        return ("list", *(_value_key(v) for v in value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", value)
    return (type(value).__name__, value)


def _check_scalar(value: object, where: str) -> Scalar:
    """The value as a plain str/int/float/bool (subclasses such as enums or numpy floats are converted)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"filter value {value!r} for {where} is not a finite number")
        return float(value)
    raise FilterError(
        f"filter value {value!r} for {where} must be a str, int, float or bool, not {type(value).__name__}"
    )


class _Node:
    """Boolean operators, equality and hashing shared by every node.

    Equality, hashing and repr walk the tree with an explicit stack (hashes are computed once, at
    construction), so a left-deep chain of thousands of clauses never hits the recursion limit.
    """

    __slots__ = ()
    _hash: int

    def __and__(self, other: Filter) -> And:
        return And(_as_node(self), _as_node(other))

    def __or__(self, other: Filter) -> Or:
        return Or(_as_node(self), _as_node(other))

    def __invert__(self) -> Not:
        return Not(_as_node(self))

    def __bool__(self) -> bool:
        raise TypeError("a filter has no truth value; combine filters with &, | and ~, not and/or/not")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Node):
            return NotImplemented
        return _same_tree(_as_node(self), _as_node(other))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Filter], tuple[object, ...]]:
        # Rebuild through __init__ so the cached hash is recomputed (str hashes differ between processes).
        node = _as_node(self)
        return (type(node), tuple(getattr(node, f.name) for f in fields(node)))

    def __str__(self) -> str:
        return to_text(_as_node(self))

    def __repr__(self) -> str:
        parts: list[str] = []
        stack: list[Filter | str] = [_as_node(self)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, Comparison):
                parts.append(f"Comparison({item.key!r}, {item.op.value!r}, {item.value!r})")
            elif isinstance(item, Not):
                parts.append("Not(")
                stack += [")", item.operand]
            else:
                parts.append(f"{type(item).__name__}(")
                stack += [")", item.right, ", ", item.left]
        return "".join(parts)


def _as_node(value: object) -> Filter:
    if isinstance(value, Comparison | And | Or | Not):
        return value
    raise TypeError(f"expected a filter node, got {value!r}")


def _same_tree(a: Filter, b: Filter) -> bool:
    pairs = [(a, b)]
    while pairs:
        x, y = pairs.pop()
        if x is y:
            continue
        if type(x) is not type(y) or x._hash != y._hash:
            return False
        if isinstance(x, Comparison):
            assert isinstance(y, Comparison)
            if x._identity() != y._identity():
                return False
        elif isinstance(x, Not):
            assert isinstance(y, Not)
            pairs.append((x.operand, y.operand))
        else:
            assert isinstance(y, And | Or) and isinstance(x, And | Or)
            pairs += [(x.right, y.right), (x.left, y.left)]
    return True


@dataclass(frozen=True, eq=False, repr=False)
class Comparison(_Node):
    """`key op value`; `value` is a tuple for IN / NOT IN and None for IS [NOT] NULL.

    Example:
        >>> from rag.filters import key
        >>> Comparison("year", ">=", 2020) == (key("year") >= 2020)
        True
        >>> Comparison("draft", "==", True) == Comparison("draft", "==", 1)  # a boolean is not a number
        False
    """

    key: str
    op: Op
    value: Scalar | tuple[Scalar, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise FilterError(f"filter key {self.key!r} must be a non-empty string")
        object.__setattr__(self, "key", str.__str__(self.key))
        try:
            op = Op(self.op)
        except ValueError:
            raise FilterError(f"unknown filter operator {self.op!r} for key {self.key!r}") from None
        object.__setattr__(self, "op", op)
        where = f"{self.key!r} {op.value}"
        if op.takes_no_value:
            if self.value is not None:
                raise FilterError(f"{where} takes no value, got {self.value!r}")
        elif op.takes_list:
            if isinstance(self.value, str | bytes) or not isinstance(self.value, Iterable):
                raise FilterError(f"{where} takes a list of values, got {self.value!r}")
            object.__setattr__(self, "value", tuple(_check_scalar(v, where) for v in self.value))
        else:
            object.__setattr__(self, "value", _check_scalar(self.value, where))
        object.__setattr__(self, "_hash", hash(self._identity()))

    def _identity(self) -> tuple[object, ...]:
        return (self.key, self.op, _value_key(self.value))


@dataclass(frozen=True, eq=False, repr=False)
class And(_Node):
    """Both operands hold.

    Example:
        >>> from rag.filters import key
        >>> And(key("a") == 1, key("b") == 2) == ((key("a") == 1) & (key("b") == 2))
        True
    """

    left: Filter
    right: Filter

    def __post_init__(self) -> None:
        left, right = _as_node(self.left), _as_node(self.right)
        object.__setattr__(self, "_hash", hash(("and", left._hash, right._hash)))


@dataclass(frozen=True, eq=False, repr=False)
class Or(_Node):
    """At least one operand holds.

    Example:
        >>> from rag.filters import key
        >>> Or(key("a") == 1, key("b") == 2) == ((key("a") == 1) | (key("b") == 2))
        True
    """

    left: Filter
    right: Filter

    def __post_init__(self) -> None:
        left, right = _as_node(self.left), _as_node(self.right)
        object.__setattr__(self, "_hash", hash(("or", left._hash, right._hash)))


@dataclass(frozen=True, eq=False, repr=False)
class Not(_Node):
    """The operand does not hold; see `negate` for how NOT is evaluated.

    Example:
        >>> from rag.filters import key
        >>> Not(key("a") == 1) == ~(key("a") == 1)
        True
    """

    operand: Filter

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(("not", _as_node(self.operand)._hash)))


Filter = Union[Comparison, And, Or, Not]  # noqa: UP007 - a runtime alias used in isinstance checks


def operands(node: Filter) -> list[Filter]:
    """The operands of a chain of the same operator along its left edge, in order.

    `operands(parse("a == 1 AND b == 2 AND c == 3"))` is the three comparisons; a node that is not an
    `And`/`Or` is its own single operand. Walking chains this way keeps long filters off the call stack.
    """
    if not isinstance(node, And | Or):
        return [node]
    kind = type(node)
    rights: list[Filter] = []
    current: Filter = node
    while type(current) is kind:
        assert isinstance(current, And | Or)
        rights.append(current.right)
        current = current.left
    rights.append(current)
    rights.reverse()
    return rights


def _chain(kind: type[And] | type[Or], items: list[Filter]) -> Filter:
    result = items[0]
    for item in items[1:]:
        result = kind(result, item)
    return result


def negate(node: Filter) -> Filter:
    """Push NOT down to the comparisons: the exact meaning of NOT in docs/filters.md.

    De Morgan's laws for AND/OR, and each comparison replaced by its opposite operator, so the
    result holds no `Not` node. `negate(parse("a == 1"))` is `parse("a != 1")`.
    """
    return _without_not(node, True)


def push_not_down(node: Filter) -> Filter:
    """The same filter without any `Not` node (each NOT applied through `negate`)."""
    return _without_not(node, False)


def _without_not(node: Filter, negated: bool) -> Filter:
    """`node` (negated if asked) with every NOT applied, the shape of its chains kept.

    A post-order walk with an explicit stack, so trees of any depth are rewritten without recursion.
    """
    done: list[Filter] = []
    # (node, negated, its operands already rewritten onto `done`)
    stack: list[tuple[Filter, bool, bool]] = [(node, negated, False)]
    while stack:
        current, flip, ready = stack.pop()
        if ready:
            chain = operands(current)
            results = done[len(done) - len(chain) :]
            del done[len(done) - len(chain) :]
            kind: type[And] | type[Or] = Or if isinstance(current, And) == flip else And
            done.append(_chain(kind, results))
            continue
        while isinstance(current, Not):
            current, flip = current.operand, not flip
        if isinstance(current, Comparison):
            done.append(Comparison(current.key, current.op.opposite, current.value) if flip else current)
        else:
            stack.append((current, flip, True))
            stack.extend((item, flip, False) for item in reversed(operands(current)))
    return done[0]


def to_text(node: Filter) -> str:
    """The canonical text of `node`; `parse(to_text(node)) == node` for every tree with non-empty lists.

    A chain of the same operator along the left edge is written flat, `(a == 1) AND (b == 2) AND (c == 3)`,
    because AND and OR group left to right; this keeps long chains readable and their text shallow.
    """
    parts: list[str] = []
    # An explicit stack of nodes still to write and literal text, so deep trees need no recursion.
    stack: list[Filter | str] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Comparison):
            parts.append(comparison_text(item.key, item.op.value, item.op.takes_no_value, item.value))
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
