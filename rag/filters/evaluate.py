"""The meaning of a filter for one document's metadata: the reference every store must agree with."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from rag.filters.tree import And, Comparison, Filter, Not, Op, Scalar, negate, operands

__all__ = ["matches"]

_ORDER: dict[Op, Callable[[Any, Any], Any]] = {
    Op.LT: operator.lt,
    Op.LE: operator.le,
    Op.GT: operator.gt,
    Op.GE: operator.ge,
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(a: object, b: object) -> bool:
    """Equality as FILTERS.md says: numbers by value across int/float, a boolean is not a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def _ordered(a: object, op: Op, b: object) -> bool:
    if not ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return bool(_ORDER[op](a, b))


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


def _compare(node: Comparison, metadata: Mapping[str, object]) -> bool:
    value = metadata.get(node.key)
    if value is None:
        return not node.op.is_positive
    if node.op.is_positive:
        return _positive(value, node.op, node.value)
    return not _positive(value, node.op.opposite, node.value)


def matches(node: Filter | None, metadata: Mapping[str, object]) -> bool:
    """Whether a document with this metadata satisfies `node` (None matches everything)."""
    if node is None:
        return True
    if isinstance(node, Comparison):
        return _compare(node, metadata)
    if isinstance(node, Not):
        # Not plain boolean negation: `NOT a < 5` is `a >= 5`, false for a string `a` (FILTERS.md).
        return matches(negate(node.operand), metadata)
    # Walk a same-operator chain in a loop, so a long AND/OR chain costs no recursion.
    if isinstance(node, And):
        return all(matches(item, metadata) for item in operands(node))
    return any(matches(item, metadata) for item in operands(node))
