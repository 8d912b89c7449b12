"""The retriever, joiners, post-processors and augmenter of modular RAG, on real stores."""

from __future__ import annotations

import doctest
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rag.retrieval.augmenter
import rag.retrieval.expansion
import rag.retrieval.follow_up
import rag.retrieval.joiners
import rag.retrieval.postprocessors
import rag.retrieval.retriever
import rag.retrieval.stages
import rag.retrieval.transformers
from rag import Document, HashingEmbedding, SearchRequest
from rag.advisors import QuestionAnswerAdvisor, VectorStoreChatMemoryAdvisor
from rag.client import ChatClient
from rag.errors import FilterSyntaxError, InvalidRequestError, TemplateError
from rag.filters import key
from rag.params import ParamSet
from rag.retrieval import (
    ConcatenationDocumentJoiner,
    ContextualQueryAugmenter,
    DocumentJoiner,
    DocumentPostProcessor,
    DocumentRetriever,
    MaximalMarginalRelevance,
    MaxPerSource,
    NearDuplicateFilter,
    Query,
    QueryAugmenter,
    ReciprocalRankDocumentJoiner,
    VectorStoreDocumentRetriever,
    mmr,
    reciprocal_rank_fusion,
)
from rag.testing import FakeChatModel
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore

DOCUMENTS = [
    Document(
        "en-beacon", "The beacon lamp is lit at dusk by the keeper.", {"source": "beacon.md", "lang": "en"}
    ),
    Document(
        "en-tides", "Spring tides flood the causeway twice a month.", {"source": "tides.md", "lang": "en"}
    ),
    Document(
        "fr-beacon", "Le phare beacon lamp est allumé au crépuscule.", {"source": "phare.md", "lang": "fr"}
    ),
    Document("en-keeper", "The keeper trims the beacon lamp wick.", {"source": "beacon.md", "lang": "en"}),
]


@pytest.fixture(params=["numpy", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    embedding = HashingEmbedding()
    if request.param == "numpy":
        yield NumpyVectorStore(embedding)
        return
    chroma = ChromaVectorStore(embedding, path=tmp_path / "chroma")
    yield chroma
    chroma.close()


def _ids(documents: list[Document]) -> list[str]:
    return [d.id for d in documents]


def _remember(store: VectorStore) -> set[str]:
    """A conversation about the beacon lamp, written by the real memory advisor; the turns' ids."""
    memory = VectorStoreChatMemoryAdvisor(store, top_k=4)
    client = ChatClient(FakeChatModel(default="The beacon lamp is lit at dusk."), advisors=[memory])
    client.prompt("When is the beacon lamp lit?").advisors(conversation_id="alice").call().content()
    return {d.id for d in store.get() if d.metadata.get("conversation_id") == "alice"}


def test_retriever_searches_like_the_store_in_every_mode(store: VectorStore) -> None:
    store.add(DOCUMENTS)
    for mode in ("vector", "lexical", "hybrid"):
        retriever = VectorStoreDocumentRetriever(store, top_k=3, mode=mode)
        expected = store.similarity_search(SearchRequest("beacon lamp", top_k=3, mode=mode))
        found = retriever.retrieve(Query("beacon lamp"))
        assert isinstance(retriever, DocumentRetriever)
        assert [(d.id, d.score) for d in found] == [(d.id, d.score) for d in expected]
    strict = VectorStoreDocumentRetriever(store, top_k=4, similarity_threshold=0.99)
    assert strict.retrieve(Query("beacon lamp")) == []


def _with_filter(text: str) -> Query:
    return Query("beacon lamp", params=ParamSet([VectorStoreDocumentRetriever.Params(filter=text)]))


def test_retriever_filters_request_filter_scope_and_memory(store: VectorStore) -> None:
    store.add(DOCUMENTS)
    remembered = _remember(store)
    assert remembered
    retriever = VectorStoreDocumentRetriever(store, top_k=10, filter="lang == 'en'")
    assert set(_ids(retriever.retrieve(Query("beacon lamp")))) == {"en-beacon", "en-tides", "en-keeper"}
    # A request filter (the retriever's Params, as `.advisors(...)` passes them) replaces the default one ...
    french = _with_filter("lang == 'fr'")
    assert _ids(retriever.retrieve(french)) == ["fr-beacon"]
    # ... but no filter brings chat memory back, and the scope is never widened.
    for widening in ("conversation_id == 'alice'", "'rag:kind' == 'chat_memory' OR lang IS NOT NULL"):
        found = retriever.retrieve(_with_filter(widening))
        assert not set(_ids(found)) & remembered
    scoped = VectorStoreDocumentRetriever(store, top_k=10, scope=key("source") == "beacon.md")
    wide = _with_filter("source != 'beacon.md' OR lang == 'en'")
    assert set(_ids(scoped.retrieve(wide))) == {"en-beacon", "en-keeper"}
    # The filter is the QuestionAnswerAdvisor's, built by the same function.
    qa = QuestionAnswerAdvisor(store, scope=key("source") == "beacon.md")
    assert scoped.search_request_for(wide).filter == qa.effective_filter(
        "source != 'beacon.md' OR lang == 'en'"
    )


def test_retriever_rejects_bad_filters_and_settings() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    with pytest.raises(FilterSyntaxError):
        VectorStoreDocumentRetriever(store, filter="lang = 'en'")
    with pytest.raises(InvalidRequestError, match="top_k"):
        VectorStoreDocumentRetriever(store, top_k=-1)
    with pytest.raises(FilterSyntaxError):
        VectorStoreDocumentRetriever.Params(filter="a ==")


def _doc(doc_id: str, score: float | None, text: str | None = None, **metadata: str) -> Document:
    return Document(doc_id, text or f"text of {doc_id}", dict(metadata), score=score)


def test_concatenation_keeps_each_id_once_with_its_best_score() -> None:
    rankings = [
        [_doc("a", 0.5), _doc("b", 0.9), _doc("c", None)],
        [_doc("a", 0.8), _doc("d", 0.5), _doc("c", 0.1)],
        [],
    ]
    joiner = ConcatenationDocumentJoiner()
    joined = joiner.join(rankings)
    assert isinstance(joiner, DocumentJoiner)
    assert [(d.id, d.score) for d in joined] == [("b", 0.9), ("a", 0.8), ("d", 0.5), ("c", 0.1)]
    assert _ids(ConcatenationDocumentJoiner(top_k=2).join(rankings)) == ["b", "a"]
    # Equal scores keep the order of first appearance.
    assert _ids(joiner.join([[_doc("z", 0.5)], [_doc("y", 0.5)]])) == ["z", "y"]
    with pytest.raises(InvalidRequestError, match="top_k"):
        ConcatenationDocumentJoiner(top_k=-1)


def test_reciprocal_rank_joiner_matches_rrf() -> None:
    rankings = [[_doc("a", 3.0), _doc("b", 2.0)], [_doc("b", 0.9), _doc("c", 0.8)], [_doc("c", 0.1)]]
    joined = ReciprocalRankDocumentJoiner(k=10).join(rankings)
    expected = reciprocal_rank_fusion([["a", "b"], ["b", "c"], ["c"]], k=10)
    assert [(d.id, d.score) for d in joined] == expected
    assert joined[0].text == "text of " + expected[0][0]
    assert len(ReciprocalRankDocumentJoiner(top_k=1).join(rankings)) == 1
    with pytest.raises(InvalidRequestError, match="k must be"):
        ReciprocalRankDocumentJoiner(k=0)


def test_near_duplicate_filter_drops_later_copies_only() -> None:
    docs = [
        _doc("1", 0.9, "How to add CORS middleware to an app."),
        _doc("2", 0.8, "how to add  CORS middleware to an app"),
        _doc("3", 0.7, "How to add CORS middleware to an application server."),
        _doc("4", 0.6, "Declare a path parameter with braces."),
        _doc("5", 0.5, "..."),
        _doc("6", 0.4, "!!!"),
    ]
    processor = NearDuplicateFilter()
    assert isinstance(processor, DocumentPostProcessor)
    assert _ids(processor.process(Query("cors"), docs)) == ["1", "3", "4", "5"]
    # A lower threshold counts looser paraphrases as duplicates too.
    assert _ids(NearDuplicateFilter(0.5).process(Query("cors"), docs)) == ["1", "4", "5"]
    with pytest.raises(InvalidRequestError, match="threshold"):
        NearDuplicateFilter(1.5)


def test_max_per_source_caps_each_source_in_order() -> None:
    docs = [
        _doc("1", 0.9, source="a.md"),
        _doc("2", 0.8, source="a.md"),
        _doc("3", 0.7, source="b.md"),
        _doc("4", 0.6, source="a.md"),
        _doc("5", 0.5),
        _doc("6", 0.4),
        _doc("7", 0.3, path="x", source="b.md"),
    ]
    assert _ids(MaxPerSource(1).process(Query("q"), docs)) == ["1", "3", "5", "6"]
    assert _ids(MaxPerSource(2).process(Query("q"), docs)) == ["1", "2", "3", "5", "6", "7"]
    assert _ids(MaxPerSource(1, key="path").process(Query("q"), docs)) == ["1", "2", "3", "4", "5", "6", "7"]
    with pytest.raises(InvalidRequestError, match="limit"):
        MaxPerSource(0)


def test_mmr_post_processor_is_the_mmr_function_over_the_given_order() -> None:
    embedding = HashingEmbedding()
    texts = ["beacon lamp lit", "beacon lamp lit at dusk", "tides flood the causeway", "keeper trims wick"]
    docs = [
        _doc(str(i), score, text)
        for i, (score, text) in enumerate(zip([0.9, 0.8, 0.5, 0.4], texts, strict=True))
    ]
    processor = MaximalMarginalRelevance(embedding, diversity=0.7, top_k=3)
    expected = mmr(None, embedding.embed(texts), [0.9, 0.8, 0.5, 0.4], 3, 0.7)
    assert _ids(processor.process(Query("beacon"), docs)) == [str(i) for i in expected]
    assert expected[:2] == [0, 2]  # the near-copy of the first is pushed down
    # Stored embeddings are used when every document has one; scores missing means rank order.
    with_vectors = [
        d.with_embedding(np.eye(4, dtype=np.float32)[i]).with_score(None) for i, d in enumerate(docs)
    ]
    assert _ids(MaximalMarginalRelevance(embedding, 1.0).process(Query("q"), with_vectors)) == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert MaximalMarginalRelevance(embedding, 0.0).process(Query("q"), docs) == docs
    assert MaximalMarginalRelevance(embedding).process(Query("q"), []) == []


def test_augmenter_renders_documents_and_follows_the_empty_context_policy() -> None:
    docs = [
        _doc("a", 0.9, "At dusk.", source="beacon.md"),
        _doc("b", 0.5, "Twice a month.", source="tides.md"),
    ]
    augmenter = ContextualQueryAugmenter()
    query = Query("When is the beacon lit?", context={"k": 1})
    out = augmenter.augment(query, docs)
    assert isinstance(augmenter, QueryAugmenter)
    assert "[1] (source: beacon.md)\nAt dusk.\n\n[2] (source: tides.md)\nTwice a month." in out.text
    assert out.text.endswith("Question: When is the beacon lit?") and "don't know" in out.text
    assert out.context == {"k": 1}
    refused = augmenter.augment(query, [])
    assert "cannot answer it from the documents" in refused.text and "When is the beacon lit?" in refused.text
    assert ContextualQueryAugmenter(allow_empty_context=True).augment(query, []) == query
    custom = ContextualQueryAugmenter("Q={query} C={context}", document_formatter=lambda n, d: f"<{d.id}>")
    assert custom.augment(query, docs).text == "Q=When is the beacon lit? C=<a>\n\n<b>"
    with pytest.raises(TemplateError, match="context"):
        ContextualQueryAugmenter("Only {query}")
    with pytest.raises(TemplateError, match="query"):
        ContextualQueryAugmenter(empty_template="Nothing found.")


def test_query_needs_text() -> None:
    with pytest.raises(InvalidRequestError, match="query text"):
        Query("  ")


@pytest.mark.parametrize(
    "module",
    [
        rag.retrieval.augmenter,
        rag.retrieval.expansion,
        rag.retrieval.follow_up,
        rag.retrieval.joiners,
        rag.retrieval.postprocessors,
        rag.retrieval.retriever,
        rag.retrieval.stages,
        rag.retrieval.transformers,
    ],
)
def test_docstring_examples_run(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0
