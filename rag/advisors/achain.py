"""The async advisor chain: the same ordered advisors and terminal model call as `AdvisorChain`, awaited.

`AsyncAdvisorChain` shares everything that decides *what* runs with the sync chain: the advisors sorted by
`sort_advisors`, one `_Core` per request, the observation (timings, usage) and the request and response
types. Only *how* a step runs differs:

- an advisor with an async method (`aadvise_call` / `aadvise_stream`, as `BaseAdvisor` provides) that is
  at least as specific as its sync one is awaited on the event loop;
- a sync-only advisor (or one whose subclass overrode only the sync method) runs in a thread, and the
  chain it calls into is bridged back to the loop (`BridgeChain`, below);
- the model's `acall` / `astream` are awaited when it has them (`OpenAIChatModel` does); a sync model
  runs in a worker thread.

Cancelling the task that awaits a call or reads a stream cancels the step in progress, down to the HTTP
request of the model, which is closed.

Example:
    >>> import asyncio
    >>> from rag.chat import Prompt
    >>> from rag.testing import FakeChatModel
    >>> chain = AsyncAdvisorChain.build(FakeChatModel(["Hi!"]), [])
    >>> asyncio.run(chain.anext_call(ChatClientRequest(Prompt("Hello")))).text
    'Hi!'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing
from typing import Any, Literal, TypeVar

from rag.advisors.chain import CallStep, ChainPosition, final_prompt, retry_prompt
from rag.advisors.observation import EventKind
from rag.advisors.orders import Advisor, advisor_name
from rag.advisors.request import OUTPUT_VALIDATOR, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.advisors.stream_step import StreamStep, StreamSummary
from rag.advisors.threads import END, iterate_in_thread, run_bridged
from rag.chat.messages import ChatResponse, Prompt
from rag.chat.model import ChatModel
from rag.errors import InvalidRequestError
from rag.observability.hub import StepSpan
from rag.observability.steps import advisor_span, model_span

__all__ = ["AsyncAdvisorChain", "BridgeChain", "is_async_capable"]

T = TypeVar("T")

_METHODS = {"call": ("advise_call", "aadvise_call"), "stream": ("advise_stream", "aadvise_stream")}


def is_async_capable(advisor: object, mode: Literal["call", "stream"]) -> bool:
    """Whether `advisor` runs natively async in `mode`: its async method is at least as specific as its sync.

    A subclass of `BaseAdvisor` that overrides only `advise_call` must not be run through the inherited
    `aadvise_call` (it would skip the override), so the class that defines each method decides.
    """
    sync_name, async_name = _METHODS[mode]
    for klass in type(advisor).__mro__:
        names = vars(klass)
        if async_name in names:
            return True
        if sync_name in names:
            return False
    return callable(getattr(advisor, async_name, None))


def _check_capability(advisors: Iterable[Advisor], mode: Literal["call", "stream"]) -> None:
    sync_name, async_name = _METHODS[mode]
    for advisor in advisors:
        methods = (getattr(advisor, sync_name, None), getattr(advisor, async_name, None))
        if not any(callable(method) for method in methods):
            raise InvalidRequestError(
                f"advisor {advisor_name(advisor)!r} ({type(advisor).__name__}) cannot run in {mode} "
                f"requests: it has neither {sync_name}() nor {async_name}()"
            )


async def _model_call(model: ChatModel, prompt: Prompt) -> ChatResponse:
    acall = getattr(model, "acall", None)
    if callable(acall):
        response: ChatResponse = await acall(prompt)
        return response
    return await asyncio.to_thread(model.call, prompt)


def _model_stream(model: ChatModel, prompt: Prompt) -> AsyncIterator[ChatResponse]:
    astream = getattr(model, "astream", None)
    if callable(astream):
        stream: AsyncIterator[ChatResponse] = astream(prompt)
        return stream
    return iterate_in_thread(lambda: model.stream(prompt))


class AsyncAdvisorChain(ChainPosition):
    """A position in the ordered advisors of one async request; past the last one, the model call.

    Advisors with async methods receive it and `await chain.anext_call(request)` or iterate
    `chain.anext_stream(request)`; `copy(after=advisor)` works as on `AdvisorChain`.
    """

    __slots__ = ()

    @staticmethod
    def _check_capability(advisors: Sequence[Advisor], mode: Literal["call", "stream"]) -> None:
        _check_capability(advisors, mode)

    # -- calls -------------------------------------------------------------------------------------

    async def anext_call(self, request: ChatClientRequest) -> ChatClientResponse:
        """Run the next advisor (or the model, at the end) and return its response."""
        core, index = self._core, self._index
        observation = core.observation
        if not observation.bound:
            observation.bind(request.context)
        if index >= len(core.advisors):
            return await self._call_model(request)
        advisor: Any = core.advisors[index]
        following = AsyncAdvisorChain(core, index + 1)
        # Attached in this task only: the steps awaited below (and a bridged advisor's thread, which
        # copies the context) see the advisor's span as their parent.
        name = core.names[index]
        with CallStep(observation, "advisor", name, advisor_span(name, core.orders[index])):
            if is_async_capable(advisor, "call"):
                response = await advisor.aadvise_call(request, following)
            else:
                response = await _bridged_call(advisor, request, following)
        if not isinstance(response, ChatClientResponse):
            raise InvalidRequestError(
                f"advisor {core.names[index]!r} returned {response!r} from its call method; "
                "it must return a ChatClientResponse (did after() forget to return the response?)"
            )
        return response

    async def _call_model(self, request: ChatClientRequest) -> ChatClientResponse:
        prompt = final_prompt(request)
        response = await self._timed_model_call(prompt)
        validator: Callable[[str], str | None] | None = request.context.get(OUTPUT_VALIDATOR)
        if validator is not None:
            problem = validator(response.text)
            if problem is not None:
                response = await self._timed_model_call(retry_prompt(prompt, response, problem))
        return ChatClientResponse(response, request.context)

    async def _timed_model_call(self, prompt: Prompt) -> ChatResponse:
        core = self._core
        with CallStep(
            core.observation, "model", "model:call", model_span(core.model, prompt, "call")
        ) as step:
            step.response = await _model_call(core.model, prompt)
        return step.response

    # -- streams -----------------------------------------------------------------------------------

    def anext_stream(self, request: ChatClientRequest) -> AsyncGenerator[ChatClientResponse, None]:
        """The chunks of the next advisor (or of the model, at the end); lazy: runs on iteration."""
        core, index = self._core, self._index
        if not core.observation.bound:
            core.observation.bind(request.context)
        if index >= len(core.advisors):
            context = request.context

            async def model_chunks() -> AsyncIterator[ChatClientResponse]:
                stream = _model_stream(core.model, request.prompt)
                try:
                    async for chunk in stream:
                        yield ChatClientResponse(chunk, context)
                finally:
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()  # now, so an abandoned stream closes its HTTP request at once

            return self._timed_stream(
                "model",
                "model:stream",
                model_chunks,
                lambda: model_span(core.model, request.prompt, "stream"),
            )
        advisor: Any = core.advisors[index]
        _check_capability([advisor], "stream")
        following = AsyncAdvisorChain(core, index + 1)
        name, order = core.names[index], core.orders[index]
        if is_async_capable(advisor, "stream"):
            start = lambda: advisor.aadvise_stream(request, following)  # noqa: E731
        else:
            start = lambda: _bridged_stream(advisor, request, following)  # noqa: E731
        return self._timed_stream("advisor", name, start, lambda: advisor_span(name, order))

    async def _timed_stream(
        self,
        kind: EventKind,
        name: str,
        start_stream: Callable[[], AsyncIterator[ChatClientResponse]],
        open_span: Callable[[], StepSpan | None],
    ) -> AsyncGenerator[ChatClientResponse, None]:
        # The same bracketing as the sync chain: each step of iteration nests the steps after it, and the
        # step's span is current only while a chunk is awaited, never across a yield.
        step = StreamStep(self._core.observation, open_span(), StreamSummary() if kind == "model" else None)
        error: BaseException | None = None
        iterator: AsyncIterator[ChatClientResponse] | None = None
        try:
            while True:
                step.resume()
                try:
                    if iterator is None:
                        iterator = aiter(start_stream())
                    item = await anext(iterator)
                except StopAsyncIteration:
                    return
                finally:
                    step.pause()
                if step.summary is not None:
                    step.summary.add(item.chat_response)
                yield item
        except (GeneratorExit, asyncio.CancelledError):
            raise  # the reader stopped or went away: not a failure of this step
        except BaseException as exc:
            error = exc
            raise
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
            step.finish(kind, name, error)


async def _bridged_call(
    advisor: Any, request: ChatClientRequest, following: AsyncAdvisorChain
) -> ChatClientResponse:
    bridge = BridgeChain(following, asyncio.get_running_loop())
    try:
        response: ChatClientResponse = await run_bridged(advisor.advise_call, request, bridge)
        return response
    except asyncio.CancelledError:
        bridge.cancel()
        raise


async def _bridged_stream(
    advisor: Any, request: ChatClientRequest, following: AsyncAdvisorChain
) -> AsyncIterator[ChatClientResponse]:
    bridge = BridgeChain(following, asyncio.get_running_loop())
    stream = iterate_in_thread(lambda: advisor.advise_stream(request, bridge), bridged=True)
    try:
        async with aclosing(stream):
            async for item in stream:
                yield item
    except asyncio.CancelledError:
        bridge.cancel()
        raise


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


class _Waits:
    """What one bridged advisor waits for on the loop, shared by the chains it copies."""

    def __init__(self) -> None:
        self.futures: set[concurrent.futures.Future[Any]] = set()
        self.cancelled = False


class BridgeChain:
    """The sync chain a sync advisor sees inside an async chain (see the module docstring).

    It offers what advisors use of `AdvisorChain`: `next_call`, `next_stream`, `copy(after=...)`, and
    the `advisors`, `remaining`, `model` and `observation` properties.
    """

    def __init__(
        self, chain: AsyncAdvisorChain, loop: asyncio.AbstractEventLoop, waits: _Waits | None = None
    ) -> None:
        self._chain = chain
        self._loop = loop
        self._waits = waits if waits is not None else _Waits()

    def _wait(self, awaitable: Awaitable[Any]) -> Any:
        waits = self._waits
        if waits.cancelled:
            close = getattr(awaitable, "close", None)
            if callable(close):
                close()  # never awaited: close it so Python does not warn
            raise concurrent.futures.CancelledError("the async request was cancelled")
        future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._loop)
        waits.futures.add(future)
        try:
            return future.result()
        finally:
            waits.futures.discard(future)

    def cancel(self) -> None:
        """Cancel what the bridged advisor waits for: its thread then sees `CancelledError` and ends."""
        self._waits.cancelled = True
        for future in list(self._waits.futures):
            future.cancel()

    @property
    def advisors(self) -> tuple[Any, ...]:
        return self._chain.advisors

    @property
    def remaining(self) -> tuple[Any, ...]:
        return self._chain.remaining

    @property
    def model(self) -> Any:
        return self._chain.model

    @property
    def observation(self) -> Any:
        return self._chain.observation

    def copy(self, *, after: Any) -> BridgeChain:
        return BridgeChain(self._chain.copy(after=after), self._loop, self._waits)

    def next_call(self, request: ChatClientRequest) -> ChatClientResponse:
        response: ChatClientResponse = self._wait(self._chain.anext_call(request))
        return response

    def next_stream(self, request: ChatClientRequest) -> Iterator[ChatClientResponse]:
        stream = self._chain.anext_stream(request)
        try:
            while True:
                item = self._wait(anext(stream, END))
                if item is END:
                    return
                yield item
        finally:
            self._wait(stream.aclose())
