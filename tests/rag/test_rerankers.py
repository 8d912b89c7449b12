"""Rerankers: a tiny untrained cross-encoder built in a temp folder, and `/rerank` over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag import Document, HashingEmbedding, RetrievalAugmentationAdvisor
from rag.client import ChatClient
from rag.errors import ConfigError, InvalidRequestError, ModelError
from rag.http import RetryPolicy
from rag.retrieval import (
    CrossEncoderReranker,
    DocumentPostProcessor,
    HttpReranker,
    Query,
    VectorStoreDocumentRetriever,
)
from rag.testing import FakeChatModel
from stores import NumpyVectorStore
from tests.openai_server import OpenAIServer, Reply
from tests.rag.tiny_cross_encoder import build_tiny_cross_encoder

KEY = "sk-rerank-secret-123"
DOCS = [
    Document("cat", "the cat sat on the mat", {"source": "a.md"}),
    Document("dog", "the dog found a bird in the tree", {"source": "b.md"}),
    Document("store", "chroma keeps vectors on disk", {"source": "c.md"}),
    Document("gene", "a gene study of blood cells", {"source": "d.md"}),
    Document("sun", "the sun and the moon in the sky", {"source": "e.md"}),
]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


def _oracle(folder: Path, query: str, texts: list[str]) -> list[float]:
    """The scores sentence-transformers itself gives, loaded independently of the reranker."""
    from sentence_transformers import CrossEncoder

    return [float(s) for s in CrossEncoder(str(folder), device="cpu").predict([(query, t) for t in texts])]


def test_cross_encoder_orders_by_the_models_own_scores(cross_encoder_dir: Path) -> None:
    reranker = CrossEncoderReranker(cross_encoder_dir)
    query = Query("a cat on the mat")
    reranked = reranker.process(query, DOCS)
    scores = _oracle(cross_encoder_dir, query.text, [d.text for d in DOCS])
    expected = sorted(range(len(DOCS)), key=lambda i: -scores[i])
    assert isinstance(reranker, DocumentPostProcessor)
    assert [d.id for d in reranked] == [DOCS[i].id for i in expected]
    assert [d.score for d in reranked] == pytest.approx([scores[i] for i in expected], abs=1e-6)
    assert len(set(scores)) == len(scores)  # distinct scores: the order above is not an accident of ties
    assert reranked[0].metadata == DOCS[expected[0]].metadata
    top = CrossEncoderReranker(str(cross_encoder_dir), top_n=2, batch_size=2).process(query, DOCS)
    assert [d.id for d in top] == [d.id for d in reranked[:2]]
    assert reranker.process(query, []) == []


def test_cross_encoder_inside_the_advisor(cross_encoder_dir: Path) -> None:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(DOCS)
    reranker = CrossEncoderReranker(cross_encoder_dir, top_n=3)
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreDocumentRetriever(store, top_k=5), post_processors=[reranker]
    )
    response = ChatClient(FakeChatModel(default="ok"), advisors=[advisor]).prompt("the cat").call().response()
    found = response.documents
    retrieved = store.similarity_search("the cat")[:5]
    assert [d.id for d in found] == [d.id for d in reranker.process(Query("the cat"), retrieved)]


def test_cross_encoder_errors_name_the_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        CrossEncoderReranker(tmp_path / "missing")
    with pytest.raises(InvalidRequestError, match="top_n"):
        CrossEncoderReranker("some/model", top_n=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="could not be loaded"):
        CrossEncoderReranker(tmp_path / "empty").process(Query("q"), DOCS)


@pytest.fixture
def reranker(openai_server: OpenAIServer) -> Iterator[HttpReranker]:
    with HttpReranker(
        "tiny-rerank", base_url=openai_server.base_url, api_key=KEY, top_n=3, retry_policy=RetryPolicy(0)
    ) as reranker:
        yield reranker


def _results(*pairs: tuple[int, float]) -> Reply:
    return Reply(json={"results": [{"index": i, "relevance_score": s} for i, s in pairs]})


def test_http_reranker_sends_the_request_and_reorders(
    openai_server: OpenAIServer, reranker: HttpReranker
) -> None:
    openai_server.enqueue(_results((3, 0.91), (0, 0.5), (4, 0.5)))
    reranked = reranker.process(Query("blood cells"), DOCS)
    assert [(d.id, d.score) for d in reranked] == [("gene", 0.91), ("cat", 0.5), ("sun", 0.5)]
    [request] = openai_server.requests
    assert request.path == "/v1/rerank"
    assert request.json == {
        "model": "tiny-rerank",
        "query": "blood cells",
        "documents": [d.text for d in DOCS],
        "top_n": 3,
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert reranker.process(Query("x"), []) == []  # nothing to rerank: no request
    assert len(openai_server.requests) == 1


def test_http_reranker_keeps_top_n_when_the_server_returns_all(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(_results(*[(i, float(i)) for i in range(5)]))
    with HttpReranker("m", base_url=openai_server.base_url, top_n=2) as reranker:
        assert [d.id for d in reranker.process(Query("q"), DOCS)] == ["sun", "gene"]
    assert "authorization" not in openai_server.requests[0].headers
    assert "top_n" in openai_server.requests[0].json


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(json={"data": []}), "unexpected reply"),
        (Reply(json={"results": [{"index": 9, "relevance_score": 1.0}]}), "index 9"),
        (
            Reply(json={"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]}),
            "index 0",
        ),
        (Reply(json={"results": [{"index": True, "relevance_score": 1.0}]}), "index True"),
        (Reply(json={"results": [{"index": 1, "relevance_score": "high"}]}), "'high'"),
        (Reply(body=b"<html>oops</html>", headers={"Content-Type": "text/html"}), "not JSON"),
        (Reply(status=401, json={"error": {"message": f"invalid key {KEY}"}}), "HTTP 401"),
    ],
)
def test_http_reranker_errors_never_show_the_key(
    openai_server: OpenAIServer, reranker: HttpReranker, reply: Reply, message: str
) -> None:
    openai_server.enqueue(reply)
    with pytest.raises(ModelError, match=message) as caught:
        reranker.process(Query("q"), DOCS)
    assert KEY not in str(caught.value) and KEY not in (caught.value.body or "")
    assert KEY not in repr(reranker)


def test_http_reranker_retries_then_fails_clearly(openai_server: OpenAIServer) -> None:
    waits: list[float] = []
    openai_server.enqueue(Reply(status=503), _results((1, 0.3)))
    policy = RetryPolicy(max_retries=1, sleep=waits.append)
    with HttpReranker("m", base_url=openai_server.base_url, api_key=KEY, retry_policy=policy) as reranker:
        assert [d.id for d in reranker.process(Query("q"), DOCS)] == ["dog"]
    assert len(waits) == 1
    closed = httpx.Client()
    closed.close()
    with pytest.raises(ModelError, match="closed"):
        HttpReranker("m", base_url=openai_server.base_url, client=closed).process(Query("q"), DOCS)


def test_http_reranker_rejects_bad_settings() -> None:
    with pytest.raises(InvalidRequestError, match="base_url"):
        HttpReranker("m", base_url="localhost:8080")
    with pytest.raises(InvalidRequestError, match="model"):
        HttpReranker("", base_url="http://127.0.0.1:1")
    with pytest.raises(InvalidRequestError, match="top_n"):
        HttpReranker("m", base_url="http://127.0.0.1:1", top_n=-2)
