"""The conversation id of a chat request: the `X-Conversation-Id` header, read as UTF-8 text.

A header's bytes are UTF-8 (`café` stays `café`, the same conversation as `rag chat --conversation café`);
bytes that are not UTF-8 are refused with a 400 naming the header. Surrounding whitespace is not part
of an id, here as in `rag chat --conversation` and the body's `user` field.

Example:
    >>> conversation_id_of([(b"x-conversation-id", "  café ".encode())])
    'café'
    >>> conversation_id_of([(b"accept", b"*/*")]) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable

from rag.serve.wire import ApiError

__all__ = ["CONVERSATION_HEADER", "conversation_id_of"]

CONVERSATION_HEADER = "x-conversation-id"
"""The header naming the conversation whose memory a chat request uses (else the body's `user`)."""

_NAME = CONVERSATION_HEADER.encode()


def conversation_id_of(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The id the raw headers name (None when absent or blank).

    Raises:
        ApiError: the header's bytes are not UTF-8 (400, `param` the header's name).
    """
    for name, value in headers:
        if name.lower() != _NAME:
            continue
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(
                f"the X-Conversation-Id header is not UTF-8 text: {value[:80]!r}", param="X-Conversation-Id"
            ) from None
        return text.strip() or None
    return None
