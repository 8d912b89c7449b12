"""The advisor contracts: `CallAdvisor`, `StreamAdvisor`, and `BaseAdvisor` with `before`/`after` hooks.

An advisor wraps the model call: it receives the request and the chain positioned after itself, and
returns the response (or, streaming, yields response chunks). Most advisors only need to change the
request on the way in or the response on the way out: subclass `BaseAdvisor` and override `before` or
`after`; it supplies both `advise_call` and `advise_stream`.

Orders: see `rag.advisors.orders`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from rag.advisors.aggregate import aggregate_chunks
from rag.advisors.orders import DEFAULT_ORDER, Advisor, sort_advisors
from rag.advisors.request import ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.messages import AssistantMessage, ChatResponse

if TYPE_CHECKING:
    from rag.advisors.achain import AsyncAdvisorChain
    from rag.advisors.chain import AdvisorChain

__all__ = [
    "AnyAdvisor",
    "AsyncCallAdvisor",
    "AsyncStreamAdvisor",
    "BaseAdvisor",
    "CallAdvisor",
    "StreamAdvisor",
]


@runtime_checkable
class CallAdvisor(Advisor, Protocol):
    """An advisor of whole calls: return `chain.next_call(request)`, possibly changed, or answer yourself.

    Exceptions propagate to the caller; the advisors after this one do not run.
    """

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse: ...


@runtime_checkable
class StreamAdvisor(Advisor, Protocol):
    """An advisor of streams: yield the chunks of `chain.next_stream(request)` (possibly changed)."""

    def advise_stream(
        self, request: ChatClientRequest, chain: AdvisorChain
    ) -> Iterator[ChatClientResponse]: ...


@runtime_checkable
class AsyncCallAdvisor(Advisor, Protocol):
    """An advisor of async calls: `return await chain.anext_call(request)`, possibly changed.

    Used by `acall()`; a class may implement both this and `CallAdvisor`. A sync-only advisor still runs in
    async requests (in a thread), and an async-only one cannot run in sync requests.
    """

    async def aadvise_call(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientResponse: ...


@runtime_checkable
class AsyncStreamAdvisor(Advisor, Protocol):
    """An advisor of async streams: yield the chunks of `chain.anext_stream(request)` (possibly changed)."""

    def aadvise_stream(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> AsyncIterator[ChatClientResponse]: ...


AnyAdvisor: TypeAlias = CallAdvisor | StreamAdvisor | AsyncCallAdvisor | AsyncStreamAdvisor


class BaseAdvisor:
    """A pass-through advisor for calls and streams; override `before` and/or `after`.

    In a stream, chunks pass through as they arrive; once the stream ends, `after` receives the aggregated
    response (text joined, tool calls, usage, finish reason). The text has been delivered by then, so only
    metadata `after` adds still reaches the caller: as one trailing chunk without text.

    Example:
        >>> class Shout(BaseAdvisor):
        ...     def before(self, request, chain):
        ...         return request.with_prompt(request.prompt.augment_user(request.user_text.upper()))
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(default="ok")
        >>> _ = ChatClient(model, advisors=[Shout()]).prompt("hi").call().content()
        >>> model.prompts[0].user_text
        'HI'
    """

    order: int = DEFAULT_ORDER
    _name: str | None = None

    def __init__(self, *, order: int | None = None, name: str | None = None) -> None:
        if name is not None:
            self._name = name
        if order is not None:
            self.order = order
            sort_advisors((self,))  # an out-of-range order fails here, not at the first request

    @property
    def name(self) -> str:
        """The advisor's name: given, or the class name."""
        return self._name or type(self).__name__

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        """Change the request on its way to the model (default: unchanged)."""
        return request

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        """Change the response on its way back (default: unchanged)."""
        return response

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        return self.after(chain.next_call(self.before(request, chain)), chain)

    def advise_stream(self, request: ChatClientRequest, chain: AdvisorChain) -> Iterator[ChatClientResponse]:
        request = self.before(request, chain)
        if type(self).after is BaseAdvisor.after:
            yield from chain.next_stream(request)  # nothing to aggregate for
            return
        chunks: list[ChatResponse] = []
        for response in chain.next_stream(request):
            chunks.append(response.chat_response)
            yield response
        aggregated = ChatClientResponse(aggregate_chunks(chunks), request.context)
        trailing = _trailing_chunk(aggregated, self.after(aggregated, chain))
        if trailing is not None:
            yield trailing

    # -- the same hooks, for async requests --------------------------------------------------------

    async def abefore(self, request: ChatClientRequest, chain: AsyncAdvisorChain) -> ChatClientRequest:
        """`before` for async requests: run in a worker thread, since it may block (a store search)."""
        if type(self).before is BaseAdvisor.before:
            return request
        return await asyncio.to_thread(self.before, request, chain)  # type: ignore[arg-type]

    async def aafter(self, response: ChatClientResponse, chain: AsyncAdvisorChain) -> ChatClientResponse:
        """`after` for async requests: run in a worker thread, since it may block."""
        if type(self).after is BaseAdvisor.after:
            return response
        return await asyncio.to_thread(self.after, response, chain)  # type: ignore[arg-type]

    async def aadvise_call(self, request: ChatClientRequest, chain: AsyncAdvisorChain) -> ChatClientResponse:
        response = await chain.anext_call(await self.abefore(request, chain))
        return await self.aafter(response, chain)

    async def aadvise_stream(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> AsyncIterator[ChatClientResponse]:
        request = await self.abefore(request, chain)
        passing = type(self).after is BaseAdvisor.after and type(self).aafter is BaseAdvisor.aafter
        chunks: list[ChatResponse] = []
        async with aclosing(chain.anext_stream(request)) as stream:
            async for response in stream:
                if not passing:
                    chunks.append(response.chat_response)
                yield response
        if passing:
            return
        aggregated = ChatClientResponse(aggregate_chunks(chunks), request.context)
        trailing = _trailing_chunk(aggregated, await self.aafter(aggregated, chain))
        if trailing is not None:
            yield trailing

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, order={self.order!r})"


def _trailing_chunk(aggregated: ChatClientResponse, result: ChatClientResponse) -> ChatClientResponse | None:
    """The metadata `after` added to an aggregated stream, as one chunk without text (None if nothing)."""
    added = {
        key: value
        for key, value in result.chat_response.metadata.items()
        if key not in aggregated.chat_response.metadata or aggregated.chat_response.metadata[key] is not value
    }
    if not added:
        return None
    return ChatClientResponse(ChatResponse(AssistantMessage(None), metadata=added), aggregated.context)
