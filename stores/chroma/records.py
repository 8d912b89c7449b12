"""How a `Document` is laid out in a Chroma record, and read back exactly (docs/stores.md).

Values Chroma holds exactly stay under their own keys; the text goes in `_rag_doc` (`_rag_docj`, JSON,
when it holds lone surrogates); values or keys Chroma cannot hold go in one JSON object, `_rag_json`,
with their JSON-quoted keys listed in `_rag_enc` so filters still find them (`stores.chroma.filters`).
Keys starting with `_rag_` are this layout's. A record written by another tool reads as its Chroma
document and metadata.

Example:
    >>> record = encode("hello", {"n": 2**60, "tags": ["a"]})
    >>> record["tags"], record["_rag_enc"]
    (['a'], ['"n"'])
    >>> decode(None, record)
    ('hello', {'tags': ['a'], 'n': 1152921504606846976})
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from rag.documents import MetadataValue

__all__ = [
    "ENCODED",
    "LEGACY_META",
    "SAFE_INT",
    "decode",
    "encodable",
    "encode",
    "key_token",
    "native_key",
    "needs_document",
]

TEXT = "_rag_doc"
TEXT_JSON = "_rag_docj"
JSON = "_rag_json"
ENCODED = "_rag_enc"
RESERVED = "_rag_"
LEGACY_META = "_rag_meta"
"""Present on every record of the previous layout (rewritten when a store opens the collection)."""
_LEGACY_TEXT = "_rag_text"
_SURROGATE = re.compile("[\ud800-\udfff]")
SAFE_INT = 2**53
"""Integers up to this size are exact as floats too, so Chroma compares them with any number exactly."""


def encodable(text: str) -> bool:
    """Whether Chroma can store `text` (valid UTF-8: no lone surrogates)."""
    return _SURROGATE.search(text) is None


def native_key(key: str) -> bool:
    """Whether Chroma can hold and filter `key` under its own name."""
    return bool(key) and not key.startswith(("#", "$", "chroma:", RESERVED)) and encodable(key)


def key_token(key: str) -> str:
    """The `_rag_enc` element naming `key` (JSON, ASCII, so any key can be listed)."""
    return json.dumps(key)


def _short_float(value: float) -> bool:
    """Whether Chroma keeps this float exactly: up to 12 significant digits, magnitude 1e-4 to 1e12
    (chromadb 1.5.9 changes the last bit of some longer floats: 669 of 4,000 random ones)."""
    if value == 0.0:
        return math.copysign(1.0, value) > 0  # -0.0 comes back as 0.0
    return 1e-4 <= abs(value) < 1e12 and float(f"{value:.12g}") == value


def _native(value: object) -> bool:
    if isinstance(value, list):  # Chroma refuses empty lists and lists of mixed types (1 and 1.0 included)
        return bool(value) and len({type(element) for element in value}) == 1 and all(map(_native, value))
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -SAFE_INT <= value <= SAFE_INT
    if isinstance(value, float):
        return _short_float(value)
    return isinstance(value, str) and encodable(value)


def encode(text: str, metadata: Mapping[str, MetadataValue]) -> dict[str, Any]:
    """The Chroma metadata of a record holding `text` and `metadata`."""
    record: dict[str, Any] = {}
    odd: dict[str, MetadataValue] = {}
    for name, value in metadata.items():
        if native_key(name) and _native(value):
            record[name] = value
        else:
            odd[name] = value
    if odd:
        record[JSON] = json.dumps(odd)
        record[ENCODED] = [key_token(name) for name in odd]
    if encodable(text):
        record[TEXT] = text
    else:
        record[TEXT_JSON] = json.dumps(text)
    return record


def needs_document(record: Mapping[str, Any] | None) -> bool:
    """Whether a record keeps its text in Chroma's document (another tool's, or an old one's)."""
    return not record or not (TEXT in record or TEXT_JSON in record or _LEGACY_TEXT in record)


def decode(document: str | None, record: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The text and metadata of a record (this layout, the previous one, or another tool's)."""
    record = record or {}
    if LEGACY_META in record:
        legacy = record.get(_LEGACY_TEXT)
        text = document or "" if legacy is None else json.loads(legacy)
        return text, json.loads(record[LEGACY_META])
    if TEXT in record:
        text = record[TEXT]
    elif TEXT_JSON in record:
        text = json.loads(record[TEXT_JSON])
    else:
        text = document or ""
    metadata = {name: value for name, value in record.items() if name[:5] != RESERVED}
    if JSON in record:
        metadata.update(json.loads(record[JSON]))
    return text, metadata
