"""The OpenAI-compatible clients against a hostile loopback server (tests/hostile_server.py).

Two promises, each checked for a chat call, a chat stream and an embedding request where it applies:
the API key (or a credential in the base URL) never shows in an error, its repr, its body, a log line or a
model's repr, not even as a near-copy (URL-encoded, base64, cut short); and `timeout` bounds the whole
call, so a server that drips bytes or sends keep-alive comments forever cannot hold a caller past its
deadline (plus one second of slack).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from rag.chat import Prompt
from rag.embeddings.openai import OpenAIEmbedding
from rag.errors import EmbeddingError, InvalidRequestError, ModelError, RagError
from rag.models.openai import OpenAIChatModel
from tests.hostile_server import HostileServer

KEY = "sk-hostile-Zq8vN2kLp4Rt7Xw1Yc9Bf3Hj6Md0Gs5A"
"""A key long and random enough that any 12 characters of it in a text can only be a copy."""

Operation = Callable[..., Any]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    server = HostileServer()
    yield server
    server.close()


def chat_call(base_url: str, **options: Any) -> None:
    with OpenAIChatModel(base_url=base_url, model="m", **options) as model:
        model.call(Prompt("q"))


def chat_stream(base_url: str, **options: Any) -> None:
    with OpenAIChatModel(base_url=base_url, model="m", **options) as model:
        list(model.stream(Prompt("q")))


def embed(base_url: str, **options: Any) -> None:
    with OpenAIEmbedding("e", base_url=base_url, dimensions=2, **options) as model:
        model.embed(["x"])


def chat_acall(base_url: str, **options: Any) -> None:
    async def run() -> None:
        with OpenAIChatModel(base_url=base_url, model="m", **options) as model:
            try:
                await model.acall(Prompt("q"))
            finally:
                await model.aclose()

    asyncio.run(run())


def chat_astream(base_url: str, **options: Any) -> None:
    async def run() -> None:
        with OpenAIChatModel(base_url=base_url, model="m", **options) as model:
            try:
                async for _ in model.astream(Prompt("q")):
                    pass
            finally:
                await model.aclose()

    asyncio.run(run())


def aembed(base_url: str, **options: Any) -> None:
    async def run() -> None:
        with OpenAIEmbedding("e", base_url=base_url, dimensions=2, **options) as model:
            try:
                await model.aembed(["x"])
            finally:
                await model.aclose()

    asyncio.run(run())


OPERATIONS: dict[str, Operation] = {
    "call": chat_call,
    "stream": chat_stream,
    "embed": embed,
    "acall": chat_acall,
    "astream": chat_astream,
    "aembed": aembed,
}
EVERY = list(OPERATIONS)
"""Sync and async paths: the same promises hold on both."""


def near_copies(secret: str, *prefixes: str) -> list[str]:
    """Texts that would give `secret` away: itself, URL-encoded, any 12 characters of it, and base64 of it
    behind each prefix (as `Bearer ` or `user:` put it in an Authorization header)."""
    forms = [secret, quote(secret, safe="")]
    forms += [secret[i : i + 12] for i in range(len(secret) - 11)]
    for prefix in ("", *prefixes):
        encoded = base64.b64encode((prefix + secret).encode()).decode()
        start = -(-len(prefix) * 4 // 3) + 1  # the first characters only encode the prefix
        forms += [encoded[i : i + 12] for i in range(start, len(encoded) - 14)]
        # An echo that base64-encodes the header it got encodes the key twice (Basic auth).
        twice = base64.b64encode(f"Basic {encoded}".encode()).decode()
        forms += [twice[i : i + 16] for i in range(12, len(twice) - 20)]
    return forms


def assert_hidden(secret: str, texts: list[str], *prefixes: str) -> None:
    for text in texts:
        for form in near_copies(secret, *prefixes):
            assert form not in text, f"{form!r} leaked in {text!r}"


def fail(operation: Operation, base_url: str, **options: Any) -> tuple[RagError, float, str]:
    """Run `operation`, which must fail; the error, the elapsed seconds, and the model's repr."""
    start = time.monotonic()
    with pytest.raises(RagError) as info:
        operation(base_url, **options)
    elapsed = time.monotonic() - start
    model_type = OpenAIEmbedding if operation in (embed, aembed) else OpenAIChatModel
    with model_type(base_url=base_url) as model:
        shown = repr(model) + str(model)
    return info.value, elapsed, shown


def error_texts(error: RagError) -> list[str]:
    body = getattr(error, "body", None) or ""
    return [str(error), repr(error), body, *(str(arg) for arg in error.args)]


ECHOES = [
    (mode, prefix + operation)
    for prefix in ("", "a")
    for mode, operation in [
        ("echo-json", "call"),
        ("echo-json", "embed"),
        ("echo-status", "call"),
        ("echo-status", "stream"),
        ("echo-status", "embed"),
        ("echo-sse-error", "stream"),
        ("echo-sse-data", "stream"),
    ]
]


@pytest.mark.parametrize(("mode", "operation"), ECHOES)
def test_an_echoing_proxy_never_gets_the_key_into_errors_or_logs(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture, mode: str, operation: str
) -> None:
    caplog.set_level(logging.DEBUG)
    error, elapsed, shown = fail(OPERATIONS[operation], hostile.url(mode), api_key=KEY, max_retries=0)
    assert "proxy error" in str(error)  # the server's text is still shown, masked
    assert_hidden(KEY, [*error_texts(error), caplog.text, shown], "Bearer ")
    assert elapsed < 10


@pytest.mark.parametrize("operation", EVERY)
@pytest.mark.parametrize("where", ["userinfo", "query"])
def test_a_key_in_the_base_url_never_shows(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture, operation: str, where: str
) -> None:
    caplog.set_level(logging.DEBUG)
    credentials = {"userinfo": f"user:{KEY}"} if where == "userinfo" else {"query": f"api-key={KEY}"}
    for mode in ("echo-status", "echo-json"):
        if mode == "echo-json" and operation.endswith("stream"):
            continue  # a non-JSON 200 to a stream request is covered by the SSE echoes
        url = hostile.url(mode, **credentials)
        error, _, shown = fail(OPERATIONS[operation], url, max_retries=0)
        assert "proxy error" in str(error)
        assert_hidden(KEY, [*error_texts(error), caplog.text, shown], "user:", "Bearer ")
        assert "***" in shown


@pytest.mark.parametrize("operation", EVERY)
def test_retries_log_and_fail_without_the_key(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture, operation: str
) -> None:
    caplog.set_level(logging.DEBUG)
    url = hostile.url("echo-busy", userinfo=f"user:{KEY}", query=f"api-key={KEY}")
    error, _, shown = fail(OPERATIONS[operation], url, api_key=KEY, max_retries=2)
    assert "HTTP 503 Service Unavailable after 3 attempts: proxy error" in str(error)
    assert "retry 2 of 2" in caplog.text
    assert_hidden(KEY, [*error_texts(error), caplog.text, shown], "user:", "Bearer ")


@pytest.mark.parametrize("operation", EVERY)
def test_a_base_url_with_a_query_string_still_works(hostile: HostileServer, operation: str) -> None:
    url = hostile.url("ok", query=f"api-version=2024-06-01&api-key={KEY}")
    OPERATIONS[operation](url, max_retries=0)
    path = "embeddings" if operation.endswith("embed") else "chat/completions"
    assert hostile.request_lines[-1].split()[1] == f"/ok/v1/{path}?api-version=2024-06-01&api-key={KEY}"


def test_credentials_in_the_base_url_are_sent_as_basic_auth(hostile: HostileServer) -> None:
    url = hostile.url("echo-status", userinfo=f"user:{KEY}")
    with OpenAIChatModel(base_url=url, max_retries=0) as model:
        assert model.base_url == hostile.url("echo-status", userinfo="***")
        with pytest.raises(ModelError) as info:
            model.call(Prompt("q"))
    # What is left of the header is at most the encoded "user:" in front of the masked key.
    assert re.search(r"Authorization: Basic [A-Za-z0-9]{0,8}\*\*\* ", str(info.value))
    assert "@" not in hostile.request_lines[-1]


_TIMED = [
    ("drip", "call", {}),
    ("drip", "call", {"max_retries": 3}),
    ("drip", "stream", {}),
    ("drip", "embed", {}),
    ("drip", "embed", {"max_retries": 3}),
    ("drip-headers", "call", {}),
    ("drip-headers", "stream", {}),
    ("drip-headers", "embed", {}),
    ("keepalive", "stream", {}),
    ("slow-events", "stream", {"stream_timeout": 1.0}),
]
TIMED = [(mode, prefix + operation, options) for prefix in ("", "a") for mode, operation, options in _TIMED]


@pytest.mark.parametrize(("mode", "operation", "options"), TIMED)
def test_timeout_bounds_the_whole_call(
    hostile: HostileServer,
    caplog: pytest.LogCaptureFixture,
    mode: str,
    operation: str,
    options: dict[str, Any],
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = {"max_retries": 0, **options}
    url = hostile.url(mode, query=f"key={KEY}")
    error, elapsed, shown = fail(OPERATIONS[operation], url, api_key=KEY, timeout=1.0, **settings)
    assert elapsed < 1.0 + 5.0  # these servers never finish: without the whole-call bound it would not return
    assert isinstance(error, EmbeddingError if operation.endswith("embed") else ModelError)
    assert "1 s" in str(error)
    assert_hidden(KEY, [*error_texts(error), caplog.text, shown], "Bearer ")


def test_a_stream_that_keeps_sending_data_is_not_cut_by_the_idle_limit(hostile: HostileServer) -> None:
    # Events every 0.3 s stay under the 1 s idle limit: only the total deadline (stream_timeout) ends it.
    url = hostile.url("slow-events")
    start = time.monotonic()
    texts: list[str] = []
    with (
        OpenAIChatModel(base_url=url, model="m", timeout=1.0, stream_timeout=2.5) as model,
        pytest.raises(ModelError, match=r"did not finish within its 2\.5 s stream_timeout") as info,
    ):
        for piece in model.stream(Prompt("q")):
            texts.append(piece.text or "")
    assert 2.5 <= time.monotonic() - start < 2.5 + 5.0  # the server never ends: only the deadline did
    assert len(texts) >= 5 and set(texts) == {"la "}
    assert info.value.status_code is None


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("rag-http-call", "rag-stream") and t.is_alive()]


def _wait_for_no_workers(seconds: float = 2.0) -> list[threading.Thread]:
    end = time.monotonic() + seconds
    while _workers() and time.monotonic() < end:
        time.sleep(0.05)
    return _workers()


@pytest.mark.parametrize("operation", ["call", "stream", "embed"])
def test_a_call_cut_at_its_deadline_leaves_no_worker_behind(hostile: HostileServer, operation: str) -> None:
    fail(OPERATIONS[operation], hostile.url("drip"), timeout=0.5, max_retries=0)
    assert _wait_for_no_workers() == []


def test_leaving_a_stream_early_stops_its_reader(hostile: HostileServer) -> None:
    with OpenAIChatModel(base_url=hostile.url("slow-events"), model="m", timeout=1.0) as model:
        stream = model.stream(Prompt("q"))
        assert next(stream).text == "la "
        stream.close()  # what a `break` out of a for loop does to the generator
        assert _wait_for_no_workers() == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, r"timeout must be a positive number of seconds, got 0"),
        ({"timeout": -1.0}, r"timeout must be a positive number of seconds, got -1\.0"),
        ({"timeout": True}, r"timeout must be a positive number of seconds, got True"),
        ({"stream_timeout": 0.0}, r"stream_timeout must be a positive number of seconds, got 0\.0"),
    ],
)
def test_deadlines_that_cannot_work_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        OpenAIChatModel(base_url="http://127.0.0.1:9/v1", **options)
    if "timeout" in options:
        with pytest.raises(InvalidRequestError, match=message):
            OpenAIEmbedding(base_url="http://127.0.0.1:9/v1", **options)


def test_headers_trickled_on_a_reused_connection_still_end_the_call_in_time(hostile: HostileServer) -> None:
    # Kept last in this module: the reading thread of this call lingers until the server closes (see
    # rag/deadline.py), which the worker checks above would otherwise see.
    with httpx.Client() as client:
        with OpenAIChatModel(base_url=hostile.url("ok"), model="m", client=client) as warm:
            assert warm.call(Prompt("q")).text == "fine"  # leaves a keep-alive connection in the pool
        url = hostile.url("drip-headers")
        with OpenAIChatModel(base_url=url, model="m", client=client, timeout=1.0, max_retries=0) as model:
            start = time.monotonic()
            with pytest.raises(ModelError, match=r"did not finish within its 1 s timeout"):
                model.call(Prompt("q"))
            assert time.monotonic() - start < 1.0 + 5.0  # the server never ends the headers
