"""Running blocking code from an async chain: sync iterators pulled in threads, sync advisors bridged.

An async chain never blocks its event loop. Work that blocks (a store search, a SQLite write, a sync chat
model) runs in a worker thread. A sync advisor is harder: it calls `chain.next_call(request)` and expects
an answer, while the rest of the chain is async. `BridgeChain` is the sync face of an async chain: the
advisor runs in a thread of its own, and each `next_call` / `next_stream` it makes is scheduled back on
the event loop and waited for. The advisors and the model behind it stay async.

Bridged advisors get a dedicated pool: each one holds its thread while it waits for the steps after it,
and those steps may need worker threads themselves; sharing one small pool could deadlock under load.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rag.client.achain import AsyncAdvisorChain
    from rag.client.request import ChatClientRequest
    from rag.client.response import ChatClientResponse

__all__ = ["BridgeChain", "iterate_in_thread", "run_bridged"]

T = TypeVar("T")

_END = object()
_BRIDGE_THREADS = 256
_bridge_pool: concurrent.futures.ThreadPoolExecutor | None = None
_bridge_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _bridge_pool
    with _bridge_lock:
        if _bridge_pool is None:
            _bridge_pool = concurrent.futures.ThreadPoolExecutor(_BRIDGE_THREADS, "rag-bridge")
        return _bridge_pool


async def run_bridged(func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` in a bridge thread (context variables copied), awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, func, *args)
    return await loop.run_in_executor(_pool(), call)


async def iterate_in_thread(
    make: Callable[[], Iterable[T]], *, bridged: bool = False
) -> AsyncGenerator[T, None]:
    """The items of a blocking iterable, each `next()` run in a worker thread (a bridge thread if `bridged`).

    When the consumer stops early (or is cancelled) the iterator is closed, after any `next()` still
    running in its thread has returned: a generator cannot be closed while it executes.
    """
    run: Callable[..., Awaitable[Any]] = run_bridged if bridged else asyncio.to_thread
    iterator: Iterator[T] = await run(lambda: iter(make()))
    pending: asyncio.Future[Any] | None = None
    try:
        while True:
            pending = asyncio.ensure_future(run(next, iterator, _END))
            # Shielded: cancelling the reader must not mark this done while its thread still runs next().
            item = await asyncio.shield(pending)
            pending = None
            if item is _END:
                return
            yield item
    finally:
        close = getattr(iterator, "close", None)
        if callable(close):
            if pending is not None and not pending.done():
                pending.add_done_callback(lambda _future: _close_later(run, close))
            else:
                await run(_quiet, close)


_closing: set[asyncio.Task[Any]] = set()


def _quiet(close: Callable[[], object]) -> None:
    # Closing after a cancellation may raise (the bridge refuses new waits); nobody is left to tell.
    with contextlib.suppress(Exception, concurrent.futures.CancelledError):
        close()


def _close_later(run: Callable[..., Awaitable[Any]], close: Callable[[], object]) -> None:
    # Closed in a thread too: closing a bridged generator waits on the loop, which must stay free.
    task = asyncio.ensure_future(run(_quiet, close))
    _closing.add(task)  # keep a reference until done, or the task may be collected mid-flight
    task.add_done_callback(_closing.discard)


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
                item = self._wait(anext(stream, _END))
                if item is _END:
                    return
                yield item
        finally:
            self._wait(stream.aclose())
