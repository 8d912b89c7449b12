"""Messages to JSON and back, exactly: text, tool calls, tool results and metadata all survive.

Metadata must be JSON data (str, finite float, int, bool, None, lists and str-keyed dicts of those):
anything else would come back changed (a tuple as a list, a date as text), so it is refused up front.

Example:
    >>> from rag.chat import AssistantMessage, ToolCall
    >>> message = AssistantMessage("Checking.", (ToolCall("c1", "weather", '{"city": "Sofia"}'),))
    >>> message_from_json(message_to_json(message)) == message
    True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from rag.chat.media import forget_media
from rag.chat.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from rag.errors import ChatMemoryError

__all__ = ["message_from_dict", "message_from_json", "message_to_dict", "message_to_json"]

_FORMAT = 1  # bumped if the stored shape ever changes, so old rows can still be read


def _check_json(value: object, where: str) -> None:
    """Refuse values that JSON would not give back unchanged."""
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ChatMemoryError(f"{where} holds a non-finite float {value!r}, which JSON cannot store")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise ChatMemoryError(f"{where} has a non-str key {name!r}; JSON keys are strings")
            _check_json(item, f"{where}[{name!r}]")
        return
    raise ChatMemoryError(
        f"{where} holds {type(value).__name__} {value!r}, which would not round-trip through JSON; "
        "use str, int, float, bool, None, list or dict"
    )


def _metadata(message: Message) -> dict[str, Any]:
    metadata = dict(message.metadata) if isinstance(message.metadata, Mapping) else message.metadata
    _check_json(metadata, f"metadata of {type(message).__name__}")
    return metadata


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready dict for one message; a user message's images as placeholders, never their bytes
    (`rag.chat.media.forget_media`).

    Raises:
        ChatMemoryError: not a message, or metadata that JSON would not give back unchanged.
    """
    message = forget_media(message)
    data: dict[str, Any] = {"v": _FORMAT, "role": getattr(message, "role", None)}
    if isinstance(message, SystemMessage | UserMessage):
        data["text"] = message.text
    elif isinstance(message, AssistantMessage):
        data["text"] = message.text
        calls = message.tool_calls
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    elif isinstance(message, ToolMessage):
        data.update(text=message.text, tool_call_id=message.tool_call_id, name=message.name)
    else:
        raise ChatMemoryError(f"chat memory stores chat messages, got {message!r}")
    data["role"] = message.role.value
    data["metadata"] = _metadata(message)
    return data


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """The message a `message_to_dict` result describes.

    Raises:
        ChatMemoryError: an unknown role or a malformed record.
    """
    try:
        role, metadata = data["role"], data.get("metadata", {})
        if role == "user":
            return UserMessage(data["text"], metadata)
        if role == "assistant":
            calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in data.get("tool_calls", ()))
            return AssistantMessage(data.get("text"), calls, metadata)
        if role == "system":
            return SystemMessage(data["text"], metadata)
        if role == "tool":
            return ToolMessage(data["tool_call_id"], data["name"], data["text"], metadata)
    except (KeyError, TypeError) as exc:
        raise ChatMemoryError(f"malformed stored message {dict(data)!r}: missing or bad {exc}") from exc
    raise ChatMemoryError(f"stored message has unknown role {role!r}")


def message_to_json(message: Message) -> str:
    """One message as compact JSON text (non-ASCII kept as is).

    Raises:
        ChatMemoryError: metadata JSON cannot hold, or text with lone surrogates (not encodable as UTF-8).
    """
    text = json.dumps(message_to_dict(message), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ChatMemoryError(
            f"{type(message).__name__} holds text that is not valid Unicode: {exc}"
        ) from exc
    return text


def message_from_json(text: str) -> Message:
    """The message stored as `text` by `message_to_json`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ChatMemoryError(f"stored message is not JSON: {text[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ChatMemoryError(f"stored message is not a JSON object: {text[:200]!r}")
    return message_from_dict(data)
