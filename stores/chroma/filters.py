"""Compile filter trees (FILTERS.md) to Chroma `where` clauses, and finish in Python what Chroma cannot.

What chromadb 1.5.9 does, measured against its embedded client (tests/stores/test_chroma.py pins each):

- A missing key: `$ne`, `$nin` and `$not_contains` are true, every other operator false. That is
  exactly the FILTERS.md rule, so negative operators need no correction.
- `$eq 1` matches `1` and `1.0` but not `True`; `$eq True` matches only `True`; `$eq 0` is not `False`.
  A list value never satisfies `$eq`/`$in`/`$gt`..., and `$ne`/`$nin` are true on it, as FILTERS.md says.
- A float operand compared with an integer value is truncated first: `$eq 1.5` matches `1`, `$lt 1.5`
  misses `1`, `$in [1.5]` matches `1`. An integer operand against a float value compares correctly. So
  records index every number as a float (exact up to 2**53) and operands are sent as floats; larger
  integers are finished in Python.
- `$contains` is type-strict: `1` does not find `1.0` in a list. Lists are therefore indexed as tokens
  in `_rag_items` (see `stores.chroma.records`) where `1` and `1.0` share one token.
- Refused by Chroma and rewritten here: a one-operand `$and`/`$or` (unwrapped), an empty `$in`
  (matches nothing) or `$nin` (matches everything), an `$in` list of mixed types (split by type into
  an `$or`, `$nin` into an `$and`), `$lt`/`$gt`... with a string or boolean operand (a boolean gives
  "no match", FILTERS.md compares numbers with numbers only; a string is finished in Python), keys
  starting with `#` or `$`, and lists that are empty or mix types (rejected on write).
- There is no `$exists` and no `$not`: NOT is pushed down first (`push_not_down`); `IS [NOT] NULL`
  tests the record's `_rag_key:<token>` flag (`$eq 1` / `$ne 1`), and in a collection that may
  hold records of older versions also their `_rag_keys` list (`$contains` / `$not_contains`).

When part of a tree cannot be evaluated by Chroma, that comparison is replaced by a condition that
holds for every document it could hold for (a superset), so the compiled `where` selects a superset
of the matches, and `ChromaFilter.accepts` evaluates the whole tree with `rag.filters.matches` on each
candidate's exact metadata. Because NOT was pushed down first, the tree has only AND and OR above the
comparisons, and widening a comparison only ever widens the tree. Nothing is dropped or approximated,
so no filter needs to be refused with a `FilterError`.

Chroma also has limits of size: it refuses a `where` nested about 60 levels deep ("Invalid where clause";
deeper ones have crashed the process), and its SQLite refuses expressions nested 1,000 deep, which a
flat `$and` of ~1,000 clauses already is (each clause of a chain adds a level). The tree is therefore
compiled in its normal form (`rag.filters.normalize`: chains of one operator made one n-ary junction),
junctions below `MAX_LEVELS` are widened to "everything", and `bounded` trims the clause to a cost
of `MAX_COST` (an `$and` keeps its first clauses, an `$or` too wide becomes "everything"). Each trim
only widens, and the Python check finishes the filter exactly, as for the comparisons above.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from rag.filters import Comparison, Filter, Normal, Op, holds, normalize
from stores.chroma.records import (
    ITEMS,
    KEYS,
    OPAQUE,
    ORDER_EXACT_BYTES,
    index_value,
    indexable_key,
    item_token,
    key_flag,
    key_token,
    order_code,
    order_codes,
    order_key,
    order_keys,
)

__all__ = ["MAX_COST", "MAX_LEVELS", "ChromaFilter", "Where", "bounded", "compile_filter"]

MAX_LEVELS = 12
"""AND/OR levels of a filter's normal form sent to Chroma; deeper junctions are finished in Python."""

MAX_COST = 300
"""Bound on a clause's cost: along any path, the widths of its `$and`/`$or` lists summed (SQLite's
expression depth grows that way; it refuses 1,000), with a wide margin for the store's own wrappers."""

Where: TypeAlias = dict[str, Any]

_CHROMA_OPS = {
    Op.EQ: "$eq",
    Op.NE: "$ne",
    Op.LT: "$lt",
    Op.LE: "$lte",
    Op.GT: "$gt",
    Op.GE: "$gte",
    Op.IN: "$in",
    Op.NIN: "$nin",
}
_ORDERING = frozenset({Op.LT, Op.LE, Op.GT, Op.GE})


@dataclass(frozen=True)
class _Part:
    """A compiled subtree: a constant (`where` None) or a clause; `exact` False means a superset."""

    where: Where | None
    constant: bool = True
    exact: bool = True


_ALL = _Part(None, True)
_NONE = _Part(None, False)


@dataclass(frozen=True)
class ChromaFilter:
    """A filter as Chroma runs it: a `where` clause, plus the Python check when it is not exact.

    Example:
        >>> from rag.filters import parse
        >>> f = compile_filter(parse("year >= 2020 AND tag IN ['a', 1]"))
        >>> f.where["$and"][0]
        {'year': {'$gte': 2020.0}}
        >>> f.exact, f.matches_nothing
        (True, False)
    """

    where: Where | None
    """Chroma's clause; None means no constraint."""
    matches_nothing: bool
    """The filter is false for every document: no query needs to run."""
    exact: bool
    """`where` selects exactly the matches; otherwise a superset to check with `accepts`."""
    tree: Filter | None
    normal: Normal | None = None
    """The tree's normal form, evaluated by `accepts` (None: no filter)."""

    def accepts(self, metadata: Mapping[str, object]) -> bool:
        """Whether a candidate selected by `where` matches (its exact metadata is needed when inexact)."""
        return self.exact or self.normal is None or holds(self.normal, metadata)


@dataclass(frozen=True)
class _Context:
    """What compiling needs to know about the collection."""

    opaque: frozenset[str]
    legacy_keys: bool
    ordered: bool = False
    exact_order: bool = False


def compile_filter(
    tree: Filter | None,
    opaque_keys: Collection[str] = (),
    *,
    legacy_keys: bool = False,
    ordered: bool = False,
    exact_order: bool = False,
) -> ChromaFilter:
    """Compile a filter tree for Chroma.

    Args:
        tree: The filter, or None for "everything".
        opaque_keys: Keys that hold, on some record, a value Chroma could not index (see
            `stores.chroma.records`); comparisons on them are finished in Python.
        legacy_keys: The collection may hold records of older versions, which list their keys in
            `_rag_keys` instead of flagging each one; key tests then read both.
        ordered: Every record holds `order_key` codes for its string values (collections created by
            issue 17's first part), so string orderings are narrowed by Chroma before Python finishes them.
        exact_order: Every record holds the two `order_keys` codes for its string values (collections
            created since), so string orderings compile to an exact clause (operands up to
            `ORDER_EXACT_BYTES` bytes; longer ones are narrowed and finished in Python).

    Raises:
        FilterError: the tree nests deeper than `rag.filters.MAX_DEPTH`.
    """
    if tree is None:
        return ChromaFilter(None, False, True, None)
    normal = normalize(tree)
    context = _Context(frozenset(opaque_keys), legacy_keys, ordered, exact_order)
    part = _compile(normal, context, 0)
    if part.where is None:
        return ChromaFilter(None, not part.constant, part.exact, tree, normal)
    where, whole = bounded(part.where, MAX_COST)
    return ChromaFilter(where, False, part.exact and whole, tree, normal)


def _compile(node: Normal, context: _Context, level: int) -> _Part:
    """Compile the normal form; recursion stops at `MAX_LEVELS`, so it stays shallow."""
    if isinstance(node, Comparison):
        return _comparison(node, context)
    items: list[Normal] = list(node.items)
    if level >= MAX_LEVELS:
        if not node.conjunction:
            return _Part(None, True, exact=False)  # everything: Python decides
        # An AND may still narrow by its comparisons; its deeper junctions are left to Python.
        items = [item for item in node.items if isinstance(item, Comparison)]
        parts = [_compile(item, context, level + 1) for item in items]
        return _combine("$and", [*parts, _Part(None, True, exact=False)])
    return _combine(
        "$and" if node.conjunction else "$or", [_compile(item, context, level + 1) for item in items]
    )


def bounded(where: Where, budget: int) -> tuple[Where | None, bool]:
    """A clause selecting `where`'s records or more, of cost at most about `budget` (see `MAX_COST`).

    Returns the clause (None: no constraint) and whether it is still exactly `where`.
    """
    op = next(iter(where))
    if len(where) != 1 or op not in ("$and", "$or"):
        return where, True
    clauses: list[Where] = where[op]
    if op == "$or" and len(clauses) >= budget:
        return None, False
    # Dropping clauses of an $and only widens it; an $or must keep every clause or become "everything".
    keep = len(clauses) if op == "$or" else min(len(clauses), max(1, budget // 2))
    kept: list[Where] = []
    exact = keep == len(clauses)
    for clause in clauses[:keep]:
        trimmed, whole = bounded(clause, budget - keep)
        exact = exact and whole
        if trimmed is None:
            if op == "$or":
                return None, False
            continue
        kept.append(trimmed)
    if not kept:
        return None, False
    return (kept[0] if len(kept) == 1 else {op: kept}), exact


def _combine(op: str, parts: list[_Part]) -> _Part:
    """`$and` / `$or` of parts: constants folded, nested clauses of the same operator flattened."""
    absorbing = op == "$or"  # True absorbs an OR, False absorbs an AND
    clauses: list[Where] = []
    exact = True
    for part in parts:
        exact = exact and part.exact
        if part.where is None:
            if part.constant == absorbing:
                return part
            continue
        clauses.extend(part.where[op] if set(part.where) == {op} else [part.where])
    if not clauses:
        return _Part(None, not absorbing, exact=exact)
    # Chroma rejects a one-operand $and / $or.
    return _Part(clauses[0] if len(clauses) == 1 else {op: clauses}, exact=exact)


def _has_key(key: str, present: bool, context: _Context) -> _Part:
    """The records whose metadata has `key` (`present`), or lacks it."""
    flag: Where = {key_flag(key): {"$eq": 1} if present else {"$ne": 1}}
    if not context.legacy_keys:
        return _Part(flag)
    listed: Where = {KEYS: {"$contains" if present else "$not_contains": key_token(key)}}
    return _combine("$or" if present else "$and", [_Part(flag), _Part(listed)])


def _python(node: Comparison, context: _Context) -> _Part:
    """A comparison left to Python, widened to what Chroma can still tell: the key is present."""
    if not node.op.is_positive:
        return _Part(None, True, exact=False)
    return _Part(_has_key(node.key, True, context).where, exact=False)


def _comparison(node: Comparison, context: _Context) -> _Part:
    if node.op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return _has_key(node.key, node.op is Op.IS_NOT_NULL, context)
    if node.op in (Op.CONTAINS, Op.NOT_CONTAINS):
        test = "$contains" if node.op is Op.CONTAINS else "$not_contains"
        return _Part({ITEMS: {test: item_token(node.key, node.value)}})
    if node.op in _ORDERING and isinstance(node.value, bool):
        return _NONE  # FILTERS.md orders numbers with numbers only: never true
    if node.op in _ORDERING and isinstance(node.value, str):
        return _string_order(node, context)
    if not indexable_key(node.key):
        return _python(node, context)
    part = _values(node, context)
    if node.key in context.opaque:
        # Records holding an unindexable value under this key look "missing" to Chroma.
        if node.op.is_positive:
            part = _combine("$or", [part, _Part({OPAQUE: {"$contains": key_token(node.key)}})])
        part = _Part(part.where, part.constant, exact=False)
    return part


def _string_order(node: Comparison, context: _Context) -> _Part:
    """`<`, `<=`, `>`, `>=` on text: narrowed by the order codes where every record has them."""
    ordered = context.ordered or context.exact_order
    if not ordered or not indexable_key(node.key) or node.key in context.opaque:
        return _python(node, context)
    assert isinstance(node.value, str)
    if context.exact_order:
        return _exact_order(node.key, node.op, node.value)
    bound = "$lte" if node.op in (Op.LT, Op.LE) else "$gte"  # codes tie on a shared 6-byte prefix
    return _Part({order_key(node.key): {bound: order_code(node.value)}}, exact=False)


def _exact_order(key: str, op: Op, value: str) -> _Part:
    """A string ordering over the two `order_codes`: (head, tail) compared lexicographically.

    Exact when `value` has at most `ORDER_EXACT_BYTES` bytes. A longer operand shares its codes with
    every string of the same 15-byte prefix longer than 15 bytes, so those ties are kept (`<=`/`>=` on
    the codes) and Python decides them.
    """
    head_key, tail_key = order_keys(key)
    head, tail = order_codes(value)
    exact = len(value.encode("utf-8", "surrogatepass")) <= ORDER_EXACT_BYTES
    above = op in (Op.GT, Op.GE)
    strict = op in (Op.GT, Op.LT) and exact
    beyond = "$gt" if above else "$lt"
    tie_break = beyond if strict else ("$gte" if above else "$lte")
    where: Where = {
        "$or": [
            {head_key: {beyond: head}},
            {"$and": [{head_key: {"$eq": head}}, {tail_key: {tie_break: tail}}]},
        ]
    }
    return _Part(where, exact=exact)


def _values(node: Comparison, context: _Context) -> _Part:
    """A value comparison on an indexable key; lists are split by type, odd values left to Python."""
    values = node.value if isinstance(node.value, tuple) else (node.value,)
    groups: dict[type, list[object]] = {}
    leftovers = False
    for value in values:
        indexed = index_value(value)
        if indexed is None:
            leftovers = True
        elif indexed not in groups.setdefault(type(indexed), []):
            groups[type(indexed)].append(indexed)
    op = _CHROMA_OPS[node.op]
    parts = [_Part({node.key: {op: v[0] if not node.op.takes_list else v}}) for v in groups.values()]
    if leftovers:
        parts.append(_python(node, context))
    if node.op is Op.NIN or node.op is Op.NE:
        return _combine("$and", parts)
    return _combine("$or", parts)
