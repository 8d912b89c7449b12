"""Randomized differential test: the Chroma store's filters answer exactly as the engine's (numpy).

Random documents (metadata from `metadata_dicts`, texts from a tiny vocabulary so scores tie often) and
random filter trees (`filter_trees`): `get` (with and without a limit), `count` and `delete` give the
same ids on both stores. Eligibility: a lexical search (the BM25 index and the filter, threshold and
MMR over the stored vectors, all exact) returns the same ids, order and scores; a vector or hybrid
search on Chroma's approximate HNSW index returns only eligible documents, with the engine's cosines.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.filters import Filter, matches
from stores import ChromaVectorStore, NumpyVectorStore
from stores.testing.strategies import KEYS, filter_trees, metadata_dicts

MODEL = HashingEmbedding(dimensions=32)
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon")
_ID_ALPHABET = "abAB09_-é"

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=3).map(" ".join)


# Keys Chroma refuses or reserves: the store keeps them out of Chroma's index and filters them in Python.
ODD_KEYS = ("$dollar", "#hash", "_rag_keys", "chroma:x", "year")


@st.composite
def corpora(draw: st.DrawFn, keys: tuple[str, ...] = KEYS) -> list[Document]:
    """Up to 12 documents with unique ids in no particular order."""
    ids = draw(st.lists(st.text(_ID_ALPHABET, min_size=1, max_size=3), max_size=12, unique=True))
    return [Document(doc_id, draw(texts), draw(metadata_dicts(keys))) for doc_id in ids]


searches: st.SearchStrategy[dict[str, Any]] = st.builds(
    dict,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    top_k=st.integers(0, 14),
    threshold=st.sampled_from([0.0, 0.0, 0.2, 0.5, 1.0]),
    mode=st.sampled_from(["vector", "lexical", "hybrid"]),
    fusion=st.sampled_from(["rrf", "weighted"]),
    vector_weight=st.sampled_from([0.0, 0.3, 1.0]),
    rrf_k=st.sampled_from([1, 60]),
    diversity=st.sampled_from([0.0, 0.0, 0.5, 1.0]),
)


def _request(search: dict[str, Any], tree: Filter | None) -> SearchRequest:
    options = {name: search[name] for name in ("mode", "fusion", "vector_weight", "rrf_k", "diversity")}
    return SearchRequest(search["query"], search["top_k"], search["threshold"], filter=tree, **options)


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaVectorStore]:
    """One embedded (in-process) store for every example; each example empties it by ids first."""
    with ChromaVectorStore(MODEL, collection="differential") as store:
        yield store


def _reset(store: ChromaVectorStore, docs: list[Document]) -> None:
    previous = [doc.id for doc in store.get()]
    if previous:
        store.delete(previous)
    store.add(docs)


def _hits(found: list[Document]) -> list[tuple[str, float | None]]:
    return [(doc.id, doc.score) for doc in found]


def _assert_same(found: list[Document], expected: list[Document]) -> None:
    """Same ids in the same order, scores within 1e-9."""
    assert [doc.id for doc in found] == [doc.id for doc in expected]
    assert [doc.score for doc in found] == pytest.approx([doc.score for doc in expected], abs=1e-9)


def _assert_eligible(chroma: ChromaVectorStore, reference: NumpyVectorStore, request: SearchRequest) -> None:
    """Lexical requests agree exactly; vector and hybrid ones return eligible documents only."""
    lexical = request.replace(mode="lexical")
    _assert_same(chroma.similarity_search(lexical), reference.similarity_search(lexical))
    eligible = {doc.id for doc in reference.get(filter=request.filter)}
    found = chroma.similarity_search(request)
    assert {doc.id for doc in found} <= eligible and len(found) <= request.top_k
    if request.mode == "vector" and request.diversity == 0:
        cosines = {d.id: d.score for d in reference.similarity_search(request.replace(top_k=len(eligible)))}
        assert [d.score for d in found] == pytest.approx([cosines[d.id] for d in found], abs=1e-5)


@settings(max_examples=60, deadline=None)
@given(
    docs=corpora(),
    trees=st.lists(filter_trees(), min_size=1, max_size=4),
    search=searches,
    limit=st.none() | st.integers(0, 5),
)
def test_chroma_agrees_with_numpy(
    chroma: ChromaVectorStore,
    docs: list[Document],
    trees: list[Filter],
    search: dict[str, Any],
    limit: int | None,
) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    _reset(chroma, docs)
    for tree in trees:
        expected_ids = sorted(doc.id for doc in docs if matches(tree, doc.metadata))
        assert [doc.id for doc in reference.get(filter=tree)] == expected_ids  # the oracle holds too
        assert [doc.id for doc in chroma.get(filter=tree)] == expected_ids
        assert [doc.id for doc in chroma.get(filter=tree, limit=limit)] == expected_ids[:limit]
        assert chroma.count(tree) == reference.count(tree) == len(expected_ids)
        _assert_eligible(chroma, reference, _request(search, tree))
    _assert_eligible(chroma, reference, _request(search, None))


@settings(max_examples=20, deadline=None)
@given(docs=corpora(), tree=filter_trees())
def test_delete_by_filter_agrees_with_numpy(
    chroma: ChromaVectorStore, docs: list[Document], tree: Filter
) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    _reset(chroma, docs)
    assert chroma.delete(filter=tree) == reference.delete(filter=tree)
    assert [doc.id for doc in chroma.get()] == [doc.id for doc in reference.get()]


@settings(max_examples=25, deadline=None)
@given(docs=corpora(ODD_KEYS), tree=filter_trees(ODD_KEYS), search=searches)
def test_keys_chroma_cannot_index_agree_with_numpy(
    chroma: ChromaVectorStore, docs: list[Document], tree: Filter, search: dict[str, Any]
) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    _reset(chroma, docs)
    assert [doc.id for doc in chroma.get(filter=tree)] == [doc.id for doc in reference.get(filter=tree)]
    assert [doc.metadata for doc in chroma.get()] == [doc.metadata for doc in reference.get()]
    _assert_eligible(chroma, reference, _request(search, tree))


# A vocabulary where "the", "of" and "and" are stopwords: texts made only of them, like empty texts, get
# the zero vector, and repeated texts give many records one identical vector (used by the PostgreSQL
# differential test).
STRESS_MODEL = HashingEmbedding(dimensions=256)
_STRESS_WORDS = ("river", "bank", "loan", "fish", "water", "money", "boat", "rate", "the", "of", "and")
_STRESS_TEXTS = ("", "", "the of", "and the", "river bank", "river bank", "money money loan")


def _stress_docs(rng: random.Random, ids: list[str]) -> list[Document]:
    docs = []
    for doc_id in ids:
        text = rng.choice(_STRESS_TEXTS) if rng.random() < 0.45 else " ".join(rng.choices(_STRESS_WORDS, k=3))
        docs.append(Document(doc_id, text, {"year": rng.randint(2000, 2003), "draft": rng.random() < 0.3}))
    return docs


def _stress_requests(rng: random.Random) -> Iterator[SearchRequest]:
    for _ in range(90):
        yield SearchRequest(
            " ".join(rng.choices(_STRESS_WORDS[:8], k=rng.randint(1, 2))),
            rng.choice([1, 5, 20, 60, 150, 250]),
            rng.choice([0.0, 0.0, 0.1]),
            filter=rng.choice([None, "year >= 2001", "draft == true", "year IN [2000, 2003]"]),
            mode=rng.choice(["vector", "vector", "lexical", "hybrid"]),
            fusion=rng.choice(["rrf", "weighted"]),
            diversity=rng.choice([0.0, 0.0, 0.5]),
        )
