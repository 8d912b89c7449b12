"""A hit needs evidence: a positive cosine or a query term. Fusion never pads a page with documents
that have neither (hybrid gave them a fused score of 0 and listed them after the one real hit), and
what the commands read holds no vector hit at cosine 0."""

from __future__ import annotations

import asyncio

import pytest

from rag import Document, HashingEmbedding, SearchRequest
from rag.retrieval import DocumentsView
from stores import NumpyVectorStore

TEXTS = {
    "e214": "E-214: valve stuck open. Water kept flowing after the daemon closed a valve.",
    "port": "The TCP port of the Canopy dashboard and of the REST API.",
    "frost": "Three member sites lost young plants on one night.",
    "copyright": "This document has been placed in the public domain.",
}


@pytest.fixture
def store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document(doc_id, text, {"n": n}) for n, (doc_id, text) in enumerate(TEXTS.items())])
    return store


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
@pytest.mark.parametrize(
    "extra",
    [{}, {"similarity_threshold": 0.0001}, {"diversity": 0.3}, {"filter": "n >= 0"}],
    ids=["keyed", "threshold", "diversity", "filter"],
)
def test_hybrid_returns_only_hits_with_a_cosine_or_a_query_term(
    store: NumpyVectorStore, fusion: str, extra: dict[str, object]
) -> None:
    request = SearchRequest("E-214", top_k=4, mode="hybrid", fusion=fusion, **extra)  # type: ignore[arg-type]
    assert [d.id for d in store.similarity_search(request)] == ["e214"]


def test_a_query_sharing_nothing_finds_nothing_in_hybrid_and_lexical(store: NumpyVectorStore) -> None:
    for mode in ("hybrid", "lexical"):
        assert store.similarity_search(SearchRequest("zzzq xxyv", top_k=4, mode=mode)) == []


def test_hits_with_evidence_keep_their_fused_order(store: NumpyVectorStore) -> None:
    found = store.similarity_search(SearchRequest("valve port dashboard", top_k=4, mode="hybrid"))
    assert {d.id for d in found} == {"e214", "port"}


def test_what_the_commands_read_holds_no_vector_hit_at_cosine_zero(store: NumpyVectorStore) -> None:
    """The store's vector search returns its nearest documents whatever their cosine; the view the
    commands and `rag serve` read through keeps only those with a positive one."""
    request = SearchRequest("E-214 valve", top_k=4)
    assert len(store.similarity_search(request)) == 4
    for distinct in (True, False):
        found = DocumentsView(store, distinct=distinct).similarity_search(request)
        assert [d.id for d in found] == ["e214"]
    assert DocumentsView(store).similarity_search(request.replace(query="zzzq xxyv")) == []


def test_the_async_view_holds_no_vector_hit_at_cosine_zero(store: NumpyVectorStore) -> None:
    found = asyncio.run(DocumentsView(store).asimilarity_search(SearchRequest("E-214 valve", top_k=4)))
    assert [d.id for d in found] == ["e214"]
