"""What `call()` and `stream()` return: the reply as text, as a response, or as a validated object."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

from rag.advisors.request import OUTPUT_FORMAT, OUTPUT_VALIDATOR, ChatClientRequest, retrieved_documents
from rag.advisors.response import ChatClientResponse
from rag.chat.messages import ChatOptions, ChatResponse
from rag.documents import Document
from rag.errors import InvalidRequestError, StructuredOutputError
from rag.observability.steps import client_span

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from rag.advisors.chain import AdvisorChain

__all__ = [
    "CallResponseSpec",
    "StreamResponseSpec",
    "StreamState",
    "entity_adapter",
    "entity_request",
    "parse_entity",
]

T = TypeVar("T")
RunCall = Callable[[Mapping[str, Any], ChatOptions | None], ChatClientResponse]

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_FORMAT = (
    "Reply with only a JSON value that matches the JSON schema below: no prose and no code fences.\n"
    "JSON schema:\n{schema}"
)


def _type_name(output_type: object) -> str:
    return getattr(output_type, "__name__", None) or repr(output_type)


def _json_text(text: str) -> str:
    """The reply without a Markdown code fence around it, which models add despite instructions."""
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def _problem(adapter: TypeAdapter[Any], text: str) -> str | None:
    """Why `text` is not a valid value (pydantic's message), or None when it is."""
    from pydantic import ValidationError

    try:
        adapter.validate_json(_json_text(text))
    except ValidationError as exc:
        return str(exc)
    return None


class CallResponseSpec:
    """The result of `call()`. The request runs once, when first read; later reads reuse the reply.

    `entity(Type)` asks for JSON matching the type's schema (response format and instructions), validates
    the reply with pydantic and, if invalid, retries once with the validation error. Call it first: once
    the reply was read as text, `entity` can only validate that reply.

    Example:
        >>> from pydantic import BaseModel
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> class City(BaseModel):
        ...     name: str
        >>> ChatClient(FakeChatModel(['{"name": "Paris"}'])).prompt("Capital of France?").call().entity(City)
        City(name='Paris')
    """

    def __init__(self, run: RunCall) -> None:
        self._run = run
        self._response: ChatClientResponse | None = None

    def response(self) -> ChatClientResponse:
        """The reply with the request's context (retrieved documents, timings, usage...)."""
        if self._response is None:
            self._response = self._run({}, None)
        return self._response

    def chat_response(self) -> ChatResponse:
        """The model's reply, with the metadata advisors added."""
        return self.response().chat_response

    def content(self) -> str:
        """The reply text."""
        return self.response().text

    @property
    def context(self) -> dict[str, Any]:
        """The request's context (runs the request if it has not run yet)."""
        return self.response().context

    def entity(self, output_type: type[T]) -> T:
        """The reply as an instance of `output_type` (a pydantic model or any type pydantic validates).

        Raises:
            StructuredOutputError: the reply is still invalid after one corrective retry.
        """
        adapter = entity_adapter(output_type)
        if self._response is None:
            context, options = entity_request(adapter, output_type)
            self._response = self._run(context, options)
        return parse_entity(adapter, output_type, self._response.text)


def entity_adapter(output_type: type[T]) -> TypeAdapter[T]:
    """The pydantic adapter that validates replies as `output_type`."""
    from pydantic import TypeAdapter

    return TypeAdapter(output_type)


def entity_request(adapter: TypeAdapter[Any], output_type: object) -> tuple[dict[str, Any], ChatOptions]:
    """The context entries (format instructions, validator) and options (response format) of `entity()`."""
    schema = adapter.json_schema()
    name = _SCHEMA_NAME.sub("_", _type_name(output_type))[:64] or "output"
    options = ChatOptions(
        response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    )
    context = {
        OUTPUT_FORMAT: _FORMAT.replace("{schema}", json.dumps(schema, sort_keys=True)),
        OUTPUT_VALIDATOR: lambda text: _problem(adapter, text),
    }
    return context, options


def parse_entity(adapter: TypeAdapter[T], output_type: object, text: str) -> T:
    """The reply text validated as `output_type`.

    Raises:
        StructuredOutputError: the text is not a valid value.
    """
    from pydantic import ValidationError

    try:
        return adapter.validate_json(_json_text(text))
    except ValidationError as exc:
        raise StructuredOutputError(
            f"the model's reply is not a valid {_type_name(output_type)!r}: {exc.error_count()} "
            f"validation error(s); reply was {text[:200]!r}",
            output_type=output_type,
            text=text,
            reason=str(exc),
        ) from exc


class StreamState:
    """What a stream spec shows before and after it is read: the request's context and documents."""

    _request: ChatClientRequest

    @property
    def context(self) -> dict[str, Any]:
        """The context the advisors share (and record into) for this request."""
        return self._request.context

    @property
    def documents(self) -> list[Document]:
        """The documents the retrieving advisor found, once the stream has been read ([] before)."""
        return retrieved_documents(self._request.context)


class StreamResponseSpec(StreamState):
    """The result of `stream()`: read it once, as text chunks, `ChatResponse` chunks or full responses.

    After the stream ends, `context` holds what advisors recorded (retrieved documents, timings, usage).

    Example:
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> list(ChatClient(FakeChatModel([["Hel", "lo"]])).prompt("Hi").stream().content())
        ['Hel', 'lo']
    """

    def __init__(self, chain: AdvisorChain, request: ChatClientRequest) -> None:
        self._chain = chain
        self._request = request
        self._started = False

    def response(self) -> Iterator[ChatClientResponse]:
        """The chunks with the request's context."""
        if self._started:
            raise InvalidRequestError(
                "this stream has already been read; call .stream() again for a new reply"
            )
        self._started = True
        return self._run()

    def _run(self) -> Iterator[ChatClientResponse]:
        observation = self._chain.observation
        span = client_span("stream", self._chain.names)
        start = perf_counter()
        error: BaseException | None = None
        chunks = self._chain.next_stream(self._request)
        try:
            while True:
                # Current only inside next(): a span attached across a yield would leak into the caller.
                token = span.attach() if span is not None else None
                try:
                    item = next(chunks)
                except StopIteration:
                    return
                finally:
                    if span is not None:
                        span.detach(token)
                yield item
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            observation.record("request", "request", perf_counter() - start, error=error, span=span)

    def chat_response(self) -> Iterator[ChatResponse]:
        """The `ChatResponse` chunks: new text in each, tool calls, usage and finish reason at the end."""
        return (response.chat_response for response in self.response())

    def content(self) -> Iterator[str]:
        """The text chunks as they arrive (empty chunks skipped)."""
        return (response.text for response in self.response() if response.text)
