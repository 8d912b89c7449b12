"""The normal form stores evaluate: NOT pushed into the comparisons, chains of one operator made n-ary.

`And`/`Or` nodes are binary, so a filter of 5,000 clauses is 5,000 levels deep however it was grouped
(`a AND (b AND (c AND ...))` as much as `((a AND b) AND c) AND ...`). `normalize` flattens every chain
of the same operator into one `Junction` and applies each NOT (docs/filters.md, "Meaning"), so only the
alternations of AND and OR remain as depth. It and `rag.filters.evaluate.holds` work with explicit
stacks: no filter, however deep, raises `RecursionError`.

`MAX_DEPTH` is the one real limit: a filter whose normal form nests more than that many AND/OR levels
is refused with a `FilterError` that says so (the parser refuses text nesting more operators than that
with a `FilterSyntaxError`), so every filter the parser accepts is answered by every store.

Example:
    >>> from rag.filters import parse
    >>> normal = normalize(parse("a == 1 AND (b == 2 AND NOT (c == 3 OR d == 4))"))
    >>> normal.conjunction, len(normal.items), depth(normal)
    (True, 4, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag.errors import FilterError
from rag.filters.tree import And, Comparison, Filter, Not, Or

__all__ = ["MAX_DEPTH", "Junction", "Normal", "depth", "normalize"]

MAX_DEPTH = 1000
"""The deepest nesting of alternating AND/OR levels a filter may have (chains of one operator count once)."""


@dataclass(frozen=True)
class Junction:
    """An n-ary AND (`conjunction` True) or OR of at least two items, none a junction of the same kind."""

    conjunction: bool
    items: tuple[Normal, ...]


Normal = Comparison | Junction


@dataclass
class _Frame:
    """A junction being built: items done so far, and the (node, negated) pairs still to visit."""

    conjunction: bool
    todo: list[tuple[Filter, bool]]
    items: list[Normal] = field(default_factory=list)


def _finish(frame: _Frame) -> Normal:
    return frame.items[0] if len(frame.items) == 1 else Junction(frame.conjunction, tuple(frame.items))


def normalize(node: Filter) -> Normal:
    """The normal form of `node`: the same meaning, no `Not`, every same-operator chain one `Junction`.

    Raises:
        FilterError: the normal form nests more than `MAX_DEPTH` levels; the message gives the depth.
    """
    root = _Frame(True, [(node, False)])
    frames = [root]
    deepest = 0
    while frames:
        frame = frames[-1]
        if not frame.todo:
            frames.pop()
            if frames:
                frames[-1].items.append(_finish(frame))
            continue
        current, negated = frame.todo.pop()
        while isinstance(current, Not):
            current, negated = current.operand, not negated
        if isinstance(current, Comparison):
            opposite = Comparison(current.key, current.op.opposite, current.value)
            frame.items.append(opposite if negated else current)
            continue
        assert isinstance(current, And | Or)
        conjunction = isinstance(current, And) != negated  # De Morgan: NOT swaps AND and OR
        children = [(current.right, negated), (current.left, negated)]  # popped left first
        if conjunction == frame.conjunction:
            frame.todo.extend(children)  # the same operator: one flat junction
        else:
            frames.append(_Frame(conjunction, children))
            deepest = max(deepest, len(frames) - 1)
    result = _finish(root)
    # The root frame is an AND wrapper: a top-level OR opened one frame more than its depth.
    levels = deepest + (isinstance(result, Junction) and result.conjunction)
    if levels > MAX_DEPTH:
        raise FilterError(
            f"filter nests {levels} levels of AND/OR deep; the limit is {MAX_DEPTH} "
            "(chains of one operator count as one level)"
        )
    return result


def depth(normal: Normal) -> int:
    """How many junction levels `normal` nests (0 for a comparison)."""
    deepest = 0
    stack: list[tuple[Normal, int]] = [(normal, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Junction):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item.items)
    return deepest
