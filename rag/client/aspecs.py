"""What `acall()` and `astream()` return: the async twins of `CallResponseSpec` and `StreamResponseSpec`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping
from contextlib import aclosing
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

from rag.advisors.request import ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.messages import ChatOptions, ChatResponse
from rag.client.specs import StreamState, entity_adapter, entity_request, parse_entity
from rag.errors import InvalidRequestError
from rag.observability.steps import client_span

if TYPE_CHECKING:
    from rag.advisors.achain import AsyncAdvisorChain

__all__ = ["AsyncCallResponseSpec", "AsyncStreamResponseSpec"]

T = TypeVar("T")
RunAsyncCall = Callable[[Mapping[str, Any], ChatOptions | None], Awaitable[ChatClientResponse]]


class AsyncCallResponseSpec:
    """The result of `acall()`: await it for the `ChatClientResponse`, or await one of its readers.

    The request runs once, when first awaited; later reads reuse the reply (concurrent readers share it).

    Example:
        >>> import asyncio
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> client = ChatClient(FakeChatModel(default="Hi!"))
        >>> asyncio.run(client.prompt("Hello").acall().content())
        'Hi!'
    """

    def __init__(self, run: RunAsyncCall) -> None:
        self._run = run
        self._task: asyncio.Future[ChatClientResponse] | None = None

    def __await__(self) -> Generator[Any, None, ChatClientResponse]:
        return self.response().__await__()

    async def response(self) -> ChatClientResponse:
        """The reply with the request's context (retrieved documents, timings, usage...)."""
        return await self._result({}, None)

    async def _result(self, context: Mapping[str, Any], options: ChatOptions | None) -> ChatClientResponse:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run(context, options))
        return await self._task

    async def chat_response(self) -> ChatResponse:
        """The model's reply, with the metadata advisors added."""
        return (await self.response()).chat_response

    async def content(self) -> str:
        """The reply text."""
        return (await self.response()).text

    async def entity(self, output_type: type[T]) -> T:
        """The reply validated as `output_type`, as `CallResponseSpec.entity` (one corrective retry).

        Raises:
            StructuredOutputError: the reply is still invalid after the retry.
        """
        adapter = entity_adapter(output_type)
        context, options = entity_request(adapter, output_type)
        response = await self._result(context, options)
        return parse_entity(adapter, output_type, response.text)


class AsyncStreamResponseSpec(StreamState):
    """The result of `astream()`: iterate it (`async for text in ...`) once, or one of its readers.

    After the stream ends, `context` holds what advisors recorded. Leaving the loop early (or cancelling
    the task reading it) closes the stream, down to the model's HTTP request.

    Example:
        >>> import asyncio
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> client = ChatClient(FakeChatModel([["Hel", "lo"]]))
        >>> async def read():
        ...     return [text async for text in client.prompt("Hi").astream()]
        >>> asyncio.run(read())
        ['Hel', 'lo']
    """

    def __init__(self, chain: AsyncAdvisorChain, request: ChatClientRequest) -> None:
        self._chain = chain
        self._request = request
        self._started = False

    def response(self) -> AsyncGenerator[ChatClientResponse, None]:
        """The chunks with the request's context."""
        if self._started:
            raise InvalidRequestError(
                "this stream has already been read; call .astream() again for a new reply"
            )
        self._started = True
        return self._run()

    async def _run(self) -> AsyncGenerator[ChatClientResponse, None]:
        observation = self._chain.observation
        span = client_span("stream", self._chain.names)
        start = perf_counter()
        error: BaseException | None = None
        stream = self._chain.anext_stream(self._request)
        try:
            while True:
                # Current only while a chunk is awaited: a span attached across a yield would leak into
                # the reader's code.
                token = span.attach() if span is not None else None
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    return
                finally:
                    if span is not None:
                        span.detach(token)
                yield item
        except (GeneratorExit, asyncio.CancelledError):
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            await stream.aclose()
            observation.record("request", "request", perf_counter() - start, error=error, span=span)

    async def chat_response(self) -> AsyncGenerator[ChatResponse, None]:
        """The `ChatResponse` chunks: new text in each, tool calls, usage and finish reason at the end."""
        async with aclosing(self.response()) as stream:
            async for response in stream:
                yield response.chat_response

    async def content(self) -> AsyncGenerator[str, None]:
        """The text chunks as they arrive (empty chunks skipped)."""
        # aclosing: leaving early closes the chain now, not when the garbage collector gets to it.
        async with aclosing(self.response()) as stream:
            async for response in stream:
                if response.text:
                    yield response.text

    def __aiter__(self) -> AsyncIterator[str]:
        return self.content()
