"""What the pgvector store writes besides vectors: exact metadata JSON and each text's BM25 terms.

Metadata goes into a JSONB column that filters read (`stores.pgvector.filters`). JSONB numbers are
PostgreSQL `numeric`, compared exactly, so a float is written as its exact decimal value (0.1 becomes
0.1000000000000000055511151231257827...): an int and a float then compare in SQL exactly as Python
compares them, whatever their size, and reading the text back yields the same float. An integral
float keeps a ".0" so it reads back as a float. (PostgreSQL has no negative zero: -0.0 reads back 0.0.)

Lexical terms come from the same analysis as `stores.lexical.LexicalIndex`
(`stores.lexical.fields.encode_documents`: the text, the weighted names field and a language marker), so
the BM25 statistics kept in PostgreSQL equal the in-memory index's.

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

__all__ = ["check_text", "json_scalar", "metadata_json", "postings"]


def _float_text(value: float) -> str:
    text = format(Decimal(value), "f")
    return text if "." in text else text + ".0"


def json_scalar(value: object) -> str:
    """One scalar as JSON text, floats exact (see the module docstring)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise InvalidRequestError(f"cannot store {value!r} as a metadata value")


def _json_value(value: MetadataValue) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(json_scalar(item) for item in value) + "]"
    return json_scalar(value)


def metadata_json(metadata: Mapping[str, MetadataValue]) -> str:
    """The metadata as a JSON object text for the JSONB column."""
    items = (
        f"{json.dumps(name, ensure_ascii=False)}: {_json_value(value)}" for name, value in metadata.items()
    )
    return "{" + ", ".join(items) + "}"


def unstorable(text: str) -> str | None:
    """What in `text` PostgreSQL text and JSONB cannot hold, in words, or None when it can hold it all."""
    if "\x00" in text:
        return "the NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = f"{text[exc.start]!r} at index {exc.start}"
            return f"a lone surrogate ({where}), which is not valid Unicode text"
    return None


def check_text(doc_id: str, text: str, metadata: Mapping[str, MetadataValue]) -> None:
    """Refuse what PostgreSQL text and JSONB cannot hold (the NUL character, lone surrogates), naming
    the document and the field, before anything is written."""
    for field, part in (("id", doc_id), ("text", text)):
        problem = unstorable(part)
        if problem is not None:
            raise InvalidRequestError(
                f"document {doc_id!r}: PostgreSQL cannot store {problem} in its {field}"
            )
    for name, entry in metadata.items():
        values = entry if isinstance(entry, list) else [entry]
        for item in [name, *values]:
            problem = unstorable(item) if isinstance(item, str) else None
            if problem is not None:
                raise InvalidRequestError(
                    f"metadata {name!r} of document {doc_id!r}: PostgreSQL cannot store {problem}"
                )


def postings(
    texts: Sequence[str], metadatas: Sequence[Mapping[str, MetadataValue]]
) -> list[tuple[list[str], list[int], int]]:
    """For each text (with its metadata): its distinct terms, each term's frequency, and its length."""
    vocabulary = Vocabulary()
    encoded = encode_documents(vocabulary, texts, metadatas)
    ids, owners, lengths = encoded.ids, encoded.owners, encoded.lengths
    result: list[tuple[list[str], list[int], int]] = [([], [], int(n)) for n in lengths.tolist()]
    if ids.size:
        pairs = owners * (len(vocabulary) + 1) + ids.astype(np.int64)
        unique, counts = np.unique(pairs, return_counts=True)
        names = vocabulary.terms
        for pair, count in zip(unique.tolist(), counts.tolist(), strict=True):
            owner, term = divmod(pair, len(vocabulary) + 1)
            result[owner][0].append(names[term])
            result[owner][1].append(count)
    return result
