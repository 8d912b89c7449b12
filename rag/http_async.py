"""Async HTTP plumbing for the OpenAI-compatible clients: the retry loop of `rag.http` on `httpx.AsyncClient`.

The decisions are shared with the sync path (`rag.http`): which statuses are retried, how long to wait
(`RetryPolicy.delay`, honouring `Retry-After`), how an error response becomes a `RagError` (status, masked
and truncated body) and how transport errors are described. Only the waiting differs: `asyncio.sleep`, so
other requests go on meanwhile, and a cancelled task stops waiting at once.

Also here: `LoopBoundClient`, an `httpx.AsyncClient` created on first use in the running event loop
(an async client must not outlive the loop it was used in).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import httpx

from rag.http import (
    ErrorFactory,
    RetryPolicy,
    _describe_transport_error,
    error_from_response,
    is_retryable_status,
)
from rag.redaction import Redactor

__all__ = ["LoopBoundClient", "asend_with_retries"]

logger = logging.getLogger("rag.http")


async def _sleep(policy: RetryPolicy, seconds: float) -> None:
    if policy.sleep is time.sleep:
        await asyncio.sleep(seconds)
    else:
        policy.sleep(seconds)  # an injected sleep (tests record the waits); keep its behaviour
        await asyncio.sleep(0)


async def asend_with_retries(
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    policy: RetryPolicy,
    what: str,
    error: ErrorFactory,
    redactor: Redactor,
) -> httpx.Response:
    """The first successful (< 400) response of `await send()`, retrying as `policy` allows.

    The async twin of `rag.http.send_with_retries`, with the same retries, waits and errors.

    Raises:
        RagError: from `error`, with status and body for HTTP errors, or wrapping the last transport error.
    """
    attempts = policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        try:
            response = await send()
        except httpx.UnsupportedProtocol as exc:
            raise error(redactor(f"{what} failed: {exc}")) from exc
        except httpx.TransportError as exc:
            problem = _describe_transport_error(exc)
            if last:
                tries = f" after {attempts} attempts" if attempts > 1 else ""
                raise error(redactor(f"{what} failed{tries}: {problem}")) from exc
            wait = policy.delay(attempt, None)
        else:
            if response.status_code < 400:
                return response
            try:
                await response.aread()  # so error_from_response can read the body without blocking
            except httpx.HTTPError:
                pass
            finally:
                await response.aclose()
            if last or not is_retryable_status(response.status_code):
                raise error_from_response(
                    response, what=what, error=error, attempts=attempt, redactor=redactor
                )
            problem = f"HTTP {response.status_code}"
            wait = policy.delay(attempt, response)
        logger.info("%s: %s; retry %d of %d in %.2f s", what, problem, attempt, policy.max_retries, wait)
        await _sleep(policy, wait)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


class LoopBoundClient:
    """An `httpx.AsyncClient` per event loop: injected, or created on first use and owned.

    An owned client used in an event loop that has since closed is dropped and replaced, since its
    connections belong to the dead loop. `aclose()` closes an owned client; an injected one is the
    caller's to close.
    """

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._injected = client
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncClient:
        """The client for the running loop."""
        if self._injected is not None:
            return self._injected
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            self._client = httpx.AsyncClient()
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the owned client, if any (call it in the loop that used it)."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.aclose()
