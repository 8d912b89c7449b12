"""Turning a file's own fields (front matter, header blocks, JSON records) into metadata values.

Example:
    >>> import datetime
    >>> flatten_fields({"tags": ["a", "b"], "author": {"name": "Ann"}, "date": datetime.date(2024, 5, 1)})
    {'tags': ['a', 'b'], 'author.name': 'Ann', 'date': '2024-05-01'}
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any

from ingest.readers.base import MetadataValue

__all__ = ["RESERVED_KEYS", "flatten_fields", "scalar"]

# Keys the readers, splitter and pipeline set themselves; a file's own field never overrides them.
RESERVED_KEYS = frozenset(
    {
        "source",
        "section",
        "headings",
        "dirs",
        "page",
        "page_label",
        "page_end",
        "chunk_index",
        "char_start",
        "char_end",
        "line",
    }
)


def scalar(value: object) -> str | int | float | bool | None:
    """A metadata scalar for `value`, or None when it has none (None, NaN, containers, other objects)."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime.date | datetime.time):  # YAML turns 2024-05-01 into a date
        return value.isoformat()
    return None


def _value(value: object) -> MetadataValue | None:
    if isinstance(value, list | tuple):
        items = [scalar(item) for item in value]
        kept = [item for item in items if item is not None]
        # A list is kept only when every element is a scalar: a partial list would mislead filters.
        return kept if kept and len(kept) == len(items) else None
    return scalar(value)


def flatten_fields(fields: Mapping[Any, object], *, prefix: str = "") -> dict[str, MetadataValue]:
    """Scalars and lists of scalars as they are; nested mappings as dotted keys; anything else dropped.

    Reserved keys (`source`, `page`, ...) are dropped: the readers set them. Empty strings as keys, empty
    lists and None values are dropped too, as stores cannot hold them.
    """
    flat: dict[str, MetadataValue] = {}
    for raw_key, raw_value in fields.items():
        key = f"{prefix}{raw_key}".strip()
        if not str(raw_key).strip() or key in RESERVED_KEYS:
            continue
        if isinstance(raw_value, Mapping):
            flat.update(flatten_fields(raw_value, prefix=f"{key}."))
            continue
        value = _value(raw_value)
        if value is not None:
            flat[key] = value
    return flat
