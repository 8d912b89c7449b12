"""The filter parser: the whole grammar of docs/filters.md, its errors, and robustness on arbitrary text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import FilterError, FilterSyntaxError
from rag.filters import And, Comparison, Filter, Not, Op, Or, as_filter, key, matches, parse
from rag.filters.parser import MAX_NESTING

A, B, C = key("a") == 1, key("b") == 2, key("c") == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a == 1 AND b == 2 AND c == 3", A & B & C),
        ("a == 1 OR b == 2 OR c == 3", A | B | C),
        ("a == 1 && b == 2 || c == 3", (A & B) | C),
        ("a == 1 OR b == 2 AND c == 3", A | (B & C)),
        ("(a == 1 OR b == 2) AND c == 3", (A | B) & C),
        ("NOT a == 1 AND b == 2", (~A) & B),
        ("!a == 1 || b == 2", (~A) | B),
        ("NOT NOT a == 1", ~~A),
        ("NOT (a == 1 OR b == 2)", ~(A | B)),
        ("a == 1 AND NOT (b == 2 AND NOT c == 3)", A & ~(B & ~C)),
        ("((a == 1))", A),
        ("a == 1 AND (b == 2 AND c == 3)", A & (B & C)),
        ("WHERE a == 1", A),
        ("where a == 1 and b == 2", A & B),
        ("whereabouts == 1", key("whereabouts") == 1),
        ("a.b.c != 'x'", key("a.b.c") != "x"),
        ("'file name' == 'x'", key("file name") == "x"),
        ("\"country 1\" == 'BG'", key("country 1") == "BG"),
        ("'and' == 1", key("and") == 1),
        ("année == 1", key("année") == 1),
        ("_x1 < 1", key("_x1") < 1),
        ("a <= 1", key("a") <= 1),
        ("a > 1", key("a") > 1),
        ("a >= 1", key("a") >= 1),
        ("a IN [1, 'x', true]", key("a").in_([1, "x", True])),
        ("a NIN [1]", key("a").not_in([1])),
        ("a NOT IN ['x', 2.5]", key("a").not_in(["x", 2.5])),
        ("tags CONTAINS 'x'", key("tags").contains("x")),
        ("tags NOT CONTAINS 7", key("tags").not_contains(7)),
        ("a IS NULL", key("a").is_null()),
        ("a IS NOT NULL", key("a").is_not_null()),
        ("a==1&&b==2", A & B),
        ("\ta == 1\n", A),
    ],
)
def test_grammar(text: str, expected: Filter) -> None:
    assert parse(text) == expected


def test_keywords_are_case_insensitive() -> None:
    expected = (key("a").not_in([True]) & key("b").is_not_null()) | ~key("c").not_contains(False)
    for text in (
        "a NOT IN [TRUE] AND b IS NOT NULL OR NOT c NOT CONTAINS FALSE",
        "a not in [true] and b is not null or not c not contains false",
        "a Not In [True] AnD b Is NoT NuLl oR nOt c nOT conTAINS fAlse",
    ):
        assert parse(text) == expected


def test_the_filters_md_example_equals_the_builder() -> None:
    built = (key("year") >= 2020) & key("country").in_(["BG", "NL"]) & ~(key("draft") == True)  # noqa: E712
    assert built == parse("year >= 2020 AND country IN ['BG', 'NL'] AND NOT draft == true")


def test_not_is_kept_as_a_node_and_lists_are_tuples() -> None:
    tree = parse("NOT a IN [1, 2]")
    assert isinstance(tree, Not)
    assert tree.operand == Comparison("a", Op.IN, (1, 2))
    assert isinstance(tree.operand, Comparison) and tree.operand.value == (1, 2)
    assert isinstance(tree.operand.value, tuple)


def test_and_groups_left_to_right() -> None:
    tree = parse("a == 1 AND b == 2 AND c == 3")
    assert isinstance(tree, And) and isinstance(tree.left, And)
    assert tree.right == C and tree.left == And(A, B)
    tree = parse("a == 1 OR b == 2 OR c == 3")
    assert isinstance(tree, Or) and tree.left == Or(A, B)


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("12", 12),
        ("-7", -7),
        ("+7", 7),
        ("12L", 12),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("99999999999999999999l", 99999999999999999999),
        (".5", 0.5),
        ("5.", 5.0),
        ("-15.6", -15.6),
        ("+20.13", 20.13),
        ("1e3", 1000.0),
        ("2.5E-2", 0.025),
        ("-.5e+1", -5.0),
        ("007", 7),
        ("true", True),
        ("FALSE", False),
    ],
)
def test_numbers_and_booleans(literal: str, value: object) -> None:
    tree = parse(f"a == {literal}")
    assert isinstance(tree, Comparison)
    assert tree.value == value and type(tree.value) is type(value)


def test_a_decimal_is_a_float_and_an_integer_an_int() -> None:
    assert type(parse("a == 1.0").value) is float  # type: ignore[union-attr]
    assert type(parse("a == 1").value) is int  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (r"'it\'s'", "it's"),
        (r'"say \"hi\""', 'say "hi"'),
        (r"'back\\slash'", "back\\slash"),
        (r"'a\nb\tc'", "a\nb\tc"),
        ("'\"'", '"'),
        ('"\'"', "'"),
        ("''", ""),
        ("'ünï €'", "ünï €"),
        ("'a AND b == 1'", "a AND b == 1"),
    ],
)
def test_strings(literal: str, value: str) -> None:
    assert parse(f"a == {literal}") == (key("a") == value)


# The hint after an unknown operator that is a pattern operator in SQL or elsewhere.
_NO_PATTERNS = (
    " (filters match whole values, never patterns: use == or IN [...] for values,"
    " CONTAINS for an item of a list such as ingest's dirs)"
)
ERRORS = [
    ("", "empty filter", 1),
    ("   \n ", "empty filter", 1),
    ("a = 1", "unknown operator '=' (write ==)", 3),
    ("a <> 1", "unknown operator '<>' (write !=)", 3),
    ("a === 1", "unknown operator '=' (write ==)", 5),
    ("a LIKE 'x%'", "unknown operator 'LIKE'" + _NO_PATTERNS, 3),
    ("a regexp 'x'", "unknown operator 'regexp'" + _NO_PATTERNS, 3),
    ("a NEAR 'x'", "unknown operator 'NEAR'", 3),
    ("a & b", "unknown operator '&' (write AND)", 3),
    ("a == 1 | b == 2", "unknown operator '|' (write OR)", 8),
    ("country == BG", "expected a value after '==', got the unquoted text 'BG': quote it", 12),
    ("2020 == year", "expected a key, got the value '2020': write the key first", 1),
    ("true == a", "expected a key, got the value 'true': write the key first", 1),
    ("a ==", "expected a value after '=='", 5),
    ("country == AND year > 1", "expected a value after '=='", 12),
    ("a == 1 AND", "expected a comparison after 'AND'", 11),
    ("OR a == 1", "expected a comparison, got 'OR'", 1),
    ("NOT", "expected a comparison after 'NOT'", 4),
    ("WHERE", "expected a comparison after 'WHERE'", 6),
    ("a", "expected an operator after 'a'", 2),
    ("a AND b", "expected an operator after 'a'", 3),
    ("(a == 1", "missing ')': the '(' in column 1 is never closed", 8),
    ("(a == 1 AND (b == 2)", "missing ')': the '(' in column 1 is never closed", 21),
    ("a == 1)", "')' without a matching '('", 7),
    ("()", "expected a comparison after '('", 2),
    ("a IN []", "empty list: a list needs at least one value", 7),
    ("a IN 1", "expected a list such as [1, 2] after 'IN'", 6),
    ("a IN [1,]", "expected a value after ','", 9),
    ("a IN [1 2]", "expected ',' or ']' after '1'", 9),
    ("a IN [1", "expected ',' or ']' after '1'", 8),
    ("a == 1 b == 2", "expected AND, OR or the end after '1', got 'b'", 8),
    ("(a == 1 b", "expected AND, OR or ')' after '1', got 'b'", 9),
    ("a == 'abc", "unterminated string: the ' here is never closed", 6),
    ('a == "abc\\"', 'unterminated string: the " here is never closed', 6),
    ("a == 'x\\", "unterminated string: the ' here is never closed", 6),
    ("a == 'x\\q'", "unknown escape '\\q' in a string (use \\' \\\" \\\\ \\n \\t)", 8),
    ("a NOT == 1", "expected IN or CONTAINS after 'NOT'", 7),
    ("a IS 1", "expected NULL after 'IS'", 6),
    ("a IS NOT 1", "expected NULL after 'NOT'", 10),
    ("a == NULL", "NULL is not a value: use IS NULL or IS NOT NULL", 6),
    ("in == 1", "expected a comparison, got the keyword 'in' (quote keys)", 1),
    ("a == 1x", "malformed number '1x'", 6),
    ("a == 1.2.3", "malformed number '1.2.3'", 6),
    ("a == 1.5L", "malformed number '1.5L'", 6),
    ("a == 1e999", "number '1e999' is too large", 6),
    ("a == -", "unexpected character '-'", 6),
    ("a == $1", "unexpected character '$'", 6),
    ("a. == 1", "expected a name after 'a.'", 3),
    ("'' == 1", "filter key '' must be a non-empty string", 1),
]


@pytest.mark.parametrize(("text", "reason", "column"), ERRORS)
def test_syntax_errors(text: str, reason: str, column: int) -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        parse(text)
    error = caught.value
    assert (error.reason, error.column, error.text) == (reason, column, text)


def test_error_message_format_matches_filters_md() -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        parse("country == AND year > 1")
    assert str(caught.value) == (
        "expected a value after '==' at column 12\n  country == AND year > 1\n             ^"
    )
    assert isinstance(caught.value, FilterError) and isinstance(caught.value, ValueError)


def test_too_long_integer_is_a_syntax_error() -> None:
    with pytest.raises(FilterSyntaxError, match="too long"):
        parse("a == " + "9" * 5000)


def test_non_text_is_a_filter_error() -> None:
    with pytest.raises(FilterError, match="must be a str"):
        parse(12)  # type: ignore[arg-type]


def test_as_filter() -> None:
    assert as_filter(None) is None
    assert as_filter(A) is A
    assert as_filter("a == 1") == A
    with pytest.raises(FilterError, match=r"text or a filter tree, got \{'a': 1\}"):
        as_filter({"a": 1})  # type: ignore[arg-type]


def test_nesting_limit() -> None:
    deep = "(" * MAX_NESTING + "a == 1" + ")" * MAX_NESTING
    assert parse(deep) == A
    negated: Filter = A
    for _ in range(MAX_NESTING):
        negated = ~negated
    assert parse("NOT " * MAX_NESTING + "a == 1") == negated
    assert parse(str(negated)) == negated
    with pytest.raises(
        FilterSyntaxError, match=f"nested more than {MAX_NESTING} levels deep.*the limit is {MAX_NESTING}"
    ) as caught:
        parse("NOT " * (MAX_NESTING + 1) + "a == 1")
    assert caught.value.column == 4 * MAX_NESTING + 1
    right_deep = "a == 1 OR (" * (MAX_NESTING + 1) + "b == 2" + ")" * (MAX_NESTING + 1)
    with pytest.raises(
        FilterSyntaxError, match=f"nested more than {MAX_NESTING} levels deep.*the limit is {MAX_NESTING}"
    ):
        parse(right_deep)


def test_parentheses_alone_are_limited_by_length_only() -> None:
    assert parse("(" * 45_000 + "a == 1" + ")" * 45_000) == A
    with pytest.raises(FilterSyntaxError, match="expected a comparison after"):
        parse("(" * 90_000)


def test_a_long_and_chain_is_left_deep_and_needs_no_recursion() -> None:
    count = 5000
    text = " AND ".join(f"k{i} == {i}" for i in range(count))
    tree = parse(text)
    expected: Filter = key("k0") == 0
    for i in range(1, count):
        expected = expected & (key(f"k{i}") == i)
    assert tree == expected and hash(tree) == hash(expected)
    assert parse(str(tree)) == tree
    metadata = {f"k{i}": i for i in range(count)}
    assert matches(tree, metadata)
    assert not matches(tree, {**metadata, "k4999": 0})
    assert matches(Not(tree), {})
    assert repr(tree).startswith("And(And(")


_TOKENS = st.sampled_from(
    ["a", "b.c", "'k y'", "==", "!=", "<", "<=", ">", ">=", "=", "IN", "NOT", "NIN", "CONTAINS", "IS", "NULL",
     "AND", "OR", "&&", "||", "!", "(", ")", "[", "]", ",", "1", "-2.5", "1e3", "7L", "true", "'s'", '"t"',
     "WHERE", "'", "\\", "."]
)  # fmt: skip


def _parse_or_syntax_error(text: str) -> Filter | None:
    try:
        tree = parse(text)
    except FilterSyntaxError as error:
        assert 1 <= error.column <= len(text) + 1
        assert error.text == text
        return None
    assert isinstance(tree, Comparison | And | Or | Not)
    assert parse(str(tree)) == tree
    return tree


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_parses_or_raises_a_syntax_error(text: str) -> None:
    _parse_or_syntax_error(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(_TOKENS, max_size=16).map(" ".join))
def test_token_soup_parses_or_raises_a_syntax_error(text: str) -> None:
    _parse_or_syntax_error(text)
