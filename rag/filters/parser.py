"""Filter text -> filter tree. (Placeholder: the real parser is being written.)"""

from __future__ import annotations

from rag.errors import FilterSyntaxError
from rag.filters.tree import Filter

__all__ = ["as_filter", "parse"]


def parse(text: str) -> Filter:
    """Parse filter text into a tree (FILTERS.md)."""
    raise FilterSyntaxError("the parser is not written yet", text, 1)


def as_filter(value: str | Filter | None) -> Filter | None:
    """A tree from text (parsed), a tree (as it is) or None."""
    if value is None or not isinstance(value, str):
        return value
    return parse(value)
