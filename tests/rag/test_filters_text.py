"""Canonical filter text: exact spelling, and `parse(str(tree)) == tree` for random trees."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import FilterSyntaxError
from rag.filters import Comparison, Filter, Not, Op, key, parse
from rag.filters.tree import to_text
from stores.testing.strategies import filter_trees

A, B, C = key("a") == 1, key("b") == 2, key("c") == 3


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (A, "a == 1"),
        (A & B, "(a == 1) AND (b == 2)"),
        (A & B & C, "(a == 1) AND (b == 2) AND (c == 3)"),
        (A & (B & C), "(a == 1) AND ((b == 2) AND (c == 3))"),
        ((A | B) & C, "((a == 1) OR (b == 2)) AND (c == 3)"),
        (A | B & C, "(a == 1) OR ((b == 2) AND (c == 3))"),
        (~A, "NOT (a == 1)"),
        (~~(A | B), "NOT (NOT ((a == 1) OR (b == 2)))"),
        (key("a").in_([1, "x", True, 2.5]), "a IN [1, 'x', true, 2.5]"),
        (key("a").not_in([False]), "a NOT IN [false]"),
        (key("t").contains("x"), "t CONTAINS 'x'"),
        (key("t").not_contains(1.0), "t NOT CONTAINS 1.0"),
        (key("a").is_null(), "a IS NULL"),
        (key("a").is_not_null(), "a IS NOT NULL"),
        (key("a") != -5, "a != -5"),
        (key("a") < 1e16, "a < 1e+16"),
        (key("a") <= 1.5e-7, "a <= 1.5e-07"),
        (key("a") > 0.1, "a > 0.1"),
        (key("a") >= -0.0, "a >= -0.0"),
        (key("a") == 2**70, f"a == {2**70}"),
    ],
)
def test_canonical_text(tree: Filter, text: str) -> None:
    assert str(tree) == to_text(tree) == text
    assert parse(text) == tree


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("year", "year"),
        ("a.b_2.c", "a.b_2.c"),
        ("whereabouts", "whereabouts"),
        ("file name", "'file name'"),
        ("where", "'where'"),
        ("IN", "'IN'"),
        ("a.null", "'a.null'"),
        ("2020", "'2020'"),
        ("a.", "'a.'"),
        ("ключ", "'ключ'"),
        ("it's", "'it\\'s'"),
        ("back\\slash", "'back\\\\slash'"),
        ('say "hi"', "'say \"hi\"'"),
        ("line\nbreak\ttab", "'line\\nbreak\\ttab'"),
    ],
)
def test_keys_are_quoted_when_they_must_be(name: str, written: str) -> None:
    tree = Comparison(name, Op.EQ, "v")
    assert str(tree) == f"{written} == 'v'"
    assert parse(str(tree)) == tree


def test_values_that_need_escapes_round_trip() -> None:
    for value in ["", "'", '"', "\\", "\\'", "\n\t\r", "\x00", "a AND b == 1", "é€😀", "\\n"]:
        tree = key("k") == value
        assert parse(str(tree)) == tree
        reparsed = parse(str(tree))
        assert isinstance(reparsed, Comparison) and reparsed.value == value


def test_float_text_reads_back_as_a_float() -> None:
    for value in [1.0, 2020.0, 1e15, 1e16, 1e300, 5e-324, 0.1, -15.6, 2.0**53]:
        reparsed = parse(str(key("x") == value))
        assert isinstance(reparsed, Comparison)
        assert reparsed.value == value and type(reparsed.value) is float


@settings(max_examples=400, deadline=None)
@given(filter_trees(max_depth=4))
def test_random_trees_survive_a_round_trip(tree: Filter) -> None:
    text = str(tree)
    assert parse(text) == tree
    assert str(parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "a == 1 and b == 2 or not c == 3",
        "WHERE x IN [1, 'a', TRUE] && !(y < .5 || z IS NOT NULL)",
        '\'k y\' not contains "q\\"" AND n.m NIN [1L, +2.5, -3e2]',
    ],
)
def test_canonical_text_is_a_fixed_point(text: str) -> None:
    canonical = str(parse(text))
    assert str(parse(canonical)) == canonical
    assert parse(canonical) == parse(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab=!<>()[]'\" ,.1NOTANDISLUC&|", max_size=30))
def test_any_text_that_parses_has_a_fixed_point(text: str) -> None:
    try:
        tree = parse(text)
    except FilterSyntaxError:
        return
    canonical = str(tree)
    assert str(parse(canonical)) == canonical


def test_deep_not_chain_and_long_chains_write_without_recursion() -> None:
    tree: Filter = A
    for _ in range(3000):
        tree = Not(tree)
    assert str(tree).startswith("NOT (NOT (")
    chain: Filter = A
    for i in range(3000):
        chain = chain | (key(f"k{i}") == i)
    assert parse(str(chain)) == chain
