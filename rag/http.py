"""HTTP plumbing shared by the OpenAI-compatible clients: settings, retries with backoff, error bodies.

`send_with_retries` sends a request again after a 408, 429 or 5xx answer, a connection error or a timeout,
waiting with exponential backoff and jitter, or as long as the server's `Retry-After` asks (capped). It is
used for whole requests and for opening streams; a stream that has already produced data is never re-sent.

The API key lives in a `Secret`, whose repr hides it; error messages carry the URL, status and a truncated
body, never request headers, and any echo of the key in a body is masked.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

import httpx

from rag.errors import InvalidRequestError, RagError

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "ErrorFactory",
    "RetryPolicy",
    "Secret",
    "error_from_response",
    "is_retryable_status",
    "parse_retry_after",
    "redact",
    "resolve_openai_endpoint",
    "send_with_retries",
]

logger = logging.getLogger("rag.http")

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
BODY_LIMIT = 2000
"""Response bodies kept on errors are cut to this many characters."""


class Secret:
    """A string that never shows itself in a repr or str (an API key).

    Example:
        >>> key = Secret("sk-123")
        >>> key, key.reveal()
        (Secret('***'), 'sk-123')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def resolve_openai_endpoint(base_url: str | None, api_key: str | None) -> tuple[str, Secret | None]:
    """The base URL and key from the arguments, else `OPENAI_BASE_URL` / `OPENAI_API_KEY`, else defaults.

    Empty environment variables count as unset. A URL without http(s) scheme is an `InvalidRequestError`.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    if not url.startswith(("http://", "https://")):
        raise InvalidRequestError(f"base URL must start with http:// or https://, got {url!r}")
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    return url.rstrip("/"), Secret(key) if key else None


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every occurrence of each non-empty secret replaced by `***`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def is_retryable_status(status_code: int) -> bool:
    """Request timeout, rate limit and server errors are worth another try; other 4xx are not."""
    return status_code in (408, 429) or status_code >= 500


def parse_retry_after(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` (seconds or an HTTP date); None if absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before sending a failed request again.

    Retry n (1-based) waits `initial_delay * 2**(n-1)`, capped at `max_delay`, minus up to `jitter` of
    it at random, unless the server sent `Retry-After`, which is honoured up to `max_retry_after` seconds.

    Example:
        >>> waits = []
        >>> policy = RetryPolicy(max_retries=2, sleep=waits.append)  # tests inject a no-op sleep
        >>> policy.backoff(3, random.Random(0)) <= 2.0
        True
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    jitter: float = 0.25
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise InvalidRequestError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """The wait before retry number `retry` (1-based) when the server gave no `Retry-After`."""
        base = min(self.max_delay, self.initial_delay * 2.0 ** (retry - 1))
        draw: float = (rng or random).random()
        return base * (1.0 - self.jitter * draw)

    def delay(self, retry: int, response: httpx.Response | None) -> float:
        """The wait before retry number `retry`, honouring the response's `Retry-After`, capped."""
        if response is not None:
            asked = parse_retry_after(response.headers)
            if asked is not None:
                return min(asked, self.max_retry_after)
        return self.backoff(retry)


class ErrorFactory(Protocol):
    """An error class taking a message, status code and body, such as `ModelError` or `EmbeddingError`."""

    def __call__(
        self, message: str, *, status_code: int | None = ..., body: str | None = ...
    ) -> RagError: ...


def error_from_response(
    response: httpx.Response,
    *,
    what: str,
    error: ErrorFactory,
    secrets: Sequence[str] = (),
    attempts: int = 1,
) -> RagError:
    """An error naming the status and the server's message; the (masked, truncated) body is attached."""
    try:
        body = response.read().decode("utf-8", errors="replace")
    except httpx.HTTPError:
        body = ""
    body = redact(body, secrets)[:BODY_LIMIT]
    detail = _error_detail(body)
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    message = f"{what} failed with HTTP {response.status_code}{reason}{tries}"
    return error(f"{message}: {detail}" if detail else message, status_code=response.status_code, body=body)


def _error_detail(body: str) -> str:
    """The server's own error message (OpenAI's `{"error": {"message": ...}}`), else the start of the body."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body[:200].strip()
    if isinstance(payload, dict):
        inner = payload.get("error", payload)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str):
            return message[:300]
    return body[:200].strip()


def send_with_retries(
    send: Callable[[], httpx.Response],
    *,
    policy: RetryPolicy,
    what: str,
    error: ErrorFactory,
    secrets: Sequence[str] = (),
) -> httpx.Response:
    """The first successful (< 400) response of `send()`, retrying as `policy` allows.

    `send` must produce a fresh request each time (it may open a stream). Error responses are read and
    closed here.

    Raises:
        RagError: from `error`, with status and body for HTTP errors, or wrapping the last transport error.
    """
    attempts = policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        try:
            response = send()
        except httpx.UnsupportedProtocol as exc:
            raise error(redact(f"{what} failed: {exc}", secrets)) from exc
        except httpx.TransportError as exc:
            problem = _describe_transport_error(exc)
            if last:
                tries = f" after {attempts} attempts" if attempts > 1 else ""
                raise error(redact(f"{what} failed{tries}: {problem}", secrets)) from exc
            wait = policy.delay(attempt, None)
        else:
            if response.status_code < 400:
                return response
            if last or not is_retryable_status(response.status_code):
                failure = error_from_response(
                    response, what=what, error=error, secrets=secrets, attempts=attempt
                )
                response.close()
                raise failure
            problem = f"HTTP {response.status_code}"
            wait = policy.delay(attempt, response)
            response.close()
        logger.info("%s: %s; retry %d of %d in %.2f s", what, problem, attempt, policy.max_retries, wait)
        policy.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


def _describe_transport_error(exc: httpx.TransportError) -> str:
    kind = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({kind})"
    detail = str(exc) or "no detail"
    return f"connection error ({kind}: {detail})"
