"""Filter text has documented size limits: past each one, a `FilterSyntaxError` that names the limit and
points at where it was passed; up to them, a filter parses in linear time."""

from __future__ import annotations

import pytest

from rag.errors import FilterSyntaxError
from rag.filters import MAX_COMPARISONS, MAX_FILTER_LENGTH, MAX_LIST_VALUES, key, parse


def test_a_text_longer_than_the_limit_is_refused_before_any_parsing() -> None:
    text = " AND ".join(["a == 1"] * 90_000)  # 990 KB
    with pytest.raises(FilterSyntaxError) as caught:
        parse(text)
    assert (
        caught.value.reason == f"filter text is {len(text)} characters long; the limit is {MAX_FILTER_LENGTH}"
    )
    assert caught.value.column == MAX_FILTER_LENGTH + 1 and len(str(caught.value)) < 400
    assert parse("a == 1" + " " * (MAX_FILTER_LENGTH - 6)) == (key("a") == 1)  # exactly at the limit


def test_more_comparisons_than_the_limit_are_refused_at_the_first_one_past_it() -> None:
    at_limit = " OR ".join(f"a == {i}" for i in range(MAX_COMPARISONS))
    assert len(at_limit) <= MAX_FILTER_LENGTH
    parse(at_limit)
    with pytest.raises(FilterSyntaxError, match=f"more than {MAX_COMPARISONS} comparisons") as caught:
        parse(at_limit + " OR b == 1")
    assert caught.value.column == len(at_limit) + 5  # the key of the comparison past the limit


def test_a_list_longer_than_the_limit_is_refused() -> None:
    values = ",".join("1" for _ in range(MAX_LIST_VALUES))
    assert parse(f"a IN [{values}]") == key("a").in_([1] * MAX_LIST_VALUES)
    with pytest.raises(FilterSyntaxError, match=f"list holds more than {MAX_LIST_VALUES} values"):
        parse(f"a IN [{values},2]")
    # The Python builder is not limited: code may select by a long list of ids.
    assert len(key("id").in_([str(i) for i in range(50_000)]).value) == 50_000  # type: ignore[arg-type]


def test_source_names_are_widened_in_a_filter_nested_thousands_deep() -> None:
    from rag.retrieval.source_identity import widen_source_names

    tree = parse(" AND ".join(["source == 'docs/a.md'"] * 3000))
    widened = widen_source_names(tree)
    assert str(widened).count("root == 'docs'") == 3000
