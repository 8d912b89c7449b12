"""Deep and wide filters: the normal form, evaluation without recursion, the one depth limit, signs."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings

from rag.errors import FilterError, FilterSyntaxError
from rag.filters import (
    MAX_DEPTH,
    And,
    Comparison,
    Filter,
    Junction,
    Not,
    Or,
    holds,
    key,
    matches,
    negate,
    normalize,
    parse,
    push_not_down,
)
from rag.filters.evaluate import compare
from rag.filters.lexer import tokenize
from rag.filters.normal import depth
from stores.testing.strategies import filter_trees, metadata_dicts

A, B, C, D = (key(name) == 1 for name in "abcd")


def _reference(node: Filter, metadata: Mapping[str, object], negated: bool = False) -> bool:
    """The meaning in docs/filters.md, written recursively, independently of `normalize` (shallow trees)."""
    if isinstance(node, Comparison):
        op = node.op.opposite if negated else node.op
        return compare(Comparison(node.key, op, node.value), metadata)
    if isinstance(node, Not):
        return _reference(node.operand, metadata, not negated)
    left = _reference(node.left, metadata, negated)
    right = _reference(node.right, metadata, negated)
    conjunction = isinstance(node, And) != negated
    return (left and right) if conjunction else (left or right)


@settings(max_examples=300, deadline=None)
@given(filter_trees(max_depth=5), metadata_dicts())
def test_normal_form_keeps_the_meaning(tree: Filter, metadata: dict[str, object]) -> None:
    normal = normalize(tree)
    assert holds(normal, metadata) == _reference(tree, metadata) == matches(tree, metadata)
    # No junction holds a junction of its own kind: chains are flat.
    stack = [normal]
    while stack:
        item = stack.pop()
        if isinstance(item, Junction):
            assert len(item.items) >= 2
            assert all(
                not (isinstance(c, Junction) and c.conjunction == item.conjunction) for c in item.items
            )
            stack.extend(item.items)


def test_chains_flatten_however_they_are_grouped() -> None:
    expected = Junction(True, (A, B, C, D))
    assert normalize(((A & B) & C) & D) == expected
    assert normalize(A & (B & (C & D))) == expected
    assert normalize((A & B) & (C & D)) == expected
    # NOT swaps AND and OR (De Morgan) and flips each comparison.
    assert normalize(~(A | (B | ~C))) == Junction(True, (key("a") != 1, key("b") != 1, C))
    assert normalize(A | (B & C)) == Junction(False, (A, Junction(True, (B, C))))
    assert depth(normalize(A | (B & C))) == 2 and depth(A) == 0


@pytest.mark.parametrize("size", [1_000, 20_000])
def test_long_chains_of_any_shape_need_no_recursion(size: int) -> None:
    right_and: Filter = A
    left_or: Filter = A
    nots: Filter = A
    for i in range(size):
        right_and = (key("x") != i) & right_and
        left_or = left_or | (key("x") == i)
        nots = Not(nots)
    assert matches(right_and, {"a": 1, "x": -1}) and not matches(right_and, {"a": 1, "x": 5})
    assert matches(left_or, {"x": size - 1}) and not matches(left_or, {"x": size})
    assert matches(nots, {"a": 1}) == (size % 2 == 0)
    assert depth(normalize(right_and)) == 1
    # negate and push_not_down keep the shape and walk without recursion too.
    assert push_not_down(nots) == (A if size % 2 == 0 else key("a") != 1)
    negated = negate(right_and)
    assert isinstance(negated, Or) and matches(negated, {"a": 2})
    assert negate(negated) == right_and


def _alternating(levels: int) -> Filter:
    """A filter whose normal form nests `levels` AND/OR levels: k0 == 1 OR (k1 == 1 AND (k2 == 1 OR ...))."""
    tree: Filter = key("x") == 1
    for i in reversed(range(levels)):
        item = key(f"k{i}") == 1
        tree = (item | tree) if i % 2 == 0 else (item & tree)
    return tree


def test_depth_up_to_the_limit_is_answered_and_beyond_is_a_clear_error() -> None:
    at_limit = _alternating(MAX_DEPTH)
    assert depth(normalize(at_limit)) == MAX_DEPTH
    assert matches(at_limit, {"k0": 1}) and not matches(at_limit, {"x": 1})
    every_and = {f"k{i}": 1 for i in range(1, MAX_DEPTH, 2)}
    assert matches(at_limit, {**every_and, "x": 1}) and not matches(at_limit, every_and)
    with pytest.raises(
        FilterError, match=rf"filter nests 5000 levels of AND/OR deep; the limit is {MAX_DEPTH}"
    ):
        matches(_alternating(5000), {"x": 1})
    with pytest.raises(FilterError, match=rf"nests {MAX_DEPTH + 1} levels"):
        normalize(_alternating(MAX_DEPTH + 1))


def test_the_parser_accepts_only_what_stores_answer() -> None:
    text = str(_alternating(MAX_DEPTH))
    assert parse(text) == _alternating(MAX_DEPTH)
    with pytest.raises(FilterSyntaxError, match=rf"the limit is {MAX_DEPTH}"):
        parse(str(_alternating(MAX_DEPTH + 2)))
    # Deep parentheses and NOTs give a clean error or a tree, never RecursionError.
    with pytest.raises(FilterSyntaxError, match="nested more than"):
        parse("NOT (" * 5000 + "a == 1" + ")" * 5000)
    with pytest.raises(FilterSyntaxError, match="is never closed"):
        parse("(" * 90_000 + "a == 1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("year == - 7", key("year") == -7),
        ("year == -7", key("year") == -7),
        ("year > +  7.5", key("year") > 7.5),
        ("year == -\t.5e1", key("year") == -5.0),
        ("year IN [- 1, + 2, -3L]", key("year").in_([-1, 2, -3])),
        ("year == - 7 AND b == 1", (key("year") == -7) & (key("b") == 1)),
    ],
)
def test_a_sign_may_stand_apart_from_its_number(text: str, expected: Filter) -> None:
    tree = parse(text)
    assert tree == expected
    assert parse(str(tree)) == tree
    spaced = str(tree).replace("-", "- ")
    assert parse(spaced) == tree


@pytest.mark.parametrize("text", ["year == -", "year == - x", "year == - - 7", "year == -'7'"])
def test_a_lone_sign_is_still_a_syntax_error(text: str) -> None:
    with pytest.raises(FilterSyntaxError):
        parse(text)


@settings(max_examples=200, deadline=None)
@given(filter_trees(max_depth=4))
def test_text_round_trip_with_spaced_signs(tree: Filter) -> None:
    text = str(tree)
    assert parse(text) == tree
    signs = [t.start for t in tokenize(text) if t.kind == "number" and text[t.start] in "+-"]
    for start in reversed(signs):
        text = text[: start + 1] + " " + text[start + 1 :]
    assert parse(text) == tree


@pytest.mark.parametrize("size", [10, 4_000])
def test_syntax_errors_in_huge_texts_stay_short_and_point_at_the_column(size: int) -> None:
    text = "a == 1 AND " * size + "b = 2"
    with pytest.raises(FilterSyntaxError) as caught:
        parse(text)
    error = caught.value
    assert error.column == len(text) - 2 and error.text == text
    lines = str(error).split("\n")
    assert lines[0] == f"unknown operator '=' (write ==) at column {error.column}"
    assert len(str(error)) < 400
    shown, caret = lines[1][2:], lines[2][2:]
    assert caret.endswith("^") and shown[len(caret) - 1] == "=" and shown.endswith("b = 2")
