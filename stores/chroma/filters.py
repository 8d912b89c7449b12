"""Filter trees (docs/filters.md) as Chroma `where` clauses that select a superset, finished in Python.

`ChromaFilter.accepts` decides each candidate with `rag.filters.holds`, so `get`, `count` and search
eligibility are exact whatever Chroma can evaluate. What chromadb 1.5.9 cannot (string orderings,
`$exists`, `$not`, one-clause junctions, empty or mixed-type lists, values in `_rag_json`) widens the
clause. A float operand is truncated when compared with an integer value (`$eq 1.5` matches `1`), so
whole numbers are sent as integers and a fraction only where truncation adds candidates (`x < 1.5` is
sent as `x <= 2`). Chroma refuses a `where` nested about 60 levels deep, and SQLite expressions
1,000 deep: junctions below `MAX_LEVELS` select everything and `bounded` trims a clause to `MAX_COST`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from rag.filters import Comparison, Filter, Normal, Op, holds, normalize
from rag.filters.evaluate import is_number
from stores.chroma.records import ENCODED, SAFE_INT, encodable, key_token, native_key

__all__ = ["MAX_COST", "MAX_LEVELS", "ChromaFilter", "Where", "bounded", "compile_filter"]

MAX_LEVELS = 12
"""AND/OR levels of a filter's normal form sent to Chroma; deeper junctions are finished in Python."""
MAX_COST = 300
"""Bound on a clause's cost: along any path, the widths of its `$and`/`$or` lists summed."""

Where: TypeAlias = dict[str, Any]
_Part: TypeAlias = Where | bool
"""A compiled subtree: a clause, or everything (True) or nothing (False)."""
_OPS = {Op.EQ: "$eq", Op.NE: "$ne", Op.LT: "$lt", Op.LE: "$lte", Op.GT: "$gt", Op.GE: "$gte"}


@dataclass(frozen=True)
class ChromaFilter:
    """A filter as Chroma runs it: a superset `where`, and the exact check of each candidate.

    Example:
        >>> from rag.filters import parse
        >>> f = compile_filter(parse("year >= 2020 AND draft == false"))
        >>> f.where["$and"][1]["$or"][0]  # or the key among the encoded values
        {'draft': {'$eq': False}}
        >>> f.accepts({"year": 2021, "draft": False}), f.matches_nothing
        (True, False)
    """

    where: Where | None
    """Chroma's clause; None means no constraint."""
    matches_nothing: bool
    """The filter is false for every document: no request needs to run."""
    normal: Normal | None
    """The filter's normal form (None: no filter)."""

    def accepts(self, metadata: Mapping[str, object]) -> bool:
        """Whether a candidate's decoded metadata matches the filter."""
        return self.normal is None or holds(self.normal, metadata)


def compile_filter(tree: Filter | None) -> ChromaFilter:
    """The `where` clause (a superset of the matches) and the check for `tree`.

    Raises:
        FilterError: the tree nests deeper than `rag.filters.MAX_DEPTH`.
    """
    if tree is None:
        return ChromaFilter(None, False, None)
    normal = normalize(tree)
    part = _compile(normal, 0)
    if isinstance(part, bool):
        return ChromaFilter(None, not part, normal)
    return ChromaFilter(bounded(part, MAX_COST), False, normal)


def _compile(node: Normal, level: int) -> _Part:
    if isinstance(node, Comparison):
        return _comparison(node)
    if level >= MAX_LEVELS:
        if not node.conjunction:
            return True
        return _combine("$and", [_comparison(item) for item in node.items if isinstance(item, Comparison)])
    parts = [_compile(item, level + 1) for item in node.items]
    return _combine("$and" if node.conjunction else "$or", parts)


def bounded(where: Where, budget: int) -> Where | None:
    """A clause selecting `where`'s records or more (None: everything), of cost at most about `budget`."""
    op = next(iter(where))
    if len(where) != 1 or op not in ("$and", "$or"):
        return where
    clauses: list[Where] = where[op]
    if op == "$or" and len(clauses) >= budget:
        return None
    # Dropping clauses of an $and only widens it; an $or must keep every clause or become "everything".
    keep = len(clauses) if op == "$or" else min(len(clauses), max(1, budget // 2))
    kept: list[Where] = []
    for clause in clauses[:keep]:
        trimmed = bounded(clause, budget - keep)
        if trimmed is None:
            if op == "$or":
                return None
            continue
        kept.append(trimmed)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else {op: kept}


def _combine(op: str, parts: Sequence[_Part]) -> _Part:
    """`$and` / `$or` of parts: constants folded, nested clauses of the same operator flattened."""
    absorbing = op == "$or"  # everything absorbs an OR, nothing absorbs an AND
    clauses: list[Where] = []
    for part in parts:
        if isinstance(part, bool):
            if part == absorbing:
                return part
            continue
        clauses.extend(part[op] if set(part) == {op} else [part])
    if not clauses:
        return not absorbing
    return clauses[0] if len(clauses) == 1 else {op: clauses}  # Chroma refuses one-clause lists


def _exact_operand(value: object) -> object | None:
    """The operand Chroma compares exactly with every native value equal to `value`, or None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value if encodable(value) else None
    assert isinstance(value, int | float)
    if math.isfinite(value) and float(value).is_integer() and abs(value) <= SAFE_INT:
        return int(value)
    return None


def _comparison(node: Comparison) -> _Part:
    """A superset clause for one comparison."""
    op, key, value = node.op, node.key, node.value
    if op in (Op.LT, Op.LE, Op.GT, Op.GE) and not is_number(value):
        # docs/filters.md orders no boolean; Chroma refuses string orderings, so Python decides them.
        return not isinstance(value, bool)
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return True  # Chroma has no $exists
    if op is Op.IN and not value:
        return False
    native = _native_clause(node) if native_key(key) else (not op.is_positive)
    if not op.is_positive:
        return native
    return _combine("$or", [native, {ENCODED: {"$contains": key_token(key)}}])  # or among encoded values


def _native_clause(node: Comparison) -> _Part:
    op, key, value = node.op, node.key, node.value
    if op in (Op.IN, Op.NIN):
        assert isinstance(value, tuple)
        return _list_clause(key, op, value)
    if op in (Op.CONTAINS, Op.NOT_CONTAINS):
        return _contains(key, op is Op.CONTAINS, value)
    operand = _exact_operand(value)
    if operand is not None:
        return {key: {_OPS[op]: operand}}
    if op is Op.NE:
        return True
    if not is_number(value):
        return False  # a string Chroma cannot store is only ever encoded
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or abs(number) > SAFE_INT:
        return True  # beyond exact floats: Python decides
    if op is Op.EQ:
        return {key: {"$eq": number}}  # matches the equal floats; truncation adds ints only
    upward = op in (Op.LT, Op.LE)
    bound = math.ceil(number) if upward else math.floor(number)
    return {key: {"$lte" if upward else "$gte": bound}}


def _list_clause(key: str, op: Op, values: tuple[object, ...]) -> _Part:
    """`IN` / `NOT IN`: one `$in`/`$nin` per type (Chroma refuses mixed lists)."""
    positive = op is Op.IN
    groups: dict[type, dict[object, None]] = {}
    loose = False
    for value in values:
        operand = _exact_operand(value)
        if operand is None:
            loose = True
            if positive and is_number(value) and math.isfinite(float(value)) and abs(value) <= SAFE_INT:  # type: ignore[arg-type]
                operand = float(value)  # type: ignore[arg-type]  # truncation only adds candidates
            else:
                continue  # NIN: leaving the value out only widens; IN: only encoded records hold it
        groups.setdefault(type(operand), {})[operand] = None
    if positive and loose and any(is_number(v) and abs(v) > SAFE_INT for v in values):  # type: ignore[arg-type]
        return True
    name = "$in" if positive else "$nin"
    parts = [{key: {name: list(group)}} for group in groups.values()]
    return _combine("$or" if positive else "$and", parts)


def _contains(key: str, positive: bool, value: object) -> _Part:
    """`CONTAINS` / `NOT CONTAINS`: Chroma's `$contains` is type-strict, so 2 asks for 2 and 2.0."""
    operand = _exact_operand(value)
    if operand is None:
        if not positive or not is_number(value) or not math.isfinite(float(value)):  # type: ignore[arg-type]
            return not positive
        # Only a float equal to `value` can be in a native list: ints there are within 2**53.
        operands: list[object] = [float(value)]  # type: ignore[arg-type]
    elif is_number(operand):
        operands = [operand, float(operand)]  # type: ignore[arg-type]
    else:
        operands = [operand]
    test = "$contains" if positive else "$not_contains"
    return _combine("$or" if positive else "$and", [{key: {test: each}} for each in operands])
