"""Values as PostgreSQL holds them: exact metadata JSON, each text's BM25 terms, storable text.

JSONB numbers are `numeric`, compared exactly, so a float is written as its exact decimal value (0.1
becomes 0.1000000000000000055511151231257827...): an int and a float then compare in SQL as Python
compares them, at any size, and the text reads back as the same float (an integral float keeps a ".0";
PostgreSQL has no negative zero). Terms come from the analysis of `stores.lexical.LexicalIndex`, so the
BM25 statistics kept in PostgreSQL equal the in-memory index's.

Example:
    >>> metadata_json({"year": 2020, "ratio": 0.5, "tags": ["a", True]})
    '{"year": 2020, "ratio": 0.5, "tags": ["a", true]}'
    >>> postings(["the running cats run"], [{"lang": "en"}])
    [(['run', 'cat', ' lang:en'], [2, 1, 1], 3)]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal

import numpy as np

from rag.documents import MetadataValue
from rag.errors import InvalidRequestError
from stores.lexical.fields import encode_documents
from stores.lexical.text import Vocabulary

__all__ = ["check_text", "first_unstorable", "json_value", "metadata_json", "postings"]


def json_value(value: object) -> str:
    """A metadata value (a scalar or a list of them) as JSON text, floats exact."""
    if isinstance(value, list):
        return "[" + ", ".join(json_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        text = format(Decimal(value), "f")
        return text if "." in text else text + ".0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise InvalidRequestError(f"cannot store {value!r} as a metadata value")


def metadata_json(metadata: Mapping[str, MetadataValue]) -> str:
    """The metadata as a JSON object text for the JSONB column."""
    return (
        "{" + ", ".join(f"{json_value(name)}: {json_value(value)}" for name, value in metadata.items()) + "}"
    )


def first_unstorable(text: str) -> int | None:
    """Where `text` first holds what PostgreSQL text cannot (NUL, a lone surrogate), or None."""
    positions = [text.find("\x00")]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            positions.append(exc.start)
    return min((p for p in positions if p >= 0), default=None)


def _unstorable(text: object) -> str | None:
    index = first_unstorable(text) if isinstance(text, str) else None
    if index is None:
        return None
    assert isinstance(text, str)
    if text[index] == "\x00":
        return "the NUL character"
    return f"a lone surrogate ({text[index]!r} at index {index}), which is not valid Unicode text"


def check_text(doc_id: str, text: str, metadata: Mapping[str, MetadataValue]) -> None:
    """Refuse, naming the document and the field, what PostgreSQL cannot hold (see `first_unstorable`)."""
    for field, part in (("id", doc_id), ("text", text)):
        if problem := _unstorable(part):
            raise InvalidRequestError(
                f"document {doc_id!r}: PostgreSQL cannot store {problem} in its {field}"
            )
    for name, entry in metadata.items():
        for item in [name, *(entry if isinstance(entry, list) else [entry])]:
            if problem := _unstorable(item):
                raise InvalidRequestError(
                    f"metadata {name!r} of document {doc_id!r}: PostgreSQL cannot store {problem}"
                )


def postings(
    texts: Sequence[str], metadatas: Sequence[Mapping[str, MetadataValue]]
) -> list[tuple[list[str], list[int], int]]:
    """For each text (with its metadata): its distinct terms, each term's frequency, and its length."""
    vocabulary = Vocabulary()
    encoded = encode_documents(vocabulary, texts, metadatas)
    result: list[tuple[list[str], list[int], int]] = [([], [], int(n)) for n in encoded.lengths.tolist()]
    width, names = len(vocabulary) + 1, vocabulary.terms
    pairs, counts = np.unique(encoded.owners * width + encoded.ids.astype(np.int64), return_counts=True)
    for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
        owner, term = divmod(pair, width)
        result[owner][0].append(names[term])
        result[owner][1].append(count)
    return result
