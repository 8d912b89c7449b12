"""The reference meaning of filters (docs/filters.md, "Meaning") that every store must reproduce."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from rag.filters import And, Comparison, Filter, Not, Op, Or, key, matches, negate, parse, push_not_down
from stores.testing.strategies import filter_trees, metadata_dicts

DOC = {
    "year": 2020,
    "score": 0.5,
    "country": "BG",
    "draft": True,
    "tags": ["x", "y", 3],
    "nums": [1, 2.5],
    "empty": None,
    "name": "Émile",
}

CASES = [
    # equality: numbers by value across int/float, booleans apart, strings case-sensitive
    ("year == 2020", True),
    ("year == 2020.0", True),
    ("score == 0.5", True),
    ("year == '2020'", False),
    ("year != '2020'", True),
    ("draft == true", True),
    ("draft == 1", False),
    ("draft != 1", True),
    ("draft IN [1, 'true']", False),
    ("draft IN [1, true]", True),
    ("year == true", False),
    ("country == 'bg'", False),
    ("country != 'bg'", True),
    ("tags == 'x'", False),
    ("tags != 'x'", True),
    # ordering: numbers with numbers, strings with strings by code point, else false
    ("year > 2019.5", True),
    ("year >= 2020", True),
    ("year < 2020", False),
    ("year <= 2020.0", True),
    ("score < 1", True),
    ("country < 'BH'", True),
    ("country > 'B'", True),
    ("country < 'a'", True),
    ("name > 'Z'", True),
    ("name < 'F'", False),
    ("country < 5", False),
    ("country >= 5", False),
    ("year < 'z'", False),
    ("year >= 'a'", False),
    ("draft < 2", False),
    ("draft >= 0", False),
    ("year > true", False),
    ("tags < 'z'", False),
    # lists
    ("country IN ['NL', 'BG']", True),
    ("country IN ['NL', 2020]", False),
    ("year IN ['2020', 2020.0]", True),
    ("country NOT IN ['NL']", True),
    ("country NIN ['BG']", False),
    ("tags CONTAINS 'x'", True),
    ("tags CONTAINS 3.0", True),
    ("tags CONTAINS 'z'", False),
    ("tags NOT CONTAINS 'z'", True),
    ("tags NOT CONTAINS 'x'", False),
    ("nums CONTAINS 2.5", True),
    ("nums CONTAINS true", False),
    ("country CONTAINS 'B'", False),
    ("country NOT CONTAINS 'BG'", True),
    ("year IS NULL", False),
    ("year IS NOT NULL", True),
    # missing keys and None values: positive operators false, negative ones true
    ("missing == 1", False),
    ("missing != 1", True),
    ("missing < 5", False),
    ("missing >= 5", False),
    ("missing IN [1]", False),
    ("missing NOT IN [1]", True),
    ("missing CONTAINS 1", False),
    ("missing NOT CONTAINS 1", True),
    ("missing IS NULL", True),
    ("missing IS NOT NULL", False),
    ("empty == 1", False),
    ("empty != 1", True),
    ("empty IS NULL", True),
    ("empty IS NOT NULL", False),
    # NOT negates each comparison, it is not boolean negation
    ("NOT missing < 5", False),
    ("NOT missing >= 5", False),
    ("NOT country < 5", False),
    ("NOT missing == 1", True),
    ("NOT year == 2020", False),
    ("NOT (missing == 1 OR year == 2020)", False),
    ("NOT (missing < 1 AND year == 1)", True),
    ("NOT NOT missing < 5", False),
    ("NOT missing IS NULL", False),
    # connectives
    ("year == 2020 AND country == 'BG'", True),
    ("year == 2020 AND country == 'NL'", False),
    ("year == 1 OR country == 'BG'", True),
    ("year == 1 OR country == 'NL' OR draft == true", True),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_meaning(text: str, expected: bool) -> None:
    assert matches(parse(text), DOC) is expected


def test_not_a_less_than_five() -> None:
    tree = parse("NOT a < 5")
    assert not matches(tree, {})
    assert not matches(tree, {"a": "text"})
    assert not matches(tree, {"a": 4})
    assert matches(tree, {"a": 5})


def test_none_filter_matches_everything() -> None:
    assert matches(None, {})
    assert matches(None, DOC)


def test_empty_lists_from_the_builder() -> None:
    assert not matches(key("year").in_([]), DOC)
    assert matches(key("year").not_in([]), DOC)
    assert matches(key("missing").not_in([]), {})


def test_negate_is_the_meaning_of_not_on_simple_cases() -> None:
    assert negate(parse("a == 1")) == parse("a != 1")
    assert negate(parse("a < 5 AND b IS NULL")) == parse("a >= 5 OR b IS NOT NULL")
    assert negate(parse("a IN [1] OR NOT b CONTAINS 2")) == parse("a NOT IN [1] AND b CONTAINS 2")
    assert push_not_down(parse("NOT (a <= 1 OR NOT b > 2)")) == parse("a > 1 AND b > 2")


def _has_not(tree: Filter) -> bool:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Not):
            return True
        if isinstance(node, And | Or):
            stack += [node.left, node.right]
    return False


@settings(max_examples=400, deadline=None)
@given(filter_trees(max_depth=4), metadata_dicts())
def test_not_means_negate(tree: Filter, metadata: dict[str, object]) -> None:
    assert matches(Not(tree), metadata) == matches(negate(tree), metadata)
    assert matches(negate(negate(tree)), metadata) == matches(tree, metadata)


@settings(max_examples=400, deadline=None)
@given(filter_trees(max_depth=4), metadata_dicts())
def test_push_not_down_removes_not_and_keeps_the_meaning(tree: Filter, metadata: dict[str, object]) -> None:
    pushed = push_not_down(tree)
    assert not _has_not(pushed)
    assert not _has_not(negate(tree))
    assert matches(pushed, metadata) == matches(tree, metadata)


@settings(max_examples=200, deadline=None)
@given(filter_trees(max_depth=3), metadata_dicts())
def test_meaning_survives_the_text_round_trip(tree: Filter, metadata: dict[str, object]) -> None:
    assert matches(parse(str(tree)), metadata) == matches(tree, metadata)


def test_comparison_on_a_list_valued_key_follows_filters_md() -> None:
    tree = Comparison("tags", Op.IN, ("x",))
    assert not matches(tree, {"tags": ["x"]})  # a list is not equal to a scalar
    assert matches(Not(tree), {"tags": ["x"]})
