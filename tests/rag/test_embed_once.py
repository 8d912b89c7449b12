"""The question is embedded once per request: follow-up searches share one embedding call, requests
carry their query vector, and an OpenAI-compatible embedder that knows its width asks nothing to learn it."""

from __future__ import annotations

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.client import ChatClient
from rag.embeddings.openai import OpenAIEmbedding
from rag.errors import EmbeddingError, InvalidRequestError
from rag.memory import MessageWindowChatMemory
from rag.models import ExtractiveChatModel
from rag.retrieval import ConversationQueryExpander
from rag.testing import FakeEmbedding
from stores import NumpyVectorStore
from tests.openai_server import OpenAIServer, RecordedRequest, Reply

PAGES = {
    "install": "Your package manager has valgrind: apt install valgrind.",
    "usage": "Start your program under valgrind: valgrind --leak-check=yes ./myprog. It runs slowly.",
    "tests": "Run the test suite with make check. To run one test only, run make check TEST=name.",
}


@pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
def test_a_follow_up_embeds_its_queries_in_one_call(mode: str) -> None:
    model = FakeEmbedding(dimensions=16)
    store = NumpyVectorStore(model)
    store.add([Document(name, text) for name, text in PAGES.items()])
    retrieval = QuestionAnswerAdvisor(store, top_k=2, mode=mode, expander=ConversationQueryExpander())
    client = ChatClient(
        ExtractiveChatModel(), advisors=[MessageChatMemoryAdvisor(MessageWindowChatMemory()), retrieval]
    )
    client.prompt("How do I install valgrind?").advisors(conversation_id="c1").call().content()
    model.calls.clear()
    response = client.prompt("And how do I run it?").advisors(conversation_id="c1").call().response()
    assert response.documents
    # The follow-up alone and joined to the question before: both searches and the fusion share them.
    assert model.calls == [["And how do I run it?", "How do I install valgrind?\nAnd how do I run it?"]]


def test_a_query_vector_is_checked_and_follows_its_query() -> None:
    request = SearchRequest("pumps", query_vector=[0.6, 0.8])
    assert request.query_vector is not None and request.query_vector.tolist() == pytest.approx([0.6, 0.8])
    assert request.replace(top_k=2).query_vector.tolist() == request.query_vector.tolist()
    assert request.replace(query="valves").query_vector is None  # the vector of another text
    assert request == SearchRequest("pumps") and "query_vector" not in repr(request)
    assert request.with_query_vector(None).query_vector is None
    for bad in ([], [[1.0]], [np.nan], "text"):
        with pytest.raises(InvalidRequestError, match="query_vector"):
            SearchRequest("pumps", query_vector=bad)  # type: ignore[arg-type]


def test_embeds_query_only_when_the_search_needs_the_vector() -> None:
    assert SearchRequest("q").embeds_query and SearchRequest("q", mode="hybrid").embeds_query
    assert not SearchRequest("q", mode="lexical").embeds_query
    assert not SearchRequest("q", mode="lexical", diversity=0.5).embeds_query  # MMR compares stored vectors
    assert SearchRequest("q", mode="lexical", similarity_threshold=0.2).embeds_query


def test_named_scores_are_checked() -> None:
    doc = Document("a", "text", score=2.0, scores={"bm25": 2, "cosine": 0.5})
    assert dict(doc.scores) == {"bm25": 2.0, "cosine": 0.5}
    assert doc == Document("a", "text", score=2.0) and doc.with_score(1.0).scores == doc.scores
    with pytest.raises(InvalidRequestError, match="score name 'rerank' of document 'a'"):
        Document("a", "text", scores={"rerank": 1.0})
    with pytest.raises(InvalidRequestError, match="score 'cosine' of document 'a' must be a finite number"):
        doc.with_scores({"cosine": float("nan")})


def _embeddings(request: RecordedRequest) -> Reply:
    vectors = FakeEmbedding(dimensions=8).embed(request.json["input"]).tolist()
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return Reply(json={"object": "list", "data": data})


def test_known_dimensions_spare_the_probe(openai_server: OpenAIServer) -> None:
    openai_server.default = _embeddings
    with OpenAIEmbedding("m", base_url=openai_server.base_url, api_key="sk-x", known_dimensions=8) as model:
        assert model.dimensions == 8 and model.name == "openai:m"
        assert openai_server.requests == []
        assert model.embed(["one"]).shape == (1, 8)
        assert [r.json for r in openai_server.requests] == [
            {"model": "m", "input": ["one"], "encoding_format": "float"}  # no `dimensions` sent
        ]
    other = OpenAIEmbedding("m", base_url=openai_server.base_url, api_key="sk-x", known_dimensions=4)
    with other, pytest.raises(EmbeddingError, match="returned vectors of length 8, expected 4"):
        other.embed(["one"])
    with pytest.raises(InvalidRequestError, match="known_dimensions must be a positive integer"):
        OpenAIEmbedding("m", known_dimensions=0)
    with pytest.raises(InvalidRequestError, match="disagree"):
        OpenAIEmbedding("m", dimensions=8, known_dimensions=4)


def test_retrieval_and_long_term_memory_share_the_question_vector() -> None:
    from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor

    model = FakeEmbedding(dimensions=16)
    documents, memory = NumpyVectorStore(model), NumpyVectorStore(model)
    documents.add([Document(name, text) for name, text in PAGES.items()])
    advisors = [
        MessageChatMemoryAdvisor(MessageWindowChatMemory()),
        VectorStoreChatMemoryAdvisor(memory, top_k=2),
        QuestionAnswerAdvisor(documents, top_k=2, mode="hybrid", expander=ConversationQueryExpander()),
    ]
    client = ChatClient(ExtractiveChatModel(), advisors=advisors)
    first = client.prompt("How do I install valgrind?").advisors(conversation_id="c1").call().response()
    assert first.documents and memory.count() == 2  # the turn was remembered
    model.calls.clear()
    second = client.prompt("And how do I run it?").advisors(conversation_id="c1").call().response()
    # Each query text embedded once: the question (recall, retrieval and the memory write share it),
    # the follow-up joined to the question before; then the answer, written to memory.
    queries = [text for batch in model.calls[:-1] for text in batch]
    assert sorted(queries) == sorted(
        ["And how do I run it?", "How do I install valgrind?\nAnd how do I run it?"]
    )
    assert model.calls[-1] == [second.text]


def test_the_retrieval_docs_example_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "retrieval.md").read_text(encoding="utf-8")
    section = text.split("## Every hit names its scores", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/retrieval.md", "exec"), {})  # its asserts are the check
