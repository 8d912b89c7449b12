"""OpenAIEmbedding against a real loopback server speaking the /v1/embeddings protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from rag.embeddings import EmbeddingModel
from rag.embeddings.openai import OpenAIEmbedding
from rag.errors import EmbeddingError, InvalidRequestError
from rag.http import RetryPolicy
from tests.openai_server import OpenAIServer, RecordedRequest, Reply

KEY = "sk-embed-5ecret"


def vector_for(text: str) -> list[float]:
    """A recognisable vector: its direction encodes the text's length and first letter."""
    return [float(len(text)), float(ord(text[0])), 1.0]


def embeddings_reply(request: RecordedRequest) -> Reply:
    """Answers any batch, listing the items in reverse order so the client must sort by index."""
    inputs = request.json["input"]
    data = [{"object": "embedding", "index": i, "embedding": vector_for(t)} for i, t in enumerate(inputs)]
    return Reply(json={"object": "list", "data": data[::-1], "model": request.json["model"]})


def expected(texts: list[str]) -> np.ndarray[Any, Any]:
    rows = np.array([vector_for(t) for t in texts], dtype=np.float64)
    normalised: np.ndarray[Any, Any] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def embedder(openai_server: OpenAIServer, sleeps: list[float]) -> Iterator[OpenAIEmbedding]:
    policy = RetryPolicy(max_retries=2, sleep=sleeps.append)
    with OpenAIEmbedding(
        base_url=openai_server.base_url, api_key=KEY, batch_size=2, timeout=2.0, retry_policy=policy
    ) as model:
        yield model


def test_batches_in_order_and_normalised(openai_server: OpenAIServer, embedder: OpenAIEmbedding) -> None:
    openai_server.default = embeddings_reply
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = embedder.embed(texts)
    assert isinstance(embedder, EmbeddingModel)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)
    assert [r.json["input"] for r in openai_server.requests] == [
        ["alpha", "beta"],
        ["gamma", "delta"],
        ["epsilon"],
    ]
    request = openai_server.requests[0]
    assert (request.path, request.headers["authorization"]) == ("/v1/embeddings", f"Bearer {KEY}")
    assert request.json == {
        "model": "text-embedding-3-small",
        "input": ["alpha", "beta"],
        "encoding_format": "float",
    }
    assert (embedder.dimensions, embedder.name) == (3, "openai:text-embedding-3-small")


def test_blank_texts_get_zero_rows_and_are_not_sent(
    openai_server: OpenAIServer, embedder: OpenAIEmbedding
) -> None:
    openai_server.default = embeddings_reply
    vectors = embedder.embed(["", "real", "   "])
    assert vectors.shape == (3, 3)
    assert not vectors[0].any() and not vectors[2].any()
    np.testing.assert_allclose(vectors[1], expected(["real"])[0], rtol=1e-6)
    assert [r.json["input"] for r in openai_server.requests] == [["real"]]


def test_dimensions_probe_on_first_access(openai_server: OpenAIServer, embedder: OpenAIEmbedding) -> None:
    openai_server.default = embeddings_reply
    assert embedder.dimensions == 3
    assert embedder.dimensions == 3
    assert len(openai_server.requests) == 1
    assert embedder.embed([]).shape == (0, 3)
    assert len(openai_server.requests) == 1


def test_given_dimensions_are_sent_named_and_checked(openai_server: OpenAIServer) -> None:
    openai_server.default = embeddings_reply
    with OpenAIEmbedding("text-embedding-3-large", base_url=openai_server.base_url, dimensions=4) as model:
        assert (model.name, model.dimensions) == ("openai:text-embedding-3-large@4", 4)
        assert openai_server.requests == []
        with pytest.raises(EmbeddingError, match="returned vectors of length 3, expected 4"):
            model.embed(["text"])
    assert openai_server.requests[0].json["dimensions"] == 4


def test_429_then_success(
    openai_server: OpenAIServer, embedder: OpenAIEmbedding, sleeps: list[float]
) -> None:
    openai_server.enqueue(Reply(status=429, headers={"Retry-After": "1"}), embeddings_reply)
    assert embedder.embed(["one"]).shape == (1, 3)
    assert sleeps == [1.0]
    assert len(openai_server.requests) == 2


def test_400_is_an_embedding_error_with_status_and_body(
    openai_server: OpenAIServer, embedder: OpenAIEmbedding
) -> None:
    error = {"error": {"message": "'$.input' is invalid", "type": "invalid_request_error"}}
    openai_server.enqueue(Reply(status=400, json=error))
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    assert info.value.status_code == 400
    assert info.value.body is not None and "invalid_request_error" in info.value.body
    assert "failed with HTTP 400 Bad Request: '$.input' is invalid" in str(info.value)
    assert "'text-embedding-3-small'" in str(info.value)
    assert len(openai_server.requests) == 1


def test_server_errors_exhaust_retries(
    openai_server: OpenAIServer, embedder: OpenAIEmbedding, sleeps: list[float]
) -> None:
    openai_server.default = Reply(status=502, body=b"bad gateway")
    with pytest.raises(EmbeddingError, match="HTTP 502 Bad Gateway after 3 attempts: bad gateway") as info:
        embedder.embed(["x"])
    assert info.value.status_code == 502
    assert len(sleeps) == 2


def test_timeout_is_an_embedding_error(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(delay=5.0, json={}))
    with (
        OpenAIEmbedding(base_url=openai_server.base_url, timeout=0.1, max_retries=0) as model,
        pytest.raises(EmbeddingError, match=r"timed out \(ReadTimeout\)"),
    ):
        model.embed(["x"])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"index": 0, "embedding": [1.0, 0.0]}], r"returned 1 vectors with indexes \[0\] for 2 inputs"),
        (
            [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}],
            r"indexes \[0, 0\] for 2 inputs",
        ),
        ([{"index": 0, "embedding": [float("nan")]}, {"index": 1, "embedding": [1.0]}], "non-finite"),
        ([{"index": 0}], "unexpected reply"),
    ],
)
def test_unusable_replies(
    openai_server: OpenAIServer, embedder: OpenAIEmbedding, data: Any, message: str
) -> None:
    openai_server.enqueue(Reply(json={"data": data}))
    with pytest.raises(EmbeddingError, match=message):
        embedder.embed(["a", "b"])


def test_key_never_shows(openai_server: OpenAIServer, embedder: OpenAIEmbedding) -> None:
    openai_server.enqueue(Reply(status=401, json={"error": {"message": f"bad key {KEY}"}}))
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    for text in (str(info.value), info.value.body or "", repr(embedder)):
        assert KEY not in text
    assert "bad key ***" in str(info.value)


def test_environment_settings(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    openai_server.default = embeddings_reply
    with OpenAIEmbedding("nomic-embed-text") as model:
        model.embed(["x"])
    assert openai_server.requests[0].headers["authorization"] == "Bearer env-key"
    assert openai_server.requests[0].json["model"] == "nomic-embed-text"


def test_injected_client_stays_open() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [3.0, 4.0]}]})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        model = OpenAIEmbedding(base_url="http://mock/v1", client=client)
        np.testing.assert_allclose(model.embed(["x"]), [[0.6, 0.8]], rtol=1e-6)
        model.close()
        assert not client.is_closed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"dimensions": 0}, "dimensions must be"), ({"batch_size": 0}, "batch_size must be")],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        OpenAIEmbedding(base_url="http://127.0.0.1:9/v1", **kwargs)


def test_a_single_string_is_rejected(embedder: OpenAIEmbedding) -> None:
    with pytest.raises(InvalidRequestError, match="single string 'oops'"):
        embedder.embed("oops")
