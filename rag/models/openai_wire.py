"""The OpenAI chat-completions wire format: request bodies out, responses and stream chunks in."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rag.chat.messages import (
    AssistantMessage,
    ChatOptions,
    ChatResponse,
    Message,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    Usage,
    UserMessage,
)
from rag.errors import ModelError

__all__ = ["StreamAccumulator", "build_body", "message_to_wire", "parse_completion", "parse_usage"]

_TOOL_CHOICE_MODES = frozenset({"auto", "none", "required"})


def _plain(value: Any) -> Any:
    """Mappings and tuples (as frozen dataclasses hold them) turned into JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def message_to_wire(message: Message) -> dict[str, Any]:
    """One message as a chat-completions `messages` entry."""
    if isinstance(message, UserMessage) and message.media:
        # A vision request: the text, then one image_url part per image (a data: URL or an https URL).
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
        parts.extend({"type": "image_url", "image_url": {"url": m.wire_url()}} for m in message.media)
        return {"role": "user", "content": parts}
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role.value, "content": message.text}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if isinstance(message, AssistantMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.text}
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        elif message.text is None:
            wire["content"] = ""
        return wire
    raise ModelError(f"cannot send message {message!r} to an OpenAI-compatible model")


def _tool_to_wire(tool: ToolDefinition) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description, "parameters": _plain(tool.parameters)}
    return {"type": "function", "function": function}


def _tool_choice_to_wire(choice: str | Mapping[str, Any]) -> Any:
    # A bare tool name is the friendly spelling of "call this function".
    if isinstance(choice, str) and choice not in _TOOL_CHOICE_MODES:
        return {"type": "function", "function": {"name": choice}}
    return _plain(choice)


def build_body(prompt: Prompt, options: ChatOptions, model: str, *, stream: bool) -> dict[str, Any]:
    """The JSON body of a `/chat/completions` request. `options` are already merged."""
    if not prompt.messages:
        raise ModelError("cannot send a prompt with no messages")
    body: dict[str, Any] = {"model": options.model or model}
    body["messages"] = [message_to_wire(m) for m in prompt.messages]
    scalars = {
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "top_p": options.top_p,
        "seed": options.seed,
    }
    body.update({name: value for name, value in scalars.items() if value is not None})
    if options.stop:
        body["stop"] = list(options.stop)
    if options.tools:
        body["tools"] = [_tool_to_wire(t) for t in options.tools]
    if options.tool_choice is not None:
        body["tool_choice"] = _tool_choice_to_wire(options.tool_choice)
    if options.response_format is not None:
        body["response_format"] = _plain(options.response_format)
    if options.extra:
        body.update(_plain(options.extra))
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def parse_usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    prompt, completion = int(value.get("prompt_tokens") or 0), int(value.get("completion_tokens") or 0)
    return Usage(prompt, completion, int(value.get("total_tokens") or prompt + completion))


def _arguments_text(arguments: Any) -> str:
    # Some compatible servers send arguments as a JSON object instead of the JSON text OpenAI specifies.
    if arguments is None:
        return "{}"
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _tool_calls(items: Any) -> tuple[ToolCall, ...]:
    calls = []
    for i, item in enumerate(items or ()):
        function = item.get("function") or {}
        call_id = item.get("id") or f"call_{i}"
        calls.append(
            ToolCall(call_id, function.get("name") or "", _arguments_text(function.get("arguments")))
        )
    return tuple(calls)


def parse_completion(payload: Any) -> ChatResponse:
    """A whole (non-streamed) chat completion."""
    try:
        choice = payload["choices"][0]
        message = choice["message"]
        text = message.get("content")
        calls = _tool_calls(message.get("tool_calls"))
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        shown = json.dumps(payload)[:300] if not isinstance(payload, str) else payload[:300]
        raise ModelError(f"unexpected chat completion from the server: {shown!r}") from exc
    metadata = {k: payload[k] for k in ("id", "system_fingerprint") if payload.get(k)}
    if message.get("refusal"):
        metadata["refusal"] = message["refusal"]
    return ChatResponse(
        AssistantMessage(text if isinstance(text, str) else None, calls),
        finish_reason=choice.get("finish_reason"),
        usage=parse_usage(payload.get("usage")),
        model=payload.get("model"),
        metadata=metadata,
    )


class StreamAccumulator:
    """Folds streamed chunks: yields text as it comes, reassembles tool calls by index, keeps the tail.

    Example:
        >>> acc = StreamAccumulator()
        >>> acc.add({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}).text
        'Hi'
        >>> acc.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) is None
        True
        >>> acc.finish().finish_reason
        'stop'
    """

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self._id: str | None = None

    def add(self, payload: Any) -> ChatResponse | None:
        """Take one chunk; returns a text chunk when it carried new text."""
        if not isinstance(payload, Mapping):
            raise ModelError(f"unexpected stream chunk from the server: {payload!r:.300}")
        if "error" in payload:
            error = payload["error"]
            detail = error.get("message") if isinstance(error, Mapping) else error
            raise ModelError(f"the server reported an error mid-stream: {detail!r}", body=json.dumps(payload))
        self.model = payload.get("model") or self.model
        self._id = payload.get("id") or self._id
        self.usage = parse_usage(payload.get("usage")) or self.usage
        text = ""
        for choice in payload.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # only the first choice is followed; n > 1 is not supported in streams
            delta = choice.get("delta") or {}
            self._add_tool_calls(delta.get("tool_calls") or ())
            text += delta.get("content") or ""
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        return ChatResponse(AssistantMessage(text), model=self.model) if text else None

    def _add_tool_calls(self, deltas: Sequence[Any]) -> None:
        for delta in deltas:
            part = self._calls.setdefault(int(delta.get("index", 0)), {"id": "", "name": "", "arguments": ""})
            if delta.get("id"):
                part["id"] = delta["id"]  # some servers repeat the id on every delta: keep one copy
            function = delta.get("function") or {}
            name = function.get("name")
            if name and name != part["name"]:
                part["name"] += name
            arguments = function.get("arguments")
            # Only "no arguments yet" is skipped: a falsy JSON value ([], 0, false) is kept, so the tool
            # manager reports it as not being an object, exactly as for a whole (non-streamed) reply.
            if arguments is not None and arguments != "":
                part["arguments"] += _arguments_text(arguments)

    def finish(self) -> ChatResponse:
        """The closing chunk: no new text, the complete tool calls, finish reason and usage."""
        calls = tuple(
            ToolCall(part["id"] or f"call_{index}", part["name"], part["arguments"] or "{}")
            for index, part in sorted(self._calls.items())
        )
        metadata = {"id": self._id} if self._id else {}
        return ChatResponse(
            AssistantMessage(None, calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
            metadata=metadata,
        )
