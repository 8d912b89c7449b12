"""HTTP plumbing shared by the OpenAI-compatible clients: settings, retries with backoff, error bodies.

`send_with_retries` sends a request again after a 408, 429 or 5xx answer, a connection error or a timeout,
waiting with exponential backoff and jitter, or as long as the server's `Retry-After` asks (capped). It is
used for whole requests and for opening streams; a stream that has already produced data is never re-sent.

`send_within` runs the retries and the reading of the body under one deadline (see rag.deadline), so
`timeout` bounds the whole call however the server trickles its bytes.

The API key lives in a `Secret` (rag.endpoint), whose repr hides it; error messages carry the URL (masked),
status and a truncated body, never request headers, and any echo of the key in a body is masked, near-copies
included (see rag.redaction).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

import httpx

from rag.deadline import Cutter, Deadline, DeadlineExceeded, run_within
from rag.endpoint import DEFAULT_OPENAI_BASE_URL, Endpoint, Secret, resolve_openai_endpoint
from rag.errors import InvalidRequestError, RagError
from rag.redaction import Redactor

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "Endpoint",
    "ErrorFactory",
    "RetryPolicy",
    "Secret",
    "error_from_response",
    "is_retryable_status",
    "parse_retry_after",
    "redact",
    "resolve_openai_endpoint",
    "send_with_retries",
    "send_within",
    "timed_send",
]

logger = logging.getLogger("rag.http")

BODY_LIMIT = 2000
"""Response bodies kept on errors are cut to this many characters."""


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with each non-empty secret and its near-copies replaced by `***` (see `Redactor`)."""
    return Redactor(secrets)(text)


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
    redactor: Redactor | None = None,
) -> RagError:
    """An error naming the status and the server's message; the (masked, truncated) body is attached."""
    try:
        body = response.read().decode("utf-8", errors="replace")
    except httpx.HTTPError:
        body = ""
    # Cut before masking (a huge body would be slow to scan), with room for a key that straddles the cut.
    body = (redactor or Redactor(secrets))(body[: BODY_LIMIT + 200])[:BODY_LIMIT]
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
    deadline: Deadline | None = None,
    redactor: Redactor | None = None,
) -> httpx.Response:
    """The first successful (< 400) response of `send()`, retrying as `policy` allows.

    `send` must produce a fresh request each time (it may open a stream). Error responses are read and
    closed here. With a `deadline`, no retry starts (or waits) past it.

    Raises:
        RagError: from `error`, with status and body for HTTP errors, or wrapping the last transport error.
    """
    mask = redactor if redactor is not None else Redactor(secrets)
    attempts = policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        try:
            response = send()
        except httpx.UnsupportedProtocol as exc:
            raise error(mask(f"{what} failed: {exc}")) from exc
        except httpx.TransportError as exc:
            problem = _describe_transport_error(exc)
            if last:
                tries = f" after {attempts} attempts" if attempts > 1 else ""
                raise error(mask(f"{what} failed{tries}: {problem}")) from exc
            wait = policy.delay(attempt, None)
        else:
            if response.status_code < 400:
                return response
            wait = policy.delay(attempt, response)
            _raise_unless_retried(response, what, error, mask, attempt, last=last, late=_late(wait, deadline))
            problem = f"HTTP {response.status_code}"
        if _late(wait, deadline):
            raise error(mask(f"{what} failed: {problem}; {_NO_TIME}"))
        logger.info("%s: %s; retry %d of %d in %.2f s", what, problem, attempt, policy.max_retries, wait)
        policy.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


_NO_TIME = "no retry: the next one would end past the timeout"


def _late(wait: float, deadline: Deadline | None) -> bool:
    return deadline is not None and wait >= deadline.remaining()


def _raise_unless_retried(
    response: httpx.Response,
    what: str,
    error: ErrorFactory,
    mask: Redactor,
    attempt: int,
    *,
    last: bool,
    late: bool,
) -> None:
    """Raise the error for an HTTP error answer unless it will be retried; close the response either way."""
    retryable = is_retryable_status(response.status_code)
    if last or late or not retryable:
        failure = error_from_response(response, what=what, error=error, attempts=attempt, redactor=mask)
        response.close()
        if late and retryable and not last:
            failure.args = (f"{failure} ({_NO_TIME})",)
        raise failure
    response.close()


def timed_send(
    client: httpx.Client,
    build: Callable[[], httpx.Request],
    deadline: Deadline,
    cutter: Cutter,
    *,
    read: float | None = None,
) -> Callable[[], httpx.Response]:
    """A `send` for `send_with_retries` whose attempts wait no longer than `deadline` allows.

    Each attempt's httpx timeouts are the time left (reads: `read` seconds, when given), its response is
    streamed (the body is not read yet) and its sockets are reported to `cutter`.
    """

    def send() -> httpx.Response:
        if cutter.cut or deadline.expired():
            raise httpx.ReadTimeout("the call's deadline passed")
        request = build()
        left = max(deadline.remaining(), 0.001)
        request.extensions["timeout"] = httpx.Timeout(left, read=left if read is None else read).as_dict()
        request.extensions["trace"] = cutter.trace
        response = client.send(request, stream=True)
        cutter.watch(response)
        return response

    return send


def send_within(
    client: httpx.Client,
    build: Callable[[], httpx.Request],
    *,
    timeout: float,
    policy: RetryPolicy,
    what: str,
    error: ErrorFactory,
    redactor: Redactor,
) -> httpx.Response:
    """Send `build()` with retries and read the whole body, all within `timeout` seconds.

    The response is returned read and closed. Each attempt's httpx timeout is the time left, so a silent
    server fails as a plain timeout; a server that keeps sending a trickle of bytes is cut off at the
    deadline.

    Raises:
        RagError: from `error`: HTTP and transport errors as `send_with_retries`, and the deadline passing.
    """
    deadline = Deadline(timeout)
    cutter = Cutter()
    send = timed_send(client, build, deadline, cutter)

    def work() -> httpx.Response:
        response = send_with_retries(
            send, policy=policy, what=what, error=error, deadline=deadline, redactor=redactor
        )
        try:
            response.read()
        except httpx.TimeoutException as exc:
            raise error(redactor(f"{what} failed: timed out ({type(exc).__name__})")) from exc
        except httpx.HTTPError as exc:
            raise error(redactor(f"{what} failed while reading the reply: {type(exc).__name__}")) from exc
        finally:
            response.close()
        return response

    try:
        return run_within(work, deadline, cutter)
    except DeadlineExceeded:
        raise error(f"{what} did not finish within its {timeout:g} s timeout (retries included)") from None


def _describe_transport_error(exc: httpx.TransportError) -> str:
    kind = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({kind})"
    detail = str(exc) or "no detail"
    return f"connection error ({kind}: {detail})"
