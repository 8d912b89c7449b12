"""The OpenAI wire format as `rag serve` speaks it: requests in, completions, chunks and errors out.

Pure functions and data, no web framework: the app (`rag.serve.app`) passes JSON through them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.chat.messages import AssistantMessage, ChatOptions, Message, SystemMessage, Usage, UserMessage
from rag.citations import cited_sources
from rag.documents import Document
from rag.errors import InvalidRequestError, RagError
from rag.hits import hit_record

__all__ = [
    "ApiError",
    "ChatRequest",
    "citations_text",
    "completion_body",
    "completion_chunk",
    "error_body",
    "parse_chat_request",
    "source_rows",
    "usage_body",
]

_RETRIEVAL_FIELDS = ("top_k", "filter", "mode", "similarity_threshold")


class ApiError(InvalidRequestError):
    """A request `rag serve` refuses, with the HTTP status and OpenAI's `type`, `param` and `code`.

    Example:
        >>> error = ApiError("'messages' is required", param="messages")
        >>> error_body(error)["error"]["param"], error.status
        ('messages', 400)
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.param = param
        self.code = code


def error_body(error: ApiError) -> dict[str, Any]:
    """OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`."""
    return {"error": {"message": str(error), "type": error.type, "param": error.param, "code": error.code}}


@dataclass
class ChatRequest:
    """A parsed `/v1/chat/completions` request.

    `messages` are the conversation as sent; `retrieval` holds the extension fields (`top_k`, `filter`,
    `mode`, `similarity_threshold`) to pass to the QuestionAnswerAdvisor.
    """

    model: str
    messages: list[Message]
    stream: bool = False
    include_usage: bool = False
    user: str | None = None
    options: ChatOptions = field(default_factory=ChatOptions)
    retrieval: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        return self.messages[-1].text if isinstance(self.messages[-1], UserMessage) else ""


def _text_content(value: Any, index: int) -> str:
    """A message's content: a string, or a list of `{"type": "text", "text": ...}` parts."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        parts = []
        for part in value:
            is_text = isinstance(part, Mapping) and part.get("type") == "text"
            if not is_text or not isinstance(part.get("text"), str):
                raise ApiError(
                    f"messages[{index}].content: only text parts are supported, got {part!r:.100}",
                    param=f"messages[{index}].content",
                )
            parts.append(part["text"])
        return "".join(parts)
    raise ApiError(
        f"messages[{index}].content must be a string or a list of text parts, got {value!r:.100}",
        param=f"messages[{index}].content",
    )


def _message(item: Any, index: int) -> Message:
    if not isinstance(item, Mapping):
        raise ApiError(f"messages[{index}] must be an object, got {item!r:.100}", param="messages")
    role = item.get("role")
    text = _text_content(item.get("content"), index)
    if role in ("system", "developer"):
        return SystemMessage(text)
    if role == "user":
        return UserMessage(text)
    if role == "assistant":
        return AssistantMessage(text)
    raise ApiError(
        f"messages[{index}].role {role!r} is not supported; use system, user or assistant",
        param=f"messages[{index}].role",
    )


def _number(body: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ApiError(f"'{name}' must be a number from {low:g} to {high:g}, got {value!r:.60}", param=name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, low: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ApiError(f"'{name}' must be an integer >= {low}, got {value!r:.60}", param=name)
    return value


def _flag(body: Mapping[str, Any], name: str, path: str | None = None) -> bool:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise ApiError(f"'{path or name}' must be true or false, got {value!r:.60}", param=path or name)
    return bool(value)


def _stop(body: Mapping[str, Any]) -> tuple[str, ...] | None:
    stop = body.get("stop")
    if stop is None:
        return None
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and all(isinstance(item, str) for item in stop):
        return tuple(stop)
    raise ApiError(f"'stop' must be a string or a list of strings, got {stop!r:.60}", param="stop")


def _options(body: Mapping[str, Any]) -> ChatOptions:
    token_field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return ChatOptions(
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        seed=_integer(body, "seed", -(2**63)),
        max_tokens=_integer(body, token_field, 1),
        stop=_stop(body),
    )


def _retrieval(body: Mapping[str, Any]) -> dict[str, Any]:
    """The extension fields, checked as the QuestionAnswerAdvisor will read them (a filter is parsed
    here, so the caller decides where that work runs); an error names the field."""
    from rag.advisors.question_answer import QuestionAnswerAdvisor

    retrieval = {name: body[name] for name in _RETRIEVAL_FIELDS if body.get(name) is not None}
    for name, value in retrieval.items():
        try:
            params = QuestionAnswerAdvisor.Params(**{name: value})
        except RagError as exc:
            raise ApiError(str(exc), param=name, code="invalid_filter" if name == "filter" else None) from exc
        if name == "filter":
            retrieval[name] = params.filter  # the parsed tree: nothing parses it again
    return retrieval


def parse_chat_request(body: Any) -> ChatRequest:
    """A `ChatRequest` from the JSON body. Raises `ApiError` (400) naming the offending field."""
    if not isinstance(body, Mapping):
        raise ApiError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError("'model' is required: use an id from GET /v1/models", param="model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ApiError("'messages' must be a non-empty list", param="messages")
    messages = [_message(item, i) for i, item in enumerate(raw)]
    if not isinstance(messages[-1], UserMessage) or not messages[-1].text.strip():
        raise ApiError("the last message must be a user message with text: the question", param="messages")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise ApiError(f"'user' must be a string, got {user!r:.60}", param="user")
    stream_options = body.get("stream_options")
    if stream_options is None:
        stream_options = {}
    if not isinstance(stream_options, Mapping):
        raise ApiError(
            f"'stream_options' must be an object, got {stream_options!r:.60}", param="stream_options"
        )
    return ChatRequest(
        model=model,
        messages=messages,
        stream=_flag(body, "stream"),
        include_usage=_flag(stream_options, "include_usage", "stream_options.include_usage"),
        user=(user or "").strip() or None,  # as the X-Conversation-Id header: no surrounding whitespace
        options=_options(body),
        retrieval=_retrieval(body),
    )


def source_rows(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """The documents behind an answer, numbered as the citations: `rag.hits.hit_record` each, and
    `index`, the same number as `rank`."""
    return [{**hit_record(rank, doc), "index": rank} for rank, doc in enumerate(documents, 1)]


def citations_text(documents: Sequence[Document], answer: str | None = None) -> str:
    """The sources appended to an answer: a blank line, `Sources:`, then one line per source.

    Passages of one file share its line (`[1, 3] quick-start.html, chunks 0, 2`), so no file is named
    twice; the numbers are the passages' as the prompt numbered them, a PDF's line gives its pages, and
    the sources the `answer` cites come first (`rag.citations.cited_sources`).
    """
    if not documents:
        return ""
    return "\n\nSources:\n" + "\n".join(source.line() for source in cited_sources(documents, answer))


def usage_body(usage: Usage | None) -> dict[str, int]:
    usage = usage or Usage()
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def completion_body(
    *,
    completion_id: str,
    model: str,
    text: str,
    finish_reason: str | None,
    usage: Usage | None,
    sources: list[dict[str, Any]],
    conversation_id: str | None,
) -> dict[str, Any]:
    """A whole `chat.completion`, with the extra `sources` (and `conversation_id`) fields."""
    message = {"role": "assistant", "content": text}
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or "stop", "logprobs": None}
        ],
        "usage": usage_body(usage),
        "sources": sources,
        "conversation_id": conversation_id,
    }


def completion_chunk(
    completion_id: str,
    model: str,
    delta: Mapping[str, Any] | None,
    *,
    finish_reason: str | None = None,
    extra: Mapping[str, Any] | None = None,
    usage: Usage | None = None,
) -> bytes:
    """One `chat.completion.chunk` as an SSE event (`data: {...}` and a blank line).

    With `delta` None it is the usage chunk: no choices, only `usage`.
    """
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    if delta is None:
        body["choices"] = []
        body["usage"] = usage_body(usage)
    else:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish_reason, "logprobs": None}
        body["choices"] = [choice]
    if extra:
        body.update(extra)
    return sse_event(body)


def sse_event(body: Mapping[str, Any] | str) -> bytes:
    data = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


def status_of(error: RagError) -> ApiError:
    """An `ApiError` for any toolkit error: 400 for bad input, 502 for a failing model, 500 otherwise."""
    if isinstance(error, ApiError):
        return error
    from rag.errors import FilterError, ModelError, TemplateError

    if isinstance(error, FilterError):
        return ApiError(str(error), param="filter", code="invalid_filter")
    if isinstance(error, InvalidRequestError | TemplateError):
        return ApiError(str(error))
    if isinstance(error, ModelError):
        message = f"the chat model failed: {error}"
        return ApiError(message, status=502, type="api_error", code="upstream_error")
    return ApiError(f"the server failed: {error}", status=500, type="server_error", code="internal_error")
