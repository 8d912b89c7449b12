"""Request limits of `rag serve`: a token bucket per client address, and a capped body reader."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

__all__ = ["BodyTooLarge", "RateLimiter", "read_capped"]


class RateLimiter:
    """`per_minute` requests per key, refilled continuously, with bursts up to `per_minute`.

    `acquire(key)` takes one request and returns None, or the seconds until one is available;
    `wait(key)` says the same without taking one. The table of keys is bounded: past `max_keys` the
    key seen longest ago is forgotten first, so a flood of new keys never resets the others at once.

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(2, clock=lambda: now[0])
        >>> limiter.acquire("a"), limiter.acquire("a"), limiter.acquire("a")
        (None, None, 30.0)
        >>> now[0] = 30.0; limiter.wait("a") is None, limiter.acquire("a") is None
        (True, True)
    """

    def __init__(
        self, per_minute: int, *, max_keys: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_minute = per_minute
        self._rate = per_minute / 60.0
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _tokens(self, key: str, now: float) -> float:
        tokens, seen = self._buckets.get(key, (float(self.per_minute), now))
        return min(float(self.per_minute), tokens + (now - seen) * self._rate)

    def wait(self, key: str) -> float | None:
        """None if `key` may make a request now, else the seconds until it may (nothing is taken)."""
        if self.per_minute <= 0:
            return None
        with self._lock:
            tokens = self._tokens(key, self._clock())
        return None if tokens >= 1.0 else (1.0 - tokens) / self._rate

    def acquire(self, key: str) -> float | None:
        """Take one request for `key`: None if it was available, else the seconds until one is."""
        if self.per_minute <= 0:
            return None
        now = self._clock()
        with self._lock:
            tokens = self._tokens(key, now)
            taken = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if taken else tokens, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)  # the key seen longest ago
        return None if taken else (1.0 - tokens) / self._rate


class BodyTooLarge(Exception):
    """The body passed the limit (the app answers 413)."""


async def read_capped(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """The whole body, or `BodyTooLarge` as soon as it passes `limit` bytes (a chunked body too)."""
    parts: list[bytes] = []
    size = 0
    async for part in chunks:
        size += len(part)
        if size > limit:
            raise BodyTooLarge(size)
        parts.append(part)
    return b"".join(parts)
