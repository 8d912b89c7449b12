"""Reading a streamed reply under an idle limit and an optional total deadline.

A worker thread opens the stream and reads its body into a small queue; the consumer takes pieces with a
wait bounded by whichever limit comes first. Only the consumer knows when a whole *data* event arrived (it
decodes the events), so it calls `touch()` then; bytes that complete no event (SSE keep-alive comments, a
trickle) do not reset the idle limit. When a limit passes, the connection is cut so the worker ends too.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

import httpx

from rag.deadline import GRACE, Cutter, Deadline

__all__ = ["Opener", "PumpTimeout", "StreamPump"]

Opener: TypeAlias = Callable[[Cutter, Deadline], httpx.Response]
"""Opens the stream (retries included) before the given deadline, registering sockets with the cutter."""

Item: TypeAlias = tuple[Literal["open", "bytes", "end", "error"], Any]


class PumpTimeout(Exception):
    """A limit passed while waiting: `which` is "idle" or "total"."""

    def __init__(self, which: Literal["idle", "total"]) -> None:
        super().__init__(which)
        self.which = which


class StreamPump:
    """A streamed response read in a worker thread; `next()` waits no longer than the limits allow.

    Items are `("open", content_type)` first, then `("bytes", chunk)`..., then `("end", None)`; or
    `("error", exception)` at any point. `idle` bounds the wait for the first and each next data event
    (the caller reports events with `touch()`); `total`, if given, bounds the whole stream.
    """

    def __init__(self, opener: Opener, *, idle: float, total: float | None) -> None:
        self.idle = idle
        self.total = Deadline(total)
        self._idle_end = Deadline(idle)
        self._queue: queue.Queue[Item] = queue.Queue(maxsize=64)
        self._cutter = Cutter()
        self._finished = False
        opening = self._idle_end.earliest(self.total)
        worker = threading.Thread(target=self._run, args=(opener, opening), name="rag-stream", daemon=True)
        worker.start()

    def touch(self) -> None:
        """A data event arrived: the idle limit starts again."""
        self._idle_end = Deadline(self.idle)

    def next(self) -> Item:
        """The next item. Raises `PumpTimeout` (after cutting the connection) when a limit passes first."""
        limit = self._idle_end.earliest(self.total)
        # The grace lets the worker's own error (a clean ReadTimeout from a silent server) come first.
        wait = limit.end - time.monotonic() + GRACE
        try:
            # Bytes that keep coming (comments, a trickle) must not hold the limit off: check it each time.
            if wait <= 0:
                raise queue.Empty
            item = self._queue.get(timeout=wait)
        except queue.Empty:
            self._cutter.cut_all()
            raise PumpTimeout("total" if limit is self.total else "idle") from None
        if item[0] in ("end", "error"):
            self._finished = True
        return item

    def close(self) -> None:
        """Stop reading: cut the connection, unless the stream ended (then it goes back to the pool)."""
        if not self._finished:
            self._cutter.cut_all()

    def _run(self, opener: Opener, opening: Deadline) -> None:
        try:
            response = opener(self._cutter, opening)
        except BaseException as exc:  # handed to the consumer's thread
            self._put(("error", exc))
            return
        try:
            self._cutter.watch(response)
            self._put(("open", response.headers.get("content-type", "")))
            for raw in response.iter_bytes():
                if self._cutter.cut:
                    return
                self._put(("bytes", raw))
            self._put(("end", None))
        except BaseException as exc:
            self._put(("error", exc))
        finally:
            response.close()

    def _put(self, item: Item) -> None:
        # A bounded queue paces the reader to the consumer; give up once the consumer has gone.
        while not self._cutter.cut:
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
