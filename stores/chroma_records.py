"""How a `Document`'s metadata and text are laid out in a Chroma record, and read back.

Chroma cannot hold every metadata value a `Document` allows (empty or mixed-type lists, integers beyond
64 bits, keys starting with `#` or `$`, text with lone surrogates) and it truncates a float operand when
it compares it with an integer value. So each record carries:

- `_rag_meta`: the exact metadata as JSON. Reads decode this, so values and their types round-trip and
  the reserved keys below never reach the caller.
- each indexable key under its own name, numbers as floats (exact up to 2**53, and Chroma compares a
  float value with any operand correctly). List values are not stored under their key.
- `_rag_keys`: a token per key present, for `IS NULL` / `IS NOT NULL` (`$contains` / `$not_contains`).
- `_rag_items`: a token per (key, list element), numbers normalised so `1` and `1.0` give one token,
  for `CONTAINS` / `NOT CONTAINS` on lists of any type.
- `_rag_opaque`: a token per key whose value could not be indexed on this record (a huge integer, a
  string Chroma cannot encode); filters on such keys are finished in Python.
- `_rag_zero`: True on a record whose vector is all zeros (an empty or stopword-only text). Chroma's
  HNSW graph can lose such records, so search finds them through this key instead (`stores.chroma`).
- `_rag_vec`: a digest of a non-zero vector (`vector_digest`); records sharing a vector share it, so
  search completes a group of duplicates HNSW returned only part of.

Keys starting with `_rag_` are reserved for this layout; a user key with that prefix is kept in
`_rag_meta` only and filtered in Python, like the other keys Chroma refuses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue

__all__ = [
    "ITEMS",
    "KEYS",
    "META",
    "OPAQUE",
    "TEXT",
    "VECTOR",
    "ZERO",
    "decode_metadata",
    "decode_text",
    "encode_record",
    "encode_text",
    "index_value",
    "indexable_key",
    "item_token",
    "key_token",
    "vector_digest",
]

META = "_rag_meta"
KEYS = "_rag_keys"
ITEMS = "_rag_items"
OPAQUE = "_rag_opaque"
TEXT = "_rag_text"
ZERO = "_rag_zero"
VECTOR = "_rag_vec"
RESERVED_PREFIX = "_rag_"

# Beyond 2**53 an integer is not exactly a float, and Chroma compares numbers as floats.
_SAFE_INT = 2**53


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dumps(value: object) -> str:
    """Compact JSON, escaping to ASCII only when the text holds lone surrogates Chroma cannot store."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if _encodable(text) else json.dumps(value, separators=(",", ":"))


def indexable_key(key: str) -> bool:
    """Whether Chroma can hold and filter a metadata key under its own name."""
    return not key.startswith(("#", "$", "chroma:", RESERVED_PREFIX)) and _encodable(key)


def index_value(value: object) -> str | bool | float | None:
    """The value Chroma indexes for a scalar, or None when Chroma cannot compare it exactly."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value) if -_SAFE_INT <= value <= _SAFE_INT else None
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return value if _encodable(value) else None
    return None


def key_token(key: str) -> str:
    """The element of `_rag_keys` (and `_rag_opaque`) that stands for `key`."""
    return _dumps(key)


def _normal(value: object) -> tuple[str, object]:
    if isinstance(value, bool):
        return "b", value
    if isinstance(value, float) and value.is_integer():
        # int(2.0) == 2 exactly, so 2 and 2.0 share a token while 2**60 + 1 keeps its own.
        return "n", int(value)
    if isinstance(value, int | float):
        return "n", value
    return "s", value


def item_token(key: str, element: object) -> str:
    """The element of `_rag_items` that stands for `element` in the list under `key`."""
    tag, normal = _normal(element)
    return _dumps([key, tag, normal])


def encode_record(metadata: Mapping[str, MetadataValue]) -> tuple[dict[str, Any], list[str]]:
    """Chroma metadata for a document's metadata, and the keys whose values Chroma cannot index."""
    record: dict[str, Any] = {META: _dumps(metadata)}
    keys: list[str] = []
    items: dict[str, None] = {}
    opaque: list[str] = []
    for name, value in metadata.items():
        keys.append(key_token(name))
        if isinstance(value, list):
            items.update((item_token(name, element), None) for element in value)
            continue
        if not indexable_key(name):
            continue
        indexed = index_value(value)
        if indexed is None:
            opaque.append(name)
        else:
            record[name] = indexed
    if keys:
        record[KEYS] = keys
    if items:
        record[ITEMS] = list(items)
    if opaque:
        record[OPAQUE] = [key_token(name) for name in opaque]
    return record, opaque


def vector_digest(vector: npt.NDArray[np.float32]) -> dict[str, Any]:
    """The reserved keys for a stored vector: `ZERO` when it is all zeros, else its `VECTOR` digest."""
    if not vector.any():
        return {ZERO: True}
    # 16 bytes of BLAKE2b: a collision would only merge two groups' candidates, never change a score.
    return {
        VECTOR: hashlib.blake2b(
            np.ascontiguousarray(vector, np.float32).tobytes(), digest_size=16
        ).hexdigest()
    }


def decode_metadata(record: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """The document metadata stored in a Chroma record by `encode_record`."""
    if not record or META not in record:
        # A record written by another tool: show what Chroma holds.
        return {k: v for k, v in (record or {}).items() if not k.startswith(RESERVED_PREFIX)}
    decoded: dict[str, MetadataValue] = json.loads(record[META])
    return decoded


def encode_text(text: str) -> tuple[str, str | None]:
    """The Chroma document for a text, and the JSON copy to keep when Chroma cannot store it as is."""
    if _encodable(text):
        return text, None
    return "", _dumps(text)


def decode_text(document: str | None, record: Mapping[str, Any] | None) -> str:
    """The text stored by `encode_text`."""
    if record and TEXT in record:
        text: str = json.loads(record[TEXT])
        return text
    return document or ""
