"""`rag serve` limits and failures, on the app under a real uvicorn: body size, rate limit, upstream errors,
and a disconnecting client cancelling the upstream request."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.http import RetryPolicy
from rag.models import ExtractiveChatModel, OpenAIChatModel
from rag.serve import RagService, ServeConfig, create_app
from stores import NumpyVectorStore
from tests.e2e.serve_helpers import ThreadServer
from tests.openai_server import OpenAIServer, Reply
from tests.rag.slow_stream_server import SlowStreamServer

MESSAGES = [{"role": "user", "content": "When is the beacon lit?"}]


def _store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    return store


@pytest.fixture
def limited() -> Iterator[ThreadServer]:
    service = RagService(_store(), ExtractiveChatModel(), SearchRequest("defaults"))
    server = ThreadServer(create_app(service, ServeConfig(max_body_bytes=600, rate_limit=3)))
    yield server
    server.stop()


def test_a_body_over_the_limit_is_refused_with_413(limited: ThreadServer) -> None:
    big = [{"role": "user", "content": "x" * 1000}]
    response = httpx.post(f"{limited.base}/v1/chat/completions", json={"model": "rag", "messages": big})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"

    def chunked() -> Iterator[bytes]:  # no Content-Length: the reader counts as it goes
        yield b'{"query": "'
        yield b"y" * 1000
        yield b'"}'

    streamed = httpx.post(f"{limited.base}/v1/search", content=chunked())
    assert streamed.status_code == 413


def test_the_rate_limit_answers_429_with_retry_after(limited: ThreadServer) -> None:
    import openai

    with openai.OpenAI(base_url=f"{limited.base}/v1", api_key="k", max_retries=0) as client:
        for _ in range(3):
            client.models.list()
        with pytest.raises(openai.RateLimitError) as caught:
            client.models.list()
    assert caught.value.status_code == 429
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert caught.value.code == "rate_limit_exceeded"


def test_an_unknown_route_and_a_wrong_method_answer_in_openai_shape(limited: ThreadServer) -> None:
    missing = httpx.get(f"{limited.base}/v1/nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = httpx.get(f"{limited.base}/v1/chat/completions")
    assert wrong.status_code == 405 and set(wrong.json()["error"]) == {"message", "type", "param", "code"}


def test_a_failing_upstream_model_is_a_502_without_its_key(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(status=401, json={"error": {"message": "bad key sk-upstream-secret"}}))
    model = OpenAIChatModel(
        base_url=openai_server.base_url, api_key="sk-upstream-secret", retry_policy=RetryPolicy(max_retries=0)
    )
    server = ThreadServer(create_app(RagService(_store(), model, SearchRequest("defaults"))))
    try:
        response = httpx.post(
            f"{server.base}/v1/chat/completions", json={"model": "rag", "messages": MESSAGES}
        )
    finally:
        server.stop()
        model.close()
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_error" and "HTTP 401" in error["message"]
    assert "sk-upstream-secret" not in response.text


@pytest.mark.parametrize("stream", [True, False])
def test_a_client_disconnecting_cancels_the_upstream_request(stream: bool) -> None:
    upstream = SlowStreamServer()
    model = OpenAIChatModel(base_url=upstream.base_url, api_key="k", model="slow")
    server = ThreadServer(create_app(RagService(_store(), model, SearchRequest("defaults"))))
    body = {"model": "rag", "messages": MESSAGES, "stream": stream}
    try:
        if stream:
            with httpx.stream("POST", f"{server.base}/v1/chat/completions", json=body) as response:
                lines = response.iter_lines()
                assert next(line for line in lines if "w0" in line)
        else:
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(
                    f"{server.base}/v1/chat/completions", json=body, timeout=httpx.Timeout(5, read=0.5)
                )
        assert upstream.opened.is_set()
        assert upstream.closed.wait(5), "the upstream request outlived its client"
        assert not upstream.finished.is_set()
    finally:
        server.stop()
        upstream.close()
        model.close()


def test_a_client_leaving_before_the_first_token_cancels_the_upstream_request() -> None:
    upstream = SlowStreamServer(head_delay=10.0)
    model = OpenAIChatModel(base_url=upstream.base_url, api_key="k", model="slow")
    server = ThreadServer(create_app(RagService(_store(), model, SearchRequest("defaults"))))
    body = {"model": "rag", "messages": MESSAGES, "stream": True}
    try:
        with pytest.raises(httpx.ReadTimeout):
            timeout = httpx.Timeout(5, read=0.5)
            httpx.post(f"{server.base}/v1/chat/completions", json=body, timeout=timeout)
        assert upstream.opened.is_set()
        assert upstream.closed.wait(5), "the upstream request outlived its client"
    finally:
        server.stop()
        upstream.close()
        model.close()
