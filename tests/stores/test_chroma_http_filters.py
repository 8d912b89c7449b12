"""Filtered vector searches on a real Chroma server: how many HTTP requests each makes, which path
(Chroma's `where` alone, or the filter columns checked by the state token) it takes, and what writes
by another store (as from another process) do to its answer.

Requests are recorded on the store's own HTTP client (httpx event hooks, run in the sending thread).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

import stores.chroma.nearest as nearest
import stores.chroma.reading as reading
from rag import Document, HashingEmbedding, SearchRequest
from rag.filters import matches, parse
from stores import ChromaVectorStore
from tests.stores.chroma_server_helpers import Requests, other_url, recording

MODEL = HashingEmbedding(dimensions=32)
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
SELECTIVE = "n < 60"  # 10% of `_docs()`
BROAD = "n < 570"  # 95%


def _docs(count: int = 600) -> list[Document]:
    return [
        Document(f"d{i:04d}", f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} code item{i}", {"n": i})
        for i in range(count)
    ]


@pytest.fixture
def requests_of() -> Iterator[Any]:
    """Records a store's HTTP requests (`recording`) until the end of the test."""
    with ExitStack() as stack:
        yield lambda store: stack.enter_context(recording(store))


@pytest.fixture(autouse=True)
def _columns_never_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rent or buy would build the columns of these small collections after a few filtered searches
    (their read costs little); each test here chooses when columns are held."""
    monkeypatch.setattr(reading, "COLUMNS_SECONDS_PER_RECORD", 1.0, raising=False)


def _store(url: str, name: str) -> ChromaVectorStore:
    return ChromaVectorStore(MODEL, url=url, collection=name, ef_search=50, exact_copy=False)


def _check(found: list[Document], text: str, top_k: int = 10) -> None:
    tree = parse(text)
    assert len(found) == top_k
    assert all(matches(tree, doc.metadata) for doc in found), [(d.id, d.metadata) for d in found]


@pytest.mark.server
def test_a_selective_filtered_search_is_one_request(chroma_server: str, requests_of: Any) -> None:
    # Before: the collection's metadata (opaque keys, state token), then the query: two requests, where
    # raw chromadb's `query(where=...)` makes one.
    request = SearchRequest("delta code", top_k=10, filter=SELECTIVE)
    with _store(chroma_server, "http-filter-one") as store:
        store.add(_docs())
        first = store.similarity_search(request)  # counts the collection once (large or not)
        recorder = requests_of(store)
        found = store.similarity_search(request)
        assert store._lexical.rebuilds == 0  # nothing read whole
    _check(found, SELECTIVE)
    assert [d.id for d in found] == [d.id for d in first]
    assert recorder.sent == ["POST query"]
    assert "ids" not in recorder.bodies[0] or recorder.bodies[0]["ids"] is None
    assert recorder.bodies[0]["where"]["$or"][0] == {"n": {"$lt": 60.0}}


@pytest.mark.server
def test_a_larger_collection_reads_the_metadata_and_sends_the_clause_alone(
    chroma_server: str, requests_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The widening's cost grows with the collection, the metadata read's does not: past
    # `GUARDED_RECORDS` records (here 100 instead of 30,000) the search reads the metadata first.
    monkeypatch.setattr(nearest, "GUARDED_RECORDS", 100)
    request = SearchRequest("delta code", top_k=10, filter=SELECTIVE)
    with _store(chroma_server, "http-filter-large") as store:
        store.add(_docs())
        store.similarity_search(request)
        recorder = requests_of(store)
        found = store.similarity_search(request)
    _check(found, SELECTIVE)
    assert recorder.sent == ["GET http-filter-large", "POST query"]
    assert recorder.bodies[1]["where"] == {"n": {"$lt": 60.0}}


@pytest.mark.server
@pytest.mark.parametrize(("text", "restricted"), [(SELECTIVE, True), (BROAD, False)])
def test_held_columns_decide_after_the_state_token_check(
    chroma_server: str, requests_of: Any, text: str, restricted: bool
) -> None:
    # Columns held (built here by a hybrid search) answer every share: the token check and a query
    # restricted to the ids they choose (0.75x the `where` at 10% of 10,000 records over HTTP), or
    # for a broad filter one unrestricted query for distances, filtered by them, whose page comes
    # from the records the sidecar keeps (test_chroma_http_broad.py). Chroma's `where` is never sent.
    request = SearchRequest("delta code", top_k=10, filter=text)
    with _store(chroma_server, f"http-filter-held-{restricted}".lower()) as store:
        store.add(_docs())
        store.similarity_search(SearchRequest("delta code", top_k=10, mode="hybrid"))
        store.similarity_search(request)
        recorder = requests_of(store)
        found = store.similarity_search(request)
    _check(found, text)
    assert recorder.sent == ["GET http-filter-held-" + str(restricted).lower(), "POST query"]
    assert all(body.get("where") is None for body in recorder.bodies)
    query = recorder.bodies[recorder.sent.index("POST query")]
    assert query.get("where") is None
    assert (query.get("ids") is not None) == restricted


@pytest.mark.server
def test_columns_made_stale_by_another_store_are_not_read_again_for_a_filter(
    chroma_server: str, requests_of: Any
) -> None:
    # Another store's write moves the state token on: the held columns are not used, nor rebuilt (a
    # full read); Chroma's `where` answers, and the new document is found.
    name = "http-filter-stale"
    request = SearchRequest("omega quasar", top_k=10, filter=SELECTIVE)
    with _store(chroma_server, name) as store:
        store.add(_docs())
        store.similarity_search(SearchRequest("omega", top_k=10, mode="hybrid"))
        assert "new" not in [d.id for d in store.similarity_search(request)]
        with _store(other_url(chroma_server), name) as other:
            other.add([Document("new", "omega quasar", {"n": 5})])
        recorder = requests_of(store)
        found = store.similarity_search(request)
        assert store._lexical.rebuilds == 1
    _check(found, SELECTIVE)
    assert found[0].id == "new"
    assert recorder.sent == [f"GET {name}", "POST query"]
    assert recorder.bodies[1].get("where") is not None


@pytest.mark.server
@pytest.mark.parametrize("value", [-(2**70), 2**70])
def test_a_key_another_store_made_opaque_needs_no_metadata_read(
    chroma_server: str, requests_of: Any, value: int
) -> None:
    # Another store writes an integer Chroma cannot index under `n`: Chroma does not see it as `n`, so
    # the filter compiled for the keys this store knew would miss it. The one request's clause also
    # selects records marked opaque for `n`; such a hit is checked in Python. One that matches
    # (-2**70 < 60) is kept; one that does not (2**70) sends the search down the usual path, which
    # reads the opaque keys afresh, so the answer still holds top_k matches and nothing else.
    name = f"http-filter-opaque-{value > 0}".lower()
    request = SearchRequest("omega quasar", top_k=10, filter=SELECTIVE)
    with _store(chroma_server, name) as store:
        store.add(_docs())
        store.similarity_search(request)
        with _store(other_url(chroma_server), name) as other:
            other.add([Document("huge", "omega quasar", {"n": value})])
        assert "n" not in store._opaque.current
        recorder = requests_of(store)
        found = store.similarity_search(request)
        later = store.similarity_search(request)
    _check(found, SELECTIVE)
    assert ("huge" in [d.id for d in found]) == (value < 0)
    assert [d.id for d in later] == [d.id for d in found]
    if value < 0:
        assert found[0].id == "huge" and found[0].metadata == {"n": value}
        assert recorder.sent[0] == "POST query" and len(recorder.sent) == 2  # one request each
    else:
        assert recorder.sent[:2] == ["POST query", f"GET {name}"]  # the fallback read the keys


@pytest.mark.server
def test_writes_by_another_store_are_seen_by_the_next_filtered_search(chroma_server: str) -> None:
    name = "http-filter-writes"
    request = SearchRequest("omega quasar", top_k=5, filter=SELECTIVE)
    with _store(chroma_server, name) as store:
        store.add([*_docs(), Document("old", "omega quasar", {"n": 1})])
        assert store.similarity_search(request)[0].id == "old"
        with _store(other_url(chroma_server), name) as other:
            other.delete(["old"])
            other.add([Document("moved", "omega quasar", {"n": 100}), Document("new", "omega", {"n": 2})])
        found = store.similarity_search(request)
    _check(found, SELECTIVE, top_k=5)
    assert found[0].id == "new" and {"old", "moved"}.isdisjoint(d.id for d in found)


@pytest.mark.server
def test_filters_build_the_columns_once_chromas_where_has_cost_as_much(
    chroma_server: str, requests_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rent or buy: a few filtered searches never read the collection whole; once Chroma's `where`
    # clauses have cost what that read costs, the store builds the columns and takes their path.
    request = SearchRequest("delta code", top_k=10, filter=SELECTIVE)
    with _store(chroma_server, "http-filter-rent") as store:
        store.add(_docs())
        for _ in range(3):
            store.similarity_search(request)
        assert store._lexical.rebuilds == 0 and store._nearest.rent > 0
        monkeypatch.setattr(reading, "COLUMNS_SECONDS_PER_RECORD", store._nearest.rent / 600)
        built = store.similarity_search(request)
        assert store._lexical.rebuilds == 1 and store._nearest.rent == 0.0
        recorder = requests_of(store)
        found = store.similarity_search(request)
        assert store._lexical.rebuilds == 1
        sent, bodies = list(recorder.sent), list(recorder.bodies)
        # The build measured its price. Another store's write makes the columns stale: the `where`
        # answers until it has cost that much again, then the columns are built anew.
        price = store._nearest.price
        assert price is not None and price > 0
        with _store(other_url(chroma_server), "http-filter-rent") as other:
            other.add([Document("new", "delta code", {"n": 1})])
        assert "new" in [d.id for d in store.similarity_search(request)]
        assert store._lexical.rebuilds == 1 and store._nearest.rent > 0  # the `where` answered
        store._nearest.rent = price
        assert "new" in [d.id for d in store.similarity_search(request)]
        assert store._lexical.rebuilds == 2
    _check(built, SELECTIVE)
    assert [d.id for d in found] == [d.id for d in built]
    assert sorted(sent) == ["GET http-filter-rent", "POST query"]
    assert bodies[sent.index("POST query")].get("ids") is not None


_OPS = ["<", "<=", ">", ">=", "==", "!="]
_KEYS = ["a", "b", "s"]


def _random_docs(rng: random.Random, count: int, huge: bool) -> list[Document]:
    """Documents whose metadata Chroma indexes, and with `huge` some (a huge integer) it cannot."""
    docs = []
    for i in range(count):
        metadata: dict[str, Any] = {}
        for name in ("a", "b"):
            if rng.random() < 0.8:
                small = rng.randint(-5, 5)
                metadata[name] = rng.choice([small, rng.choice([-1, 1]) * 2**70 + i]) if huge else small
        if rng.random() < 0.8:
            metadata["s"] = rng.choice(["x", "y", "z"])
        docs.append(Document(f"r{i:03d}", " ".join(rng.choices(WORDS, k=2)), metadata))
    return docs


def _random_filter(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(_KEYS)
        value = repr(rng.choice(["x", "y", "z"])) if name == "s" else str(rng.randint(-6, 6))
        op = rng.choice(["==", "!="]) if name == "s" else rng.choice(_OPS)
        parts.append(f"{name} {op} {value}")
    return f" {rng.choice(['AND', 'OR'])} ".join(parts)


@pytest.mark.server
def test_one_request_answers_agree_with_the_reference_while_another_store_writes(chroma_server: str) -> None:
    # Differential: a reader that never writes (so it never learns which keys hold values Chroma
    # cannot index, unless a fallback reads them) answers filtered searches whose top_k exceeds the
    # collection, so the answer is exactly the filter's matches; another store rewrites the
    # collection between rounds, huge integers among its values in the later ones (the widened
    # clause selects them, and a hit that does not match sends the search down the usual path).
    rng = random.Random(17)
    name = "http-filter-differential"
    reader_opaque: list[frozenset[str]] = []
    with (
        _store(chroma_server, name) as writer,
        _store(other_url(chroma_server), name) as reader,
    ):
        reader._nearest.scan_limit = 4  # every collection here is large enough for the HNSW path
        one_request = 0
        for huge in (False, True, True):
            docs = _random_docs(rng, 30, huge)
            if writer.count():
                writer.delete(filter="a IS NULL OR a IS NOT NULL")
            writer.add(docs)
            reader._nearest.forget_size()
            reader_opaque.append(reader._opaque.current)
            for _ in range(15):
                text = _random_filter(rng)
                expected = {d.id: d.metadata for d in docs if matches(parse(text), d.metadata)}
                recorder = Requests()
                session: httpx.Client = reader.chroma_client._server._session
                session.event_hooks["request"].append(recorder)
                try:
                    found = reader.similarity_search(SearchRequest("alpha beta", top_k=40, filter=text))
                finally:
                    session.event_hooks["request"].remove(recorder)
                assert {d.id: d.metadata for d in found} == expected, text
                one_request += recorder.sent == ["POST query"]
    assert reader_opaque[0] == frozenset()  # the reader did not know the opaque keys at first
    assert one_request >= 10
