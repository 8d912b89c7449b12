"""The shared retry helper (rag.http): Retry-After forms, backoff, retryable statuses, secrets."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import httpx
import pytest

from rag.errors import InvalidRequestError
from rag.http import RetryPolicy, Secret, is_retryable_status, parse_retry_after


def test_retry_after_forms_and_cap() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "Thu, 01 Jan 2026 12:00:30 GMT"}), now) == 30.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "Thu, 01 Jan 2026 11:00:00 GMT"}), now) == 0.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers()) is None
    response = httpx.Response(429, headers={"Retry-After": "3600"})
    assert RetryPolicy(max_retry_after=20.0).delay(1, response) == 20.0


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=5.0, jitter=0.5)
    rng = random.Random(1)
    for retry, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        assert ceiling / 2 <= policy.backoff(retry, rng) <= ceiling
    with pytest.raises(InvalidRequestError, match="max_retries must be an integer >= 0, got -1"):
        RetryPolicy(max_retries=-1)


def test_retryable_statuses() -> None:
    assert [s for s in (400, 401, 404, 408, 409, 422, 429, 500, 503) if is_retryable_status(s)] == [
        408,
        429,
        500,
        503,
    ]


def test_secret_hides_itself() -> None:
    secret = Secret("sk-abc")
    assert (repr(secret), str(secret), secret.reveal()) == ("Secret('***')", "Secret('***')", "sk-abc")
