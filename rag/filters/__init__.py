"""The filter expression language of docs/filters.md: parse text, build trees, evaluate them.

Example:
    >>> from rag.filters import key, parse
    >>> f = (key("year") >= 2020) & ~(key("draft") == True)
    >>> f == parse("year >= 2020 AND NOT draft == true")
    True
    >>> print(f)
    (year >= 2020) AND (NOT (draft == true))
"""

from rag.filters.builder import Key, key
from rag.filters.evaluate import holds, matches
from rag.filters.normal import MAX_DEPTH, Junction, Normal, normalize
from rag.filters.parser import MAX_COMPARISONS, MAX_FILTER_LENGTH, MAX_LIST_VALUES, as_filter, parse
from rag.filters.tree import And, Comparison, Filter, Not, Op, Or, Scalar, negate, push_not_down

__all__ = [
    "MAX_COMPARISONS",
    "MAX_DEPTH",
    "MAX_FILTER_LENGTH",
    "MAX_LIST_VALUES",
    "And",
    "Comparison",
    "Filter",
    "Junction",
    "Key",
    "Normal",
    "Not",
    "Op",
    "Or",
    "Scalar",
    "as_filter",
    "holds",
    "key",
    "matches",
    "negate",
    "normalize",
    "parse",
    "push_not_down",
]
