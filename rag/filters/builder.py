"""The Python builder of filter trees: `key("year") >= 2020` makes a `Comparison`.

Example:
    >>> from rag.filters import key
    >>> print((key("year") >= 2020) & key("tags").contains("rag"))
    (year >= 2020) AND (tags CONTAINS 'rag')
"""

from __future__ import annotations

from collections.abc import Iterable

from rag.filters.tree import Comparison, Op, Scalar

__all__ = ["Key", "key"]


class Key:
    """A metadata key in the filter builder: `key("year") >= 2020` makes a `Comparison`."""

    __slots__ = ("name",)
    __hash__ = None  # type: ignore[assignment]  # == builds a filter, so a Key is not hashable

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: Scalar) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, Op.EQ, value)

    def __ne__(self, value: Scalar) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, Op.NE, value)

    def __lt__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.LT, value)

    def __le__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.LE, value)

    def __gt__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.GT, value)

    def __ge__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.GE, value)

    def in_(self, values: Iterable[Scalar]) -> Comparison:
        return Comparison(self.name, Op.IN, tuple(values))

    def not_in(self, values: Iterable[Scalar]) -> Comparison:
        return Comparison(self.name, Op.NIN, tuple(values))

    def contains(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.CONTAINS, value)

    def not_contains(self, value: Scalar) -> Comparison:
        return Comparison(self.name, Op.NOT_CONTAINS, value)

    def is_null(self) -> Comparison:
        return Comparison(self.name, Op.IS_NULL)

    def is_not_null(self) -> Comparison:
        return Comparison(self.name, Op.IS_NOT_NULL)

    def __repr__(self) -> str:
        return f"key({self.name!r})"


def key(name: str) -> Key:
    """Start a comparison on metadata key `name` (dotted or any text; no quoting needed here)."""
    return Key(name)
