"""Folding a stream of response chunks into the one response it amounts to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rag.chat.messages import AssistantMessage, ChatResponse, ToolCall, Usage

__all__ = ["aggregate_chunks"]


def aggregate_chunks(chunks: Iterable[ChatResponse]) -> ChatResponse:
    """One response from stream chunks: texts joined, tool calls collected, last finish reason and usage.

    Tool calls repeated with the same id keep the last version (a chunk may restate a finished call).
    Usage is the last one reported (a stream reports its total once); metadata entries merge, later wins.

    Example:
        >>> from rag.chat import AssistantMessage, ChatResponse
        >>> parts = [ChatResponse(AssistantMessage("Hel")), ChatResponse(AssistantMessage("lo"), "stop")]
        >>> aggregate_chunks(parts).text, aggregate_chunks(parts).finish_reason
        ('Hello', 'stop')
    """
    texts: list[str] = []
    calls: dict[str, ToolCall] = {}
    finish: str | None = None
    usage: Usage | None = None
    model: str | None = None
    metadata: dict[str, Any] = {}
    saw_text = False
    for chunk in chunks:
        if chunk.message.text is not None:
            saw_text = True
            texts.append(chunk.message.text)
        for call in chunk.message.tool_calls:
            calls[call.id] = call
        finish = chunk.finish_reason or finish
        usage = chunk.usage or usage
        model = chunk.model or model
        metadata.update(chunk.metadata)
    text = "".join(texts) if saw_text else None
    message = AssistantMessage(text, tuple(calls.values()))
    return ChatResponse(message, finish_reason=finish, usage=usage, model=model, metadata=metadata)
