"""Deadlines for HTTP calls that a slow or hostile server cannot stretch.

httpx's timeouts bound each socket operation, so a server that sends one byte every few tenths of a second
(or keep-alive comments forever) never trips them. Here the blocking work runs in a worker thread; the
caller waits no longer than its deadline, then cuts the connection's socket so the worker ends too.

- `Deadline`: a point on the monotonic clock (or none), with the seconds left.
- `Cutter`: collects the sockets a request opens (through httpcore's `trace` extension and the response's
  `network_stream`) and shuts them down on demand, from any thread.
- `run_within`: runs a function in a worker thread and waits for it until a deadline.

Known limit: a keep-alive connection reused from the pool reveals its socket only with the response, so
a server that trickles the *headers* on such a connection cannot be cut; the caller still gets its error
at the deadline, and the worker ends when the server stops or the client is closed.
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

__all__ = ["GRACE", "Cutter", "Deadline", "DeadlineExceeded", "run_within"]

T = TypeVar("T")

GRACE = 0.25
"""Seconds the caller waits past a deadline for the worker's own error (a clean `ReadTimeout`)."""

_CONNECTED = ("connection.connect_tcp.complete", "connection.start_tls.complete")


class DeadlineExceeded(Exception):
    """Raised by `run_within` when the work did not finish in time (callers turn it into a `RagError`)."""


class Deadline:
    """A point in time a call must end by; `Deadline(None)` never expires.

    Example:
        >>> Deadline(None).remaining(), Deadline(5.0).remaining() <= 5.0
        (inf, True)
    """

    __slots__ = ("end", "seconds")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.end = math.inf if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def earliest(self, other: Deadline) -> Deadline:
        return self if self.end <= other.end else other

    def __repr__(self) -> str:
        return f"Deadline({self.seconds!r})"


class Cutter:
    """The sockets one call uses, so that another thread can cut them when its deadline passes.

    Pass `trace` as the request's `trace` extension (new connections report their socket through it) and
    give each response to `watch` (a reused keep-alive connection is only known from its response).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self.cut = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event in _CONNECTED:
            self._add(info.get("return_value"))

    def watch(self, response: httpx.Response) -> None:
        self._add(response.extensions.get("network_stream"))

    def _add(self, stream: Any) -> None:
        if stream is None:
            return
        with self._lock:
            self._streams.append(stream)
            cut = self.cut
        if cut:
            _shutdown(stream)

    def cut_all(self) -> None:
        """Shut down every socket seen so far, and any seen later; blocked reads on them return at once."""
        with self._lock:
            self.cut = True
            streams = list(self._streams)
        for stream in streams:
            _shutdown(stream)


def _shutdown(stream: Any) -> None:
    # shutdown(), unlike close(), wakes a recv() blocked in another thread; the owner still closes it.
    get_extra_info = getattr(stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed by its owner
            sock.shutdown(socket.SHUT_RDWR)


def run_within(work: Callable[[], T], deadline: Deadline, cutter: Cutter) -> T:
    """`work()`, run in a daemon thread; its result or exception, if it ends before `deadline` (+ GRACE).

    Raises:
        DeadlineExceeded: the deadline passed first; `cutter` has cut the work's connections by then.
    """
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller's thread, which re-raises it
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=target, name="rag-http-call", daemon=True).start()
    if not done.wait(deadline.remaining() + GRACE):
        cutter.cut_all()
        raise DeadlineExceeded
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
