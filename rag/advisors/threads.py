"""Running blocking code from an async chain: sync iterators pulled in threads, sync advisors bridged.

An async chain never blocks its event loop. Work that blocks (a store search, a SQLite write, a sync chat
model) runs in a worker thread. A sync advisor runs in a bridge thread of its own (see
`rag.advisors.achain.BridgeChain`, the sync face of an async chain).

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
from typing import Any, TypeVar

__all__ = ["END", "iterate_in_thread", "run_bridged"]

T = TypeVar("T")

END = object()
"""What `next(iterator, END)` returns at the end: a sentinel no iterator yields."""
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
            pending = asyncio.ensure_future(run(next, iterator, END))
            # Shielded: cancelling the reader must not mark this done while its thread still runs next().
            item = await asyncio.shield(pending)
            pending = None
            if item is END:
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
