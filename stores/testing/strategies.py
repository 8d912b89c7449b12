"""Hypothesis strategies for metadata and filter trees, shared by the filter and store tests.

Values are drawn from small pools most of the time, so random filters often hit random metadata; the rest
are arbitrary. Integers stay within +-2**53 (exact as floats in every store) and floats are finite, with
-0.0 folded into 0.0.

Example:
    >>> from hypothesis import given
    >>> from stores.testing.strategies import filter_trees, metadata_dicts
    >>> @given(filter_trees(), metadata_dicts())
    ... def test_something(tree, metadata): ...
"""

from __future__ import annotations

from collections.abc import Sequence

from stores.testing._extra import missing

try:
    from hypothesis import strategies as st
except ImportError as exc:
    raise missing("hypothesis", __name__) from exc

from rag.filters import And, Comparison, Filter, Not, Op, Or, Scalar

__all__ = [
    "KEYS",
    "filter_trees",
    "metadata_dicts",
    "metadata_values",
    "scalars",
]

KEYS: tuple[str, ...] = ("year", "country", "tags", "score", "draft", "file name", "meta.lang")
"""The default key set: plain, quoted (a space) and dotted keys."""

MAX_EXACT_INT = 2**53

_STRINGS = ("BG", "NL", "bg", "", "é", "a b", "x'y", 'q"q', "2020", "a\nb", "tab\t", "Ω≈ç")
_INTS = (-1, 0, 1, 2, 5, 2020, 2021, MAX_EXACT_INT, -MAX_EXACT_INT)
_FLOATS = (0.5, 1.0, 2020.0, -15.6, 1e-3, 20.13)

# Control characters other than \n and \t are left out: some stores (SQLite text, Chroma) treat NUL specially.
_TEXT = st.text(st.characters(exclude_categories=("Cs", "Cc"), include_characters="\n\t"), max_size=8)


def _no_negative_zero(value: float) -> float:
    return value + 0.0  # -0.0 + 0.0 is 0.0; every other float is unchanged


def _strings() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_STRINGS), _TEXT)


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(_INTS), st.integers(-MAX_EXACT_INT, MAX_EXACT_INT))


def _floats() -> st.SearchStrategy[float]:
    arbitrary = st.floats(allow_nan=False, allow_infinity=False).map(_no_negative_zero)
    return st.one_of(st.sampled_from(_FLOATS), arbitrary)


def scalars() -> st.SearchStrategy[Scalar]:
    """A str, int, float or bool, usually from the shared pools."""
    return st.one_of(_strings(), _ints(), _floats(), st.booleans())


def metadata_values() -> st.SearchStrategy[Scalar | list[Scalar]]:
    """A metadata value: a scalar, or a non-empty list of scalars of one type (as Chroma stores lists)."""
    lists = st.one_of(
        *(st.lists(kind, min_size=1, max_size=4) for kind in (_strings(), _ints(), _floats(), st.booleans()))
    )
    return st.one_of(scalars(), lists)


def metadata_dicts(keys: Sequence[str] = KEYS) -> st.SearchStrategy[dict[str, Scalar | list[Scalar]]]:
    """Metadata with any subset of `keys` present, each with any value type."""
    return st.fixed_dictionaries({}, optional={name: metadata_values() for name in keys})


def _comparisons(keys: Sequence[str]) -> st.SearchStrategy[Comparison]:
    names = st.sampled_from(tuple(keys))
    lists = st.lists(scalars(), min_size=1, max_size=4).map(tuple)
    ordered = st.one_of(_ints(), _floats(), _strings(), st.booleans())
    plain_ops = st.sampled_from((Op.EQ, Op.NE, Op.CONTAINS, Op.NOT_CONTAINS))
    order_ops = st.sampled_from((Op.LT, Op.LE, Op.GT, Op.GE))
    return st.one_of(
        st.builds(Comparison, names, plain_ops, scalars()),
        st.builds(Comparison, names, order_ops, ordered),
        st.builds(Comparison, names, st.sampled_from((Op.IN, Op.NIN)), lists),
        st.builds(Comparison, names, st.sampled_from((Op.IS_NULL, Op.IS_NOT_NULL))),
    )


def filter_trees(keys: Sequence[str] = KEYS, max_depth: int = 3) -> st.SearchStrategy[Filter]:
    """Random filter trees over `keys` using every operator, AND, OR and NOT, at most `max_depth` deep.

    IN / NOT IN lists are non-empty (as the text requires) and often mix types.
    """
    trees: st.SearchStrategy[Filter] = _comparisons(keys)
    for _ in range(max_depth):
        # Each level may stop at a comparison, so shallow trees stay common.
        smaller = trees
        trees = st.one_of(
            smaller,
            st.builds(And, smaller, smaller),
            st.builds(Or, smaller, smaller),
            st.builds(Not, smaller),
        )
    return trees
