"""Hypothesis strategies for metadata and filter trees, shared by the filter and store tests.

Values come from small pools most of the time, so random filters often hit random metadata; the rest
are arbitrary. Integers stay within +-2**53 (exact as floats in every store) and floats are finite, with
-0.0 folded into 0.0.

Example:
    >>> from hypothesis import given
    >>> @given(filter_trees(), metadata_dicts())
    ... def test_something(tree, metadata): ...
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.errors import MissingDependencyError

try:
    from hypothesis import strategies as st
except ImportError as exc:
    raise MissingDependencyError(
        f'{__name__} needs hypothesis, which is not installed: pip install "rag-advisors[dev]"',
        package="hypothesis",
        extra="dev",
    ) from exc

from rag.filters import And, Comparison, Filter, Not, Op, Or, Scalar

__all__ = ["KEYS", "filter_trees", "metadata_dicts"]

KEYS: tuple[str, ...] = ("year", "country", "tags", "score", "draft", "file name", "meta.lang")
"""The default key set: plain, quoted (a space) and dotted keys."""

_MAX_INT = 2**53
# Control characters other than \n and \t are left out: some stores (SQLite text, Chroma) treat NUL specially.
_TEXT = st.text(st.characters(exclude_categories=("Cs", "Cc"), include_characters="\n\t"), max_size=8)
_STRINGS = st.one_of(
    st.sampled_from(("BG", "NL", "bg", "", "é", "a b", "x'y", 'q"q', "2020", "a\nb", "tab\t", "Ω≈ç")), _TEXT
)
_INTS = st.one_of(
    st.sampled_from((-1, 0, 1, 2, 5, 2020, 2021, _MAX_INT, -_MAX_INT)), st.integers(-_MAX_INT, _MAX_INT)
)
_FLOATS = st.one_of(
    st.sampled_from((0.5, 1.0, 2020.0, -15.6, 1e-3, 20.13)),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda value: value + 0.0),  # -0.0 becomes 0.0
)
_SCALARS: st.SearchStrategy[Scalar] = st.one_of(_STRINGS, _INTS, _FLOATS, st.booleans())
# A list holds one type, as Chroma stores lists.
_LISTS = st.one_of(
    *(st.lists(kind, min_size=1, max_size=4) for kind in (_STRINGS, _INTS, _FLOATS, st.booleans()))
)


def metadata_dicts(keys: Sequence[str] = KEYS) -> st.SearchStrategy[dict[str, Scalar | list[Scalar]]]:
    """Metadata with any subset of `keys` present, each a scalar or a non-empty list of one type."""
    return st.fixed_dictionaries({}, optional={name: st.one_of(_SCALARS, _LISTS) for name in keys})


def filter_trees(keys: Sequence[str] = KEYS, max_depth: int = 3) -> st.SearchStrategy[Filter]:
    """Random filter trees over `keys` using every operator, AND, OR and NOT, at most `max_depth` deep.

    IN / NOT IN lists are non-empty (as the text requires) and often mix types.
    """
    names = st.sampled_from(tuple(keys))
    trees: st.SearchStrategy[Filter] = st.one_of(
        st.builds(Comparison, names, st.sampled_from((Op.EQ, Op.NE, Op.CONTAINS, Op.NOT_CONTAINS)), _SCALARS),
        st.builds(Comparison, names, st.sampled_from((Op.LT, Op.LE, Op.GT, Op.GE)), _SCALARS),
        st.builds(
            Comparison,
            names,
            st.sampled_from((Op.IN, Op.NIN)),
            st.lists(_SCALARS, min_size=1, max_size=4).map(tuple),
        ),
        st.builds(Comparison, names, st.sampled_from((Op.IS_NULL, Op.IS_NOT_NULL))),
    )
    for _ in range(max_depth):  # each level may stop at a comparison, so shallow trees stay common
        trees = st.one_of(
            trees, st.builds(And, trees, trees), st.builds(Or, trees, trees), st.builds(Not, trees)
        )
    return trees
