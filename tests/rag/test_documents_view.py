"""`DocumentsView`: the store as the commands and `rag serve` read it (documents only, each text once)."""

from __future__ import annotations

import asyncio
import doctest

import pytest

import rag.retrieval.documents_view
from rag import Document, HashingEmbedding, SearchRequest
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.client import ChatClient
from rag.filters import key
from rag.filters.tree import operands
from rag.retrieval import DocumentsView
from rag.retrieval.documents_view import documents_filter
from rag.retrieval.scope import MEMORY_MARKER
from rag.testing import FakeChatModel
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore

QUESTION = "Where is the spare beacon lamp kept?"
LAMP = "The spare beacon lamp is kept in the oil store under the north tower."


@pytest.fixture
def store() -> NumpyVectorStore:
    """Two copies of a page, another page, and one remembered conversation turn (two documents)."""
    store = NumpyVectorStore(HashingEmbedding())
    store.add(
        [
            Document("a", LAMP, {"source": "lamp.md"}),
            Document("b", LAMP.upper(), {"source": "old/lamp.md"}),
            Document("c", "The beacon lamp burns whale oil.", {"source": "oil.md"}),
        ]
    )
    client = ChatClient(FakeChatModel(default=LAMP), advisors=[VectorStoreChatMemoryAdvisor(store)])
    client.prompt(QUESTION).advisors(conversation_id="c1").call().content()
    assert store.count(MEMORY_MARKER) == 2
    return store


def test_searches_skip_memory_turns_and_copies(store: NumpyVectorStore) -> None:
    hits = DocumentsView(store).similarity_search(SearchRequest(QUESTION, top_k=10))
    assert [h.id for h in hits] == ["a", "c"]
    kept = DocumentsView(store, distinct=False).similarity_search(SearchRequest(QUESTION, top_k=10))
    assert sorted(h.id for h in kept) == ["a", "b", "c"]
    assert len(store.similarity_search(SearchRequest(QUESTION, top_k=10))) == 5  # the store itself


def test_a_request_filter_cannot_bring_a_turn_back(store: NumpyVectorStore) -> None:
    view = DocumentsView(store, distinct=False)
    for text in ("conversation_id == 'c1'", "NOT (source == 'lamp.md')", "'rag:kind' == 'chat_memory'"):
        hits = view.similarity_search(SearchRequest(QUESTION, top_k=10, filter=text))
        assert [h for h in hits if "rag:kind" in h.metadata] == [], text


def test_get_and_count_see_documents_only_and_writes_pass_through(store: NumpyVectorStore) -> None:
    view = DocumentsView(store)
    assert view.count() == 3 and store.count() == 5
    assert [d.id for d in view.get()] == ["a", "b", "c"]
    assert view.get(filter="source == 'oil.md'")[0].id == "c"
    view.add([Document("d", "Fog signals are logged.", {"source": "fog.md"})])
    assert view.delete(["d"]) == 1 and store.count() == 5
    assert view.embedding is store.embedding and view.kind == "numpy"


def test_the_memory_clause_is_added_once(store: NumpyVectorStore) -> None:
    """A QuestionAnswerAdvisor already excludes memory: reading through the view does not repeat it."""
    recording = RecordingStore(store)
    client = ChatClient(
        FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(DocumentsView(recording))]
    )
    client.prompt(QUESTION).call().content()
    clauses = operands(recording.requests[0].filter)  # type: ignore[arg-type]
    assert [part for part in clauses if part == ~MEMORY_MARKER] == [~MEMORY_MARKER]
    assert documents_filter(key("a") == 1) == (key("a") == 1) & ~MEMORY_MARKER


def test_the_async_search_gives_the_sync_hits(store: NumpyVectorStore) -> None:
    for distinct in (True, False):
        view = DocumentsView(store, distinct=distinct)
        request = SearchRequest(QUESTION, top_k=2)
        assert asyncio.run(view.asimilarity_search(request)) == view.similarity_search(request)
    assert asyncio.run(DocumentsView(store).asimilarity_search(SearchRequest(QUESTION, top_k=0))) == []


def test_turns_written_before_the_marker_are_not_recognised(store: NumpyVectorStore) -> None:
    """The documented limit: an unmarked turn is a document like any other."""
    store.add([Document("old-turn", QUESTION, {"conversation_id": "c0", "message_type": "user"})])
    hits = DocumentsView(store).similarity_search(SearchRequest(QUESTION, top_k=1))
    assert [h.id for h in hits] == ["old-turn"]


def test_docstring_examples_run() -> None:
    result = doctest.testmod(rag.retrieval.documents_view, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
