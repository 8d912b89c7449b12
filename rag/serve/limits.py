"""Request limits of `rag serve`: a token bucket per client address, and a capped body reader."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable

__all__ = ["BodyTooLarge", "RateLimiter", "read_capped"]


class RateLimiter:
    """`per_minute` requests per key, refilled continuously, with bursts up to `per_minute`.

    `acquire(key)` takes one request and returns None, or the seconds until one is available.

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(2, clock=lambda: now[0])
        >>> limiter.acquire("a"), limiter.acquire("a"), limiter.acquire("a")
        (None, None, 30.0)
        >>> now[0] = 30.0; limiter.acquire("a") is None
        True
    """

    _MAX_KEYS = 10_000

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float | None:
        if self.per_minute <= 0:
            return None
        now = self._clock()
        with self._lock:
            if len(self._buckets) > self._MAX_KEYS:
                self._buckets.clear()  # a flood of addresses: forget them all rather than grow forever
            tokens, seen = self._buckets.get(key, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - seen) * self._rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return None
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self._rate


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
