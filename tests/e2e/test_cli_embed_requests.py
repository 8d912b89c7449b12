"""Embedding requests per command, counted by a loopback OpenAI-compatible server: `rag ask` and a
vector `rag query` send one, a lexical `rag query` none, whatever the store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from rag.testing import FakeEmbedding
from tests.openai_server import OpenAIServer, RecordedRequest, Reply, completion

RunCli = Callable[..., Result]
EMBEDDER = ("--embedder", "openai:test-embed")


@pytest.fixture
def embeddings_server(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """The loopback server: deterministic vectors for `/embeddings`, one answer for chat completions."""
    fake = FakeEmbedding(dimensions=16)

    def embeddings(request: RecordedRequest) -> Reply:
        if request.path.endswith("/chat/completions"):
            return Reply(json=completion("The keepers log them."))
        vectors = fake.embed(request.json["input"]).tolist()
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return Reply(json={"object": "list", "data": data, "model": request.json["model"]})

    openai_server.default = embeddings
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-embed")
    yield openai_server


def _embedded(server: OpenAIServer) -> list[list[str]]:
    """The inputs of each embeddings request since the last call, oldest first."""
    inputs = [r.json["input"] for r in server.requests if r.path.endswith("/embeddings")]
    server.requests.clear()
    return inputs


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_ask_embeds_once_and_lexical_query_never(
    cli: RunCli, docs: Path, embeddings_server: OpenAIServer, store: str
) -> None:
    options = ("--store", store)  # the embedder is the one the home recorded
    assert cli("ingest", docs, *options, *EMBEDDER).exit_code == 0
    _embedded(embeddings_server)

    asked = cli("ask", "who logs fog signals", *options, "--no-stream", "--json")
    assert asked.exit_code == 0, asked.stderr
    assert [r.path for r in embeddings_server.requests].count("/v1/chat/completions") == 1
    assert _embedded(embeddings_server) == [["who logs fog signals"]]
    sources = json.loads(asked.stdout)["sources"]
    assert sources and all(isinstance(row["cosine"], float) for row in sources)

    lexical = cli("query", "fog signals", *options, "--mode", "lexical", "--json")
    assert lexical.exit_code == 0, lexical.stderr
    assert _embedded(embeddings_server) == []
    hits = json.loads(lexical.stdout)
    assert hits and all(row["score_kind"] == "bm25" and row["cosine"] is None for row in hits)

    vector = cli("query", "fog signals", *options, "--mode", "vector", "--json")
    assert vector.exit_code == 0, vector.stderr
    assert _embedded(embeddings_server) == [["fog signals"]]
    assert all(row["cosine"] == row["score"] for row in json.loads(vector.stdout))


def test_lexical_query_with_a_threshold_embeds_once(
    cli: RunCli, docs: Path, embeddings_server: OpenAIServer
) -> None:
    """The threshold compares the cosine, so it needs the question's vector: one request, not two."""
    options = ("--store", "numpy")
    assert cli("ingest", docs, *options, *EMBEDDER).exit_code == 0
    _embedded(embeddings_server)
    found = cli("query", "fog signals", *options, "--mode", "lexical", "--threshold", "0.01", "--json")
    assert found.exit_code == 0, found.stderr
    assert _embedded(embeddings_server) == [["fog signals"]]
    assert all(row["cosine"] >= 0.01 for row in json.loads(found.stdout))


def test_serve_search_and_sources_carry_the_named_scores() -> None:
    import httpx

    from rag import Document, HashingEmbedding, SearchRequest
    from rag.models import ExtractiveChatModel
    from rag.serve import RagService, create_app
    from stores import NumpyVectorStore
    from tests.e2e.serve_helpers import ThreadServer

    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    server = ThreadServer(create_app(RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))))
    try:
        found = httpx.post(f"{server.base}/v1/search", json={"query": "beacon dusk", "mode": "hybrid"})
        lexical = httpx.post(f"{server.base}/v1/search", json={"query": "beacon", "mode": "lexical"})
        body = {"model": "rag", "messages": [{"role": "user", "content": "When is the beacon lit?"}]}
        answered = httpx.post(f"{server.base}/v1/chat/completions", json=body, timeout=60)
    finally:
        server.stop()
    [hit] = found.json()["data"]
    assert set(hit["scores"]) == {"fused", "cosine", "bm25"} and hit["scores"]["fused"] == hit["score"]
    [word] = lexical.json()["data"]
    assert word["scores"] == {"bm25": word["score"]}
    [source] = answered.json()["sources"]
    assert source["scores"]["cosine"] > 0


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_chat_embeds_the_question_once_for_retrieval_and_memory(
    cli: RunCli, docs: Path, embeddings_server: OpenAIServer, mode: str
) -> None:
    """Memory recall, retrieval and the memory write share the question's one vector; the reply is
    embedded once, for the memory write."""
    options = ("--store", "numpy", "--mode", mode)
    assert cli("ingest", docs, "--store", "numpy", *EMBEDDER).exit_code == 0
    _embedded(embeddings_server)
    chatted = cli("chat", *options, "--no-stream", input="who logs fog signals\n")
    assert chatted.exit_code == 0, chatted.stderr
    assert "The keepers log them." in chatted.stdout
    assert _embedded(embeddings_server) == [["who logs fog signals"], ["The keepers log them."]]
