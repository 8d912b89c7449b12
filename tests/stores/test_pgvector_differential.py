"""Randomized differential test: PgVectorStore answers exactly as the numpy store (the reference).

The same random documents, filter trees and requests as `test_differential.py` (every operator, quoted
and dotted keys, mixed number types, every search mode, both fusions, MMR); both stores must return the
same ids in the same order, scores within 1e-9, for `get`, `count`, `delete` and `similarity_search`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import Document, SearchRequest
from rag.filters import Comparison, Filter, matches
from stores import NumpyVectorStore, PgVectorStore
from stores.testing.strategies import filter_trees
from tests.stores.test_differential import (
    MODEL,
    STRESS_MODEL,
    _assert_same,
    _request,
    _stress_docs,
    _stress_requests,
    corpora,
    searches,
)

# Numbers beyond 2**53 and floats that are not short decimals: exact comparison across int and float.
_BIG = (2**60, 2**60 + 1, float(2**60), 0.1, 0.30000000000000004, 1e300, -(2**70), 5e-324)
_NUMBER_KEYS = ("n",)


@pytest.fixture(scope="module")
def pg(postgres_server_url: str) -> Iterator[PgVectorStore]:
    """One table for every example; each example empties it by ids first."""
    with PgVectorStore(MODEL, url=postgres_server_url, table="differential") as store:
        yield store


def _reset(store: PgVectorStore, docs: list[Document]) -> None:
    previous = [doc.id for doc in store.get()]
    if previous:
        store.delete(previous)
    store.add(docs)


@settings(max_examples=60, deadline=None)
@given(
    docs=corpora(),
    trees=st.lists(filter_trees(), min_size=1, max_size=4),
    search=searches,
    limit=st.none() | st.integers(0, 5),
)
def test_pgvector_agrees_with_numpy(
    pg: PgVectorStore, docs: list[Document], trees: list[Filter], search: dict[str, Any], limit: int | None
) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    _reset(pg, docs)
    assert [doc.metadata for doc in pg.get()] == [doc.metadata for doc in reference.get()]
    for tree in trees:
        expected_ids = sorted(doc.id for doc in docs if matches(tree, doc.metadata))
        assert [doc.id for doc in pg.get(filter=tree)] == expected_ids
        assert [doc.id for doc in pg.get(filter=tree, limit=limit)] == expected_ids[:limit]
        assert pg.count(tree) == reference.count(tree) == len(expected_ids)
        request = _request(search, tree)
        _assert_same(pg.similarity_search(request), reference.similarity_search(request))
    unfiltered = _request(search, None)
    _assert_same(pg.similarity_search(unfiltered), reference.similarity_search(unfiltered))


@settings(max_examples=20, deadline=None)
@given(docs=corpora(), tree=filter_trees())
def test_delete_by_filter_agrees_with_numpy(pg: PgVectorStore, docs: list[Document], tree: Filter) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    _reset(pg, docs)
    assert pg.delete(filter=tree) == reference.delete(filter=tree)
    assert [doc.id for doc in pg.get()] == [doc.id for doc in reference.get()]
    # The BM25 statistics follow deletes: lexical scores equal the reference's after them.
    request = _request({**_LEXICAL, "query": "alpha beta"}, None)
    _assert_same(pg.similarity_search(request), reference.similarity_search(request))


_LEXICAL: dict[str, Any] = {
    "top_k": 14,
    "threshold": 0.0,
    "mode": "lexical",
    "fusion": "rrf",
    "vector_weight": 0.5,
    "rrf_k": 60,
    "diversity": 0.0,
}

_big_values = (
    st.sampled_from(_BIG) | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(_big_values, min_size=1, max_size=8),
    probe=_big_values,
    op=st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
)
def test_numbers_compare_exactly_across_int_and_float(
    pg: PgVectorStore, values: list[int | float], probe: int | float, op: str
) -> None:
    docs = [
        Document(f"n{i}", "x", {"n": value + 0 if isinstance(value, int) else value + 0.0})
        for i, value in enumerate(values)
    ]
    _reset(pg, docs)
    tree = Comparison("n", op, probe)
    expected = sorted(doc.id for doc in docs if matches(tree, doc.metadata))
    assert [doc.id for doc in pg.get(filter=tree)] == expected
    assert [doc.metadata for doc in pg.get()] == [doc.metadata for doc in sorted(docs, key=lambda d: d.id)]


@pytest.mark.parametrize("approximate", [False])
def test_zero_and_repeated_vectors_after_upserts_and_deletes(
    postgres_server_url: str, fresh_name: Callable[[str], str], approximate: bool
) -> None:
    rng = random.Random(7)
    ids = [f"d{index:03d}" for index in range(190)]
    reference = NumpyVectorStore(STRESS_MODEL)
    table = fresh_name("stress")
    with PgVectorStore(STRESS_MODEL, url=postgres_server_url, table=table, approximate=approximate) as pg:
        for batch in (ids[:120], ids[60:190], rng.sample(ids, 70)):
            docs = _stress_docs(rng, batch)
            reference.add(docs)
            pg.add(docs)
            gone = rng.sample(ids, 12)
            assert pg.delete(gone) == reference.delete(gone)
        assert pg.count() == reference.count()
        for request in _stress_requests(rng):
            _assert_same(pg.similarity_search(request), reference.similarity_search(request))


def test_lexical_scores_agree_over_documents_in_several_languages(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    # A query word's idf counts every language's documents (a stop word: all of the language that
    # drops it); French "les" and "des" are English words, German "die" too.
    docs = [
        Document("fr-1", "Supprimer les fichiers du compte.", {"lang": "fr"}),
        Document("fr-2", "Lister les fichiers des groupes.", {"lang": "fr"}),
        Document("fr-3", "Copier les fichiers du compte.", {"lang": "fr"}),
        Document("en-1", "Files: fichiers du compte, Des Moines and the les paul.", {"lang": "en"}),
        Document("en-2", "Prints the houses and the die of the groupes.", {"lang": "en"}),
        Document("de-1", "Die Häuser am Fluss und die Dateien.", {"lang": "de"}),
        Document("und-1", "fichiers 42", {"lang": "und"}),
    ]
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("languages")) as pg:
        pg.add(docs)
        queries = ("supprimer les fichiers du compte", "die Häuser", "les", "fichiers groupes", "the houses")
        for query in queries:
            request = SearchRequest(query, 10, mode="lexical")
            expected = reference.similarity_search(request)
            assert expected, query
            _assert_same(pg.similarity_search(request), expected)
