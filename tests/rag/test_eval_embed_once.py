"""`evaluate` embeds each question once per run through a `QueryEmbeddingCache`; lexical mode embeds none."""

from __future__ import annotations

from collections import Counter

from rag.documents import Document
from rag.eval import QueryEmbeddingCache, evaluate, parse_questions
from rag.testing import FakeEmbedding
from stores import NumpyVectorStore

DOCS = [
    Document("1", "the pump primes itself before dawn", {"source": "pump.md", "kind": "a"}),
    Document("2", "valves open at dawn and close at dusk", {"source": "valves.md", "kind": "b"}),
    Document("3", "the tank fills from the river", {"source": "tank.md", "kind": "a"}),
]
QUESTIONS = parse_questions(
    [
        '{"question": "when do valves open", "relevant": [{"source": "valves.md"}]}',
        '{"question": "how does the pump prime", "relevant": [{"source": "pump.md"}]}',
    ]
)


def _store() -> tuple[NumpyVectorStore, FakeEmbedding]:
    fake = FakeEmbedding(dimensions=8)
    store = NumpyVectorStore(QueryEmbeddingCache(fake))
    store.add(DOCS)
    fake.calls.clear()
    return store, fake


def test_each_question_is_embedded_once_whatever_the_modes_filters_and_thresholds() -> None:
    store, fake = _store()
    evaluate(
        store,
        QUESTIONS,
        top_k=[1, 3],
        thresholds=[0.0, 0.2],
        filters=[None, "kind == 'a'"],
        modes=["vector", "lexical", "hybrid"],
    )
    embedded = Counter(text for call in fake.calls for text in call)
    assert embedded == {"when do valves open": 1, "how does the pump prime": 1}


def test_lexical_mode_embeds_nothing() -> None:
    store, fake = _store()
    results = evaluate(store, QUESTIONS, top_k=[1], modes=["lexical"])
    assert fake.calls == []
    assert results.rows[0].metrics["recall"] == 1.0  # found by BM25 alone


def test_the_cache_changes_no_result() -> None:
    cached, _ = _store()
    plain = NumpyVectorStore(FakeEmbedding(dimensions=8))
    plain.add(DOCS)
    settings = {"top_k": [1, 2, 3], "thresholds": [0.0, 0.1], "modes": ["vector", "lexical", "hybrid"]}
    with_cache = evaluate(cached, QUESTIONS, **settings)  # type: ignore[arg-type]
    without = evaluate(plain, QUESTIONS, **settings)  # type: ignore[arg-type]
    assert [r.metrics for r in with_cache.rows] == [r.metrics for r in without.rows]
    assert [(d.mode, d.question, d.metrics) for d in with_cache.per_question] == [
        (d.mode, d.question, d.metrics) for d in without.per_question
    ]
