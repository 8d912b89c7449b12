"""How a `Document`'s metadata and text are laid out in a Chroma record, and read back.

Chroma cannot hold every metadata value a `Document` allows (empty or mixed-type lists, integers beyond
64 bits, keys starting with `#` or `$`, text with lone surrogates) and it truncates a float operand when
it compares it with an integer value. So each record carries:

- `_rag_text`: the text as JSON. Chroma's `documents` field is left empty: every document Chroma holds
  is also indexed for its own full-text search (trigrams), which this store never uses and which took
  about a third of every write (benchmarks/ingest.py). JSON also keeps texts Chroma cannot encode.
- `_rag_meta`: the exact metadata as JSON. Reads decode this, so values and their types round-trip and
  the reserved keys below never reach the caller.
- each indexable key under its own name, numbers as floats (exact up to 2**53, and Chroma compares a
  float value with any operand correctly). List values are not stored under their key.
- `_rag_key:<token>` = 1 for each key present (the token is `key_token(key)`), for `IS NULL` /
  `IS NOT NULL` and to narrow comparisons finished in Python. Single flags cost Chroma far less to
  write than a list with one element per key, which records of older versions carry (`_rag_keys`,
  still read by `stores.chroma.filters` in collections that may hold such records). The flag is an
  integer, not a boolean, because Chroma indexes integer values and scans for boolean ones.
- `_rag_items`: a token per (key, list element), numbers normalised so `1` and `1.0` give one token,
  for `CONTAINS` / `NOT CONTAINS` on lists of any type.
- `_rag_opaque`: a token per key whose value could not be indexed on this record (a huge integer, a
  string Chroma cannot encode); filters on such keys are finished in Python.
- `_rag_ord:<token>`: for each string value under an indexable key, an order-preserving number made of
  its first 6 UTF-8 bytes (`order_code`): `a < b` implies `code(a) <= code(b)`, so a string ordering
  (`date >= '2023-01-01'`), which Chroma refuses on strings, is narrowed by Chroma and finished in
  Python. Collections created between issue 17's first and second parts hold it on every record.
- `_rag_o1:<token>`, `_rag_o2:<token>`: in collections created since (`order_codes`), two integers
  that order strings exactly up to `ORDER_EXACT_BYTES` UTF-8 bytes: the first 8 bytes, then the next
  7 bytes with the length. A string ordering then compiles to a `where` Chroma evaluates alone,
  exactly, for operands of up to 15 bytes (dates, versions, timestamps to the minute); longer operands
  are narrowed the same way and finished in Python.
- `_rag_zero`, `_rag_vec`, `_rag_twin`: vector marks that versions before issue 17 wrote (a zero
  vector, a digest of the vector, "another record has this vector"); no longer written nor read, and
  dropped when such a record is rewritten.

Records written by older versions keep their text in `documents` (`_rag_text` only when Chroma could
not store it) and list their keys in `_rag_keys`; `decode_text` and the filters read both layouts.
Keys starting with `_rag_` are reserved for this layout; a user key with that prefix is kept in
`_rag_meta` only and filtered in Python, like the other keys Chroma refuses.
"""

from __future__ import annotations

import functools
import hashlib
import json
import json.scanner
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
    "TWIN",
    "VECTOR",
    "ZERO",
    "decode_fields",
    "decode_metadata",
    "decode_text",
    "encode_record",
    "encode_text",
    "index_value",
    "indexable_key",
    "item_token",
    "key_flag",
    "key_token",
    "order_code",
    "order_codes",
    "order_key",
    "order_keys",
    "vector_digest",
]

META = "_rag_meta"
KEYS = "_rag_keys"  # the key list of records written by older versions
KEY_FLAG = "_rag_key:"
ITEMS = "_rag_items"
OPAQUE = "_rag_opaque"
TEXT = "_rag_text"
ZERO = "_rag_zero"
VECTOR = "_rag_vec"
TWIN = "_rag_twin"
ORDER_PREFIX = "_rag_ord:"
ORDER_HEAD = "_rag_o1:"
ORDER_TAIL = "_rag_o2:"
ORDER_EXACT_BYTES = 15
"""Strings of up to this many UTF-8 bytes are ordered exactly by `order_codes`."""
RESERVED_PREFIX = "_rag_"
_ORDER_BYTES = 6  # 48 bits: exact in a float64, which Chroma compares correctly

# Beyond 2**53 an integer is not exactly a float, and Chroma compares numbers as floats.
_SAFE_INT = 2**53

# The scanner behind `json.loads` (the C one when available), called directly by `_loads`.
_scan_once = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # stub is wrong


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# `json.dumps` with options builds an encoder per call; a write encodes several values per record.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"))


def _dumps(value: object) -> str:
    """Compact JSON, escaping to ASCII only when the text holds lone surrogates Chroma cannot store."""
    text = _COMPACT.encode(value)
    return text if text.isascii() or _encodable(text) else _COMPACT_ASCII.encode(value)


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
    """The element of `_rag_opaque` (and of older records' `_rag_keys`) that stands for `key`."""
    return _dumps(key)


@functools.lru_cache(maxsize=4096)  # a corpus repeats a few key names on every record
def key_flag(key: str) -> str:
    """The reserved key set to 1 on every record whose metadata has `key`."""
    return KEY_FLAG + key_token(key)


@functools.lru_cache(maxsize=4096)
def order_key(key: str) -> str:
    """The reserved key holding `order_code` of the string value under `key`."""
    return ORDER_PREFIX + key_token(key)


def order_code(text: str) -> float:
    """An order-preserving number for a string: its first 6 UTF-8 bytes, zero-padded, big-endian.

    UTF-8 orders bytes as Python orders code points, so `a < b` implies `order_code(a) <= order_code(b)`.
    """
    head = text.encode("utf-8", "surrogatepass")[:_ORDER_BYTES]
    return float(int.from_bytes(head.ljust(_ORDER_BYTES, b"\0"), "big"))


@functools.lru_cache(maxsize=4096)
def order_keys(key: str) -> tuple[str, str]:
    """The reserved keys holding the two `order_codes` of the string value under `key`."""
    token = key_token(key)
    return ORDER_HEAD + token, ORDER_TAIL + token


def order_codes(text: str) -> tuple[int, int]:
    """Two integers whose pairs order strings as Python does, exactly up to `ORDER_EXACT_BYTES` bytes.

    The UTF-8 bytes, zero-padded to 15, then the length (at most 16: "longer than 15"), compare in
    the strings' order: a shorter string that pads to the same bytes is a prefix of the longer one.
    The first code is bytes 0-7 shifted into the signed 64-bit range, the second bytes 8-14 then five
    bits of length, so both are integers Chroma compares exactly.
    """
    raw = text.encode("utf-8", "surrogatepass")
    head = int.from_bytes(raw[:8].ljust(8, b"\0"), "big") - 2**63
    tail = int.from_bytes(raw[8:ORDER_EXACT_BYTES].ljust(7, b"\0"), "big") << 5
    return head, tail | min(len(raw), ORDER_EXACT_BYTES + 1)


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


def encode_record(
    metadata: Mapping[str, MetadataValue], *, exact_order: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Chroma metadata for a document's metadata, and the keys whose values Chroma cannot index.

    `exact_order` writes the two `order_codes` of each string value (collections created since issue
    17's second part) instead of the single `order_code` of the collections before.
    """
    record: dict[str, Any] = {META: _dumps(metadata)}
    items: dict[str, None] = {}
    opaque: list[str] = []
    for name, value in metadata.items():
        record[key_flag(name)] = 1
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
            if isinstance(indexed, str):
                if exact_order:
                    head_key, tail_key = order_keys(name)
                    record[head_key], record[tail_key] = order_codes(indexed)
                else:
                    record[order_key(name)] = order_code(indexed)
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


def _loads(text: str) -> Any:
    """`json.loads` of one JSON value as `_dumps` writes it, without `json.loads`'s Python layers.

    The C scanner alone decodes a short value about four times faster, and a search decodes two per
    hit. Anything else (surrounding whitespace, trailing data, malformed text) goes to `json.loads`,
    which decodes it or raises its usual error.
    """
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def decode_metadata(record: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """The document metadata stored in a Chroma record by `encode_record`."""
    if not record or META not in record:
        # A record written by another tool: show what Chroma holds.
        return {k: v for k, v in (record or {}).items() if not k.startswith(RESERVED_PREFIX)}
    decoded: dict[str, MetadataValue] = _loads(record[META])
    return decoded


def decode_fields(
    document: str | None, record: Mapping[str, Any] | None
) -> tuple[str, dict[str, MetadataValue]] | None:
    """Text and metadata of a record this store wrote, or None for a record another tool wrote.

    What this returns was valid when written (`encode_record` stores metadata that `check_metadata`
    returned) and is freshly decoded, so a store may build its document with `Document._trusted`;
    a record of another tool must go through `Document(...)`'s checks (`decode_text`,
    `decode_metadata`).
    """
    if not record:
        return None
    meta = record.get(META)
    if type(meta) is not str:
        return None
    # `_loads` inline (each search decodes two values per hit): the scanner, else `json.loads`.
    try:
        metadata, end = _scan_once(meta, 0)
    except StopIteration:
        end = -1
    if end != len(meta):
        metadata = json.loads(meta)
    stored = record.get(TEXT)
    if stored is None:
        text = document or ""
    else:
        try:
            text, end = _scan_once(stored, 0)
        except StopIteration:
            end = -1
        if end != len(stored):
            text = json.loads(stored)
    if type(metadata) is not dict or type(text) is not str:
        return None  # not this layout after all: let the checks speak
    return text, metadata


def encode_text(text: str) -> str:
    """The `_rag_text` value that holds a document's text."""
    return _dumps(text)


def decode_text(document: str | None, record: Mapping[str, Any] | None) -> str:
    """The text stored by `encode_text`, or by an older version in the record's Chroma document."""
    if record and TEXT in record:
        text: str = _loads(record[TEXT])
        return text
    return document or ""
