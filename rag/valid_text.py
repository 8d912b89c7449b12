"""Documents whose strings are valid Unicode text, checked where a store takes them.

Python strings may hold lone surrogates (`"\\udc80"`, as `errors="surrogateescape"` decoding leaves for
undecodable bytes); no UTF-8 encoder can write them, so PostgreSQL cannot store them, and a document
that holds one would fail later in every JSON reply, terminal line or file that shows it. Every store
refuses such a document in `add`, with one message naming the document and the field, before anything
is written.

Example:
    >>> from rag import Document
    >>> check_valid_text([Document("a", "fine")])
    >>> try:
    ...     check_valid_text([Document("b", "bad \\udc80 byte")])
    ... except ValueError as error:
    ...     print(error)
    document 'b': its text holds a lone surrogate at index 4 ('\\udc80'), which is not valid Unicode text
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rag.documents import Document, MetadataValue
from rag.errors import InvalidRequestError

__all__ = ["check_fields", "check_valid_text"]


def _surrogate_at(text: str) -> int | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _refuse(doc_id: str, where: str, text: str, index: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"document {doc_id!r}: {where} holds a lone surrogate at index {index} ({text[index]!r}), "
        "which is not valid Unicode text"
    )


def check_valid_text(documents: Iterable[Document]) -> None:
    """Refuse the first document whose id, text, metadata key or string value holds a lone surrogate.

    Raises:
        InvalidRequestError: naming the document (its id shown escaped) and the field.
    """
    for document in documents:
        check_fields(document.id, document.text, document.metadata)


def check_fields(doc_id: str, text: str, metadata: Mapping[str, MetadataValue]) -> None:
    """`check_valid_text` for one document given as its parts."""
    index = _surrogate_at(doc_id)
    if index is not None:
        raise _refuse(doc_id, "its id", doc_id, index)
    index = _surrogate_at(text)
    if index is not None:
        raise _refuse(doc_id, "its text", text, index)
    for name, value in metadata.items():
        index = _surrogate_at(name)
        if index is not None:
            raise _refuse(doc_id, f"metadata key {name!r}", name, index)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                index = _surrogate_at(item)
                if index is not None:
                    raise _refuse(doc_id, f"metadata {name!r}", item, index)
