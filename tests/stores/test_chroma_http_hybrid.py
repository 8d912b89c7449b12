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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore
from tests.stores.chroma_server_helpers import Hooked, other_url, state_after
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


def _answer(store: ChromaVectorStore, request: SearchRequest) -> list[tuple[str, float | None]]:
    return [(d.id, d.score) for d in store.similarity_search(request)]


@pytest.mark.server
def test_a_hybrid_search_over_http_takes_one_round_of_requests(chroma_server: str, rounds_of: Any) -> None:
    # First three in a row: the vector query, the state-token check (reading the collection), and the
    # read of the final documents. Then two: the token check ran while the vector query did. Now one:
    # the sidecar the token check vouches for keeps the records, so the final page needs no read.
    # (Answers are not compared across time: the server may compact its HNSW index between two
    # queries, and HNSW is approximate; tests/stores/test_chroma_conformance.py pins exact answers.)
    request = SearchRequest("delta item17", top_k=5, mode="hybrid")
    with ChromaVectorStore(MODEL, url=chroma_server, collection="http-rounds", ef_search=50) as store:
        store.add(_docs())
        store.similarity_search(request)  # builds the lexical index
        counter = rounds_of(store)
        found = store.similarity_search(request)
    stored = {doc.id: doc for doc in _docs()}
    assert len(found) == 5 and found[0].id == "d0017"
    assert all((d.text, d.metadata) == (stored[d.id].text, stored[d.id].metadata) for d in found)
    assert sorted(counter.requests) == ["GET http-rounds", "POST query"]
    assert counter.rounds == 1


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
        with ChromaVectorStore(MODEL, url=other_url(chroma_server), collection=name) as second:
            second.add([Document("new", "omega quasar", {"n": -1})])
            seen = _answer(first, request)
            # First in the lexical ranking (1/61) and in the vector one (1/(60 + rank)). With a stale
            # BM25 index it would have the vector share alone, 1/61 at most.
            assert seen[0][0] == "new" and (seen[0][1] or 0.0) > 1 / 61
            second.delete(["new"])
            gone = _answer(first, request)
        assert "new" not in [doc_id for doc_id, _ in gone] and len(gone) == 5


QUERY = SearchRequest("omega quasar", top_k=5, mode="hybrid")
# Three states of one collection: S0 when the searching store built its sidecar, S1 after another
# store's write that leaves that sidecar stale, S2 after another write during the search.
S0 = [
    Document("victim", "omega quasar victim", {"n": -1}),
    Document("updated", "omega quasar before", {"n": -2}),
    Document("stale", "alpha beta", {"n": -3}),
]
S1 = [Document("stale", "omega quasar stale no more", {"n": -30})]
S2 = [Document("updated", "omega quasar after", {"n": -20}), Document("new", "omega quasar", {"n": -4})]


def _write_s2(store: ChromaVectorStore) -> None:
    store.delete(["victim"])
    store.add(S2)


def _once_checked(checked: threading.Event, store: ChromaVectorStore) -> Callable[[], None]:
    """Writes S2 through `store` once the searching store has read the state token."""

    def write() -> None:
        assert checked.wait(30), "the state token was never read"
        _write_s2(store)

    return write


@contextmanager
def _racing(chroma_server: str, name: str) -> Iterator[tuple[ChromaVectorStore, ChromaVectorStore]]:
    """A store whose sidecar holds S0, and another store (as from another process) that wrote S1."""
    with ChromaVectorStore(MODEL, url=chroma_server, collection=name, ef_search=50) as store:
        store.add([*_docs(), *S0])
        assert {d.id for d in store.similarity_search(QUERY)[:2]} == {"victim", "updated"}
        with ChromaVectorStore(MODEL, url=other_url(chroma_server), collection=name) as other:
            other.add(S1)
            yield store, other


@pytest.mark.server
def test_a_write_after_the_token_check_gives_either_state_never_a_stale_text(chroma_server: str) -> None:
    # The other store deletes, replaces and adds documents after this search has read the state
    # token (its sidecar then holds S1) and before its vector query (which sees S2). Every document
    # of the answer is as S1 or S2 has it; none as S0 had it; the new one, which the sidecar does not
    # hold, is read from Chroma.
    with _racing(chroma_server, "http-race-after-check") as (store, other):
        checked = threading.Event()
        client, nearest = store._conn.client, store._nearest.collection
        store._conn.client = Hooked(client, "get_collection", after=checked.set)
        spy = Hooked(nearest, "query", before=_once_checked(checked, other))
        store._nearest.collection = spy
        rebuilds = store._lexical.rebuilds
        try:
            found = store.similarity_search(QUERY)
        finally:
            store._conn.client, store._nearest.collection = client, nearest
        assert spy.fired and store._lexical.rebuilds == rebuilds + 1
        after = {d.id: (d.text, d.metadata) for d in store.get()}
    before, now = state_after(_docs(), S0, S1), state_after(_docs(), S0, S1, S2, deleted=("victim",))
    assert len(found) == 5 and "new" in [d.id for d in found]
    for doc in found:
        assert (doc.text, doc.metadata) in (before.get(doc.id), now.get(doc.id)), doc
    assert after["new"] == (S2[1].text, S2[1].metadata) and "victim" not in after


@pytest.mark.server
def test_a_write_before_the_token_check_is_seen_whole(chroma_server: str) -> None:
    with _racing(chroma_server, "http-race-before-check") as (store, other):
        client = store._conn.client
        spy = Hooked(client, "get_collection", before=lambda: _write_s2(other))
        store._conn.client = spy
        try:
            found = store.similarity_search(QUERY)
        finally:
            store._conn.client = client
        assert spy.fired
    latest = state_after(_docs(), S0, S1, S2, deleted=("victim",))
    assert len(found) == 5 and "victim" not in [d.id for d in found]
    assert {"new", "updated", "stale"} <= {d.id for d in found}
    assert all((d.text, d.metadata) == latest[d.id] for d in found)


@pytest.mark.server
def test_a_document_written_and_deleted_during_a_hybrid_search_is_left_out(chroma_server: str) -> None:
    # "new" is written after the token check, so the sidecar does not hold it, and deleted just
    # before its text is read: the search ranks again from fresh reads, without failing.
    with _racing(chroma_server, "http-race-deleted") as (store, other):
        checked = threading.Event()
        client, nearest, collection = store._conn.client, store._nearest.collection, store._collection
        store._conn.client = Hooked(client, "get_collection", after=checked.set)
        store._nearest.collection = Hooked(nearest, "query", before=_once_checked(checked, other))
        reads = Hooked(collection, "get", before=lambda: other.delete(["new"]), only="new")
        store._collection = reads
        try:
            found = store.similarity_search(QUERY)
        finally:
            store._conn.client, store._nearest.collection, store._collection = client, nearest, collection
        assert reads.fired
        ids = [d.id for d in found]
        assert len(ids) == 5 and "new" not in ids
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


@pytest.mark.parametrize(("threshold", "held"), [(0.0, True), (0.05, False)])
def test_a_document_deleted_by_raw_chromadb_is_left_out_of_hybrid_answers_once_reopened(
    tmp_path: Path, threshold: float, held: bool
) -> None:
    # Raw chromadb calls leave the state token alone, so the sidecar still holds the document, its
    # record included (as a server store's does, docs/concurrency.md): a search never fails for it
    # (before issue 17 every hybrid search that ranked it did), and the document stays in answers as
    # it was, unless its vector must be read (a threshold on a lexical-only candidate). The count
    # differs on the next open, which rebuilds the sidecar.
    request = SearchRequest("delta item17", top_k=50, mode="hybrid", similarity_threshold=threshold)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(60))
        assert store.similarity_search(request)[0].id == "d0017"
        store.chroma_collection.delete(ids=["d0017"])
        found = {d.id: d.text for d in store.similarity_search(request)}
        assert ("d0017" in found) == held and found.get(
            "d0017", "beta delta code item17"
        ) == "beta delta code item17"
        assert set(found) - {"d0017"} <= {d.id for d in store.get()}
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        found = {d.id: d.text for d in store.similarity_search(request)}
        assert found and "d0017" not in found and store._lexical.rebuilds == 1
        assert set(found) <= {d.id for d in store.get()}
