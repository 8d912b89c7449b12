"""The meaning of a filter for one document's metadata: the reference every store must agree with."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rag.filters.normal import Junction, Normal, normalize
from rag.filters.tree import Comparison, Filter, Op, Scalar

__all__ = ["ORDERING", "compare", "holds", "is_number", "matches"]

ORDERING: dict[Op, Callable[[Any, Any], Any]] = {
    Op.LT: operator.lt,
    Op.LE: operator.le,
    Op.GT: operator.gt,
    Op.GE: operator.ge,
}
"""The ordering operators and their Python functions (the stores' compiled filters share them)."""


def is_number(value: object) -> bool:
    """Whether a filter value is a number: an int or a float, never a bool (docs/filters.md)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(a: object, b: object) -> bool:
    """Equality as docs/filters.md says: numbers by value across int/float, a boolean is not a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def _ordered(a: object, op: Op, b: object) -> bool:
    if not ((is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return bool(ORDERING[op](a, b))


def _positive(value: object, op: Op, operand: Scalar | tuple[Scalar, ...] | None) -> bool:
    """A positive operator on a present value."""
    if op is Op.EQ:
        return _equal(value, operand)
    if op is Op.IN:
        assert isinstance(operand, tuple)
        return any(_equal(value, v) for v in operand)
    if op is Op.CONTAINS:
        return isinstance(value, list | tuple) and any(_equal(item, operand) for item in value)
    if op is Op.IS_NOT_NULL:
        return True
    return _ordered(value, op, operand)


def compare(node: Comparison, metadata: Mapping[str, object]) -> bool:
    """Whether a document with this metadata satisfies one comparison."""
    value = metadata.get(node.key)
    if value is None:
        return not node.op.is_positive
    if node.op.is_positive:
        return _positive(value, node.op, node.value)
    return not _positive(value, node.op.opposite, node.value)


def matches(node: Filter | None, metadata: Mapping[str, object]) -> bool:
    """Whether a document with this metadata satisfies `node` (None matches everything).

    NOT is not plain boolean negation: `NOT a < 5` is `a >= 5`, false for a string `a` (docs/filters.md).
    To test many documents against one filter, `normalize` it once and call `holds`.

    Raises:
        FilterError: `node` nests deeper than `rag.filters.normal.MAX_DEPTH`.
    """
    if node is None:
        return True
    if isinstance(node, Comparison):
        return compare(node, metadata)
    return holds(normalize(node), metadata)


def holds(normal: Normal, metadata: Mapping[str, object]) -> bool:
    """Whether a document with this metadata satisfies the normal form (short-circuits, no recursion)."""
    if isinstance(normal, Comparison):
        return compare(normal, metadata)
    frames: list[tuple[bool, Iterator[Normal]]] = [(normal.conjunction, iter(normal.items))]
    value: bool | None = None  # the value of the junction just finished, for its parent
    while frames:
        conjunction, items = frames[-1]
        if value is not None and value != conjunction:
            frames.pop()  # False decides an AND, True an OR
            continue
        value = None
        for item in items:
            if isinstance(item, Junction):
                frames.append((item.conjunction, iter(item.items)))
                break
            if compare(item, metadata) != conjunction:
                value = not conjunction
                frames.pop()
                break
        else:
            value = conjunction  # every item agreed
            frames.pop()
    assert value is not None
    return value
