"""Hybrid search, mostly against a real Chroma server: how many round trips follow one another, and what a
write by another store (as from another process) does to an answer, before it and during it.

Round trips are counted on the HTTP client's own event hooks (httpx runs them in the sending thread
just before a request goes out and when its response arrives): a round begins when a request starts
while none is in flight. To make overlap independent of thread scheduling, a request that starts
alone waits (up to `GRACE` seconds) for a second one to start; sequential code pays that wait and
still counts one round per request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore
from tests.stores.test_chroma_calls import Calls

MODEL = HashingEmbedding(dimensions=32)
GRACE = 1.0
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def _docs(count: int = 600) -> list[Document]:
    return [
        Document(f"d{i:04d}", f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} code item{i}", {"n": i})
        for i in range(count)
    ]


def _describe(request: httpx.Request) -> str:
    """`METHOD last-path-segment`, and ` where` for a read of the records a `where` clause matches."""
    text = f"{request.method} {request.url.path.rsplit('/', 1)[-1]}"
    body = json.loads(request.content) if request.content else {}
    return text + " where" if body.get("where") and not body.get("ids") else text


class _Rounds:
    """Counts rounds of requests on one httpx client (see the module docstring)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.in_flight = 0
        self.rounds = 0
        self.requests: list[str] = []

    def request(self, request: httpx.Request) -> None:
        with self._changed:
            if self.in_flight == 0:
                self.rounds += 1
            self.in_flight += 1
            self.requests.append(_describe(request))
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.in_flight > 1, timeout=GRACE)

    def response(self, response: httpx.Response) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()


@pytest.fixture
def rounds_of(chroma_server: str) -> Iterator[Any]:
    """Installs a `_Rounds` on a store's HTTP client; removes it after the test (clients are shared)."""
    installed: list[tuple[httpx.Client, _Rounds]] = []

    def install(store: ChromaVectorStore) -> _Rounds:
        session: httpx.Client = store.chroma_client._server._session
        counter = _Rounds()
        session.event_hooks["request"].append(counter.request)
        session.event_hooks["response"].append(counter.response)
        installed.append((session, counter))
        return counter

    yield install
    for session, counter in installed:
        session.event_hooks["request"].remove(counter.request)
        session.event_hooks["response"].remove(counter.response)


def _other_url(url: str) -> str:
    """The same server under another host name: chromadb then gives it a client system (and HTTP pool)
    of its own, and the store its own lock, as in another process."""
    return url.replace("127.0.0.1", "localhost")


def _answer(store: ChromaVectorStore, request: SearchRequest) -> list[tuple[str, float | None]]:
    return [(d.id, d.score) for d in store.similarity_search(request)]


@pytest.mark.server
def test_a_hybrid_search_over_http_takes_two_rounds_of_requests(chroma_server: str, rounds_of: Any) -> None:
    # Before: three in a row, the vector query, the state-token check (reading the collection), and
    # the read of the final documents. The token check now runs while the vector query does.
    # (Answers are not compared across time: the server may compact its HNSW index between two
    # queries, and HNSW is approximate; tests/stores/test_chroma_conformance.py pins exact answers.)
    request = SearchRequest("delta item17", top_k=5, mode="hybrid")
    with ChromaVectorStore(MODEL, url=chroma_server, collection="http-rounds", ef_search=50) as store:
        store.add(_docs())
        store.similarity_search(request)  # builds the lexical index
        counter = rounds_of(store)
        found = store.similarity_search(request)
    texts = {doc.id: doc.text for doc in _docs()}
    assert len(found) == 5 and all(d.text == texts[d.id] for d in found)
    assert sorted(counter.requests) == ["GET http-rounds", "POST get", "POST query"]
    assert counter.rounds == 2


@pytest.mark.server
def test_a_hybrid_search_with_a_threshold_checks_the_state_token_once(
    chroma_server: str, rounds_of: Any
) -> None:
    # The threshold makes the ranking look deeper into the lexical list (100, then 400 candidates);
    # before, each look read the collection's metadata to check the state token again.
    request = SearchRequest("code", top_k=5, mode="hybrid", similarity_threshold=0.3)
    with ChromaVectorStore(MODEL, url=chroma_server, collection="http-token-once", ef_search=50) as store:
        store.add(_docs())
        assert len(_answer(store, request)) == 5
        counter = rounds_of(store)
        assert len(_answer(store, request)) == 5
    assert counter.requests.count("GET http-token-once") == 1, counter.requests


@pytest.mark.server
def test_a_filtered_hybrid_search_with_a_threshold_reads_the_filter_matches_once(
    chroma_server: str, rounds_of: Any
) -> None:
    # Before, each look into the lexical list evaluated the filter in Chroma again.
    request = SearchRequest("code", top_k=5, mode="hybrid", filter="n < 500", similarity_threshold=0.3)
    with ChromaVectorStore(
        MODEL, url=chroma_server, collection="http-where-once", ef_search=50, exact_copy=False
    ) as store:
        store.add(_docs())
        assert len(_answer(store, request)) == 5
        counter = rounds_of(store)
        assert len(_answer(store, request)) == 5
    # The filter columns beside the collection answer the filter (stores/chroma/columns.py), so Chroma's
    # `where` is not evaluated at all, and the state token that keeps them current is read once.
    assert counter.requests.count("POST get where") == 0, counter.requests
    assert counter.requests.count("GET http-where-once") == 1, counter.requests


@pytest.mark.server
def test_a_write_by_another_store_is_seen_by_the_next_hybrid_search(chroma_server: str) -> None:
    request = SearchRequest("omega quasar", top_k=5, mode="hybrid")
    name = "http-second-writer"
    with ChromaVectorStore(MODEL, url=chroma_server, collection=name, ef_search=50) as first:
        first.add(_docs())
        assert "new" not in [d.id for d in first.similarity_search(request)]
        with ChromaVectorStore(MODEL, url=_other_url(chroma_server), collection=name) as second:
            second.add([Document("new", "omega quasar", {"n": -1})])
            seen = _answer(first, request)
            # First in the lexical ranking (1/61) and in the vector one (1/(60 + rank)). With a stale
            # BM25 index it would have the vector share alone, 1/61 at most.
            assert seen[0][0] == "new" and (seen[0][1] or 0.0) > 1 / 61
            second.delete(["new"])
            gone = _answer(first, request)
        assert "new" not in [doc_id for doc_id, _ in gone] and len(gone) == 5


class _DeletesBeforeFinalRead:
    """Wraps a collection; the first read of rows by id lets another store delete `victim` first."""

    def __init__(self, collection: Any, other: ChromaVectorStore, victim: str) -> None:
        self._collection = collection
        self._other = other
        self._victim = victim
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        if not self.fired and self._victim in (kwargs.get("ids") or []):
            self.fired = True
            self._other.delete([self._victim])
        return self._collection.get(*args, **kwargs)


@pytest.mark.server
def test_a_document_deleted_during_a_hybrid_search_is_left_out_without_failing(chroma_server: str) -> None:
    # Before: the final read missed the deleted document and the search failed with a StoreError.
    request = SearchRequest("delta item17", top_k=5, mode="hybrid")
    name = "http-deleted-meanwhile"
    with ChromaVectorStore(MODEL, url=chroma_server, collection=name, ef_search=50) as store:
        store.add(_docs())
        victim = store.similarity_search(request)[0].id  # "d0017", unless HNSW missed it
        with ChromaVectorStore(MODEL, url=_other_url(chroma_server), collection=name) as other:
            spy = _DeletesBeforeFinalRead(store._collection, other, victim)
            store._collection = spy
            found = store.similarity_search(request)
            store._collection = spy._collection
        assert spy.fired
        ids = [d.id for d in found]
        assert len(ids) == 5 and victim not in ids
        assert [d.id for d in store.get(ids=ids)] == ids  # every one still stored


def test_a_hybrid_search_keeps_the_rows_an_exact_scan_read(tmp_path: Path) -> None:
    # A small collection is scanned whole, texts and metadata included; before, the final documents
    # were read from Chroma a second time.
    request = SearchRequest("delta item17", top_k=5, mode="hybrid")
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(60))
        first = [(d.id, d.score, d.text, d.metadata) for d in store.similarity_search(request)]
        spy = Calls(store._collection)
        store._collection = store._nearest.collection = spy
        again = [(d.id, d.score, d.text, d.metadata) for d in store.similarity_search(request)]
    assert again == first and first[0][0] == "d0017"
    # The size check, then the scan; no read of the final documents.
    assert spy.calls == [("count", ()), ("get", ("embeddings", "metadatas", "documents"))]


@pytest.mark.parametrize("threshold", [0.0, 0.05])
def test_a_document_deleted_by_raw_chromadb_is_left_out_of_hybrid_answers(
    tmp_path: Path, threshold: float
) -> None:
    # Raw chromadb calls leave the state token alone, so the BM25 index still holds the document;
    # before, every hybrid search that ranked it failed with a StoreError until the store was reopened.
    request = SearchRequest("delta item17", top_k=50, mode="hybrid", similarity_threshold=threshold)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(60))
        assert store.similarity_search(request)[0].id == "d0017"
        store.chroma_collection.delete(ids=["d0017"])
        found = store.similarity_search(request)
        assert found and "d0017" not in [d.id for d in found]
        assert {d.id for d in found} <= {d.id for d in store.get()}
