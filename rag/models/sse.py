"""An incremental decoder for server-sent events (the `text/event-stream` format).

Bytes may arrive split anywhere: inside a UTF-8 character, inside a line, between `\\r` and `\\n`. The
decoder keeps the unfinished tail until the next chunk completes it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from rag.errors import ModelError

__all__ = ["SSEDecoder", "ServerSentEvent"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_KNOWN_FIELDS = frozenset({"data", "event", "id", "retry"})


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event: its data lines joined with newlines, and its type and id if given."""

    data: str
    event: str | None = None
    id: str | None = None


class SSEDecoder:
    """Feed it byte chunks; it returns the events each chunk completes.

    Comment lines (`:` first) are skipped. A line whose field is not one of the standard ones (`data`,
    `event`, `id`, `retry`) raises `ModelError` naming the line: OpenAI-compatible servers never send
    one, so it means the stream is corrupt, and failing loudly beats silently losing text.

    Example:
        >>> decoder = SSEDecoder()
        >>> decoder.feed(b"data: hel")
        []
        >>> decoder.feed(b"lo\\n\\n")
        [ServerSentEvent(data='hello', event=None, id=None)]
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._tail = ""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        try:
            text = self._tail + self._utf8.decode(chunk)
        except UnicodeDecodeError as exc:
            raise ModelError(f"the event stream is not valid UTF-8 near {chunk[:60]!r}") from exc
        lines = _LINE_BREAK.split(text)
        self._tail = lines.pop()
        # A "\r" that ends the chunk may be the first half of "\r\n": wait for the next byte to decide.
        if text.endswith("\r") and lines:
            self._tail = lines.pop() + "\r"
        events: list[ServerSentEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """Flush at end of stream. Raises `ModelError` when the stream stopped inside an event."""
        try:
            text = self._tail + self._utf8.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise ModelError("the event stream ended inside a UTF-8 character") from exc
        events = self.feed(b"\n") if text.endswith("\r") else []
        if self._tail or self._data:
            pending = self._tail or "\n".join(self._data)
            raise ModelError(f"the event stream ended in the middle of an event: {pending[:200]!r}")
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if name not in _KNOWN_FIELDS:
            raise ModelError(f"malformed server-sent event line {line[:200]!r}")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:
            self._event = None
            return None
        event = ServerSentEvent("\n".join(self._data), self._event, self._id)
        self._data, self._event = [], None
        return event
