"""A broad filter (90% of the records or more) on a real Chroma server, with the filter columns held:
the requests it makes, that its page from the sidecar's kept records equals the page read from
Chroma, and what a write by another store (as from another process) does to its answer.

Requests are recorded on the store's own HTTP client (httpx event hooks, run in the sending thread).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import stores.chroma.reading as reading
from rag import Document, HashingEmbedding, SearchRequest
from rag.filters import matches, parse
from stores import ChromaVectorStore
from stores.chroma.lexical import ChromaLexical
from tests.stores.chroma_server_helpers import Hooked, other_url, recording, state_after

MODEL = HashingEmbedding(dimensions=32)
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
BROAD = "n < 570"  # 95% of `_docs()`, and every document of the states below


def _docs(count: int = 600) -> list[Document]:
    return [
        Document(f"d{i:04d}", f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} code item{i}", {"n": i, "w": [i % 3]})
        for i in range(count)
    ]


# Two states of one collection: S0 when the searching store built its sidecar, S2 after another
# store's write during the search.
S0 = [
    Document("victim", "omega quasar victim", {"n": -1, "tag": "v"}),
    Document("updated", "omega quasar before", {"n": -2, "tag": "u"}),
]
S2 = [Document("updated", "omega quasar after", {"n": -20}), Document("new", "omega quasar", {"n": -4})]
QUERY = SearchRequest("omega quasar", top_k=5, filter=BROAD)


@pytest.fixture(autouse=True)
def _columns_never_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test chooses when columns are held (rent or buy would build them after a few filters)."""
    monkeypatch.setattr(reading, "COLUMNS_SECONDS_PER_RECORD", 1.0, raising=False)


def _store(url: str, name: str) -> ChromaVectorStore:
    return ChromaVectorStore(MODEL, url=url, collection=name, ef_search=50, exact_copy=False)


def _fields(found: list[Document]) -> list[tuple[Any, ...]]:
    return [(d.id, d.score, d.text, d.metadata, d.embedding) for d in found]


def _held(store: ChromaVectorStore) -> None:
    """Build the sidecar (filter columns and kept records) by a hybrid search."""
    store.similarity_search(SearchRequest("omega quasar", top_k=5, mode="hybrid"))


@pytest.mark.server
@pytest.mark.parametrize("top_k", [1, 10, 40])
def test_a_broad_filter_builds_its_page_from_the_kept_records(
    chroma_server: str, monkeypatch: pytest.MonkeyPatch, top_k: int
) -> None:
    # Before: the token check, one unrestricted query for distances, and a `get` of the hits' rows.
    # The records the sidecar keeps (of the state the token check vouched for) make the page: the
    # same documents, field by field, as the page read from Chroma.
    request = SearchRequest("delta code", top_k=top_k, filter=BROAD)
    name = f"http-broad-page-{top_k}"
    with _store(chroma_server, name) as store:
        store.add(_docs())
        _held(store)
        store.similarity_search(request)  # any first search counts the collection once
        with recording(store) as recorder:
            found = store.similarity_search(request)
        with monkeypatch.context() as patched:
            patched.setattr(ChromaLexical, "records_of", lambda self, columns: None, raising=False)
            with recording(store) as read:
                from_chroma = store.similarity_search(request)
        assert store._lexical.rebuilds == 1
    assert recorder.sent == [f"GET {name}", "POST query"]
    assert recorder.bodies[1].get("where") is None and recorder.bodies[1].get("ids") is None
    assert read.sent == [f"GET {name}", "POST query", "POST get"]  # the page read from Chroma
    assert len(found) == top_k and all(matches(parse(BROAD), d.metadata) for d in found)
    assert _fields(found) == _fields(from_chroma)
    assert [type(d.metadata) for d in found] == [dict] * top_k
    assert found[0].metadata["w"] == [int(found[0].id[1:]) % 3]


@pytest.mark.server
def test_a_record_another_tool_wrote_is_read_from_chroma(chroma_server: str) -> None:
    # Records another tool wrote are in the columns but not kept: the page reads them by id, alone.
    name = "http-broad-foreign"
    with _store(chroma_server, name) as store:
        store.add(_docs())
        raw = store.chroma_client.get_collection(name)
        vector = MODEL.embed(["omega quasar"])[0]
        raw.add(ids=["foreign"], embeddings=[vector], documents=["omega quasar"], metadatas=[{"n": 3}])
        _held(store)
        sidecar = store._lexical.sidecar()
        assert sidecar.records is not None
        assert "foreign" in sidecar.columns and "foreign" not in sidecar.records.read(["foreign"])
        store.similarity_search(QUERY)
        with recording(store) as recorder:
            found = store.similarity_search(QUERY)
    assert found[0].id == "foreign" and (found[0].text, found[0].metadata) == ("omega quasar", {"n": 3})
    assert found[0].score == pytest.approx(1.0, abs=1e-6)
    assert recorder.sent == [f"GET {name}", "POST query", "POST get"]
    assert recorder.bodies[2]["ids"] == ["foreign"]


def _write_s2(store: ChromaVectorStore) -> None:
    store.delete(["victim"])
    store.add(S2)


@contextmanager
def _racing(chroma_server: str, name: str) -> Iterator[tuple[ChromaVectorStore, ChromaVectorStore]]:
    """A store holding current columns and records of S0, and another store (as another process)."""
    with _store(chroma_server, name) as store:
        store.add([*_docs(), *S0])
        _held(store)
        assert {d.id for d in store.similarity_search(QUERY)[:2]} == {"victim", "updated"}
        with _store(other_url(chroma_server), name) as other:
            yield store, other


BEFORE = state_after(_docs(), S0)
AFTER = state_after(_docs(), S0, S2, deleted=("victim",))


@pytest.mark.server
@pytest.mark.parametrize("moment", ["before-query", "after-query"])
def test_a_write_after_the_token_check_gives_either_state(chroma_server: str, moment: str) -> None:
    # The other store deletes "victim", replaces "updated" and adds "new" after this search has read
    # the state token, before or after its vector query. Each document of the answer is as it was
    # at the check or as it is after the write: the columns and records of the same (checked) state
    # chose and made it, so a record deleted after the query may be listed with its text at the
    # check, as a hybrid search may list it. A record written after the check is not a candidate.
    with _racing(chroma_server, f"http-broad-race-{moment}") as (store, other):
        checked = threading.Event()
        client, nearest = store._conn.client, store._nearest.collection
        store._conn.client = Hooked(client, "get_collection", after=checked.set)

        def write() -> None:
            assert checked.wait(30), "the state token was never read"
            _write_s2(other)

        early = moment == "before-query"
        spy = Hooked(nearest, "query", before=write if early else None, after=None if early else write)
        store._nearest.collection = spy
        try:
            with recording(store) as recorder:
                found = store.similarity_search(QUERY)
        finally:
            store._conn.client, store._nearest.collection = client, nearest
        assert spy.fired and store._lexical.rebuilds == 1
        later = store.similarity_search(QUERY)
    assert recorder.sent == [f"GET http-broad-race-{moment}", "POST query"]
    assert len(found) == 5 and "new" not in [d.id for d in found]
    for doc in found:
        assert (doc.text, doc.metadata) in (BEFORE.get(doc.id), AFTER.get(doc.id)), doc
    assert ("victim" in [d.id for d in found]) == (moment == "after-query")
    # The next search sees the write whole (the token moved: Chroma's `where` answers).
    assert "victim" not in [d.id for d in later] and "new" in [d.id for d in later]
    assert all((d.text, d.metadata) == AFTER[d.id] for d in later)


@pytest.mark.server
def test_a_write_before_the_token_check_is_seen_whole(chroma_server: str) -> None:
    with _racing(chroma_server, "http-broad-race-before-check") as (store, other):
        client = store._conn.client
        spy = Hooked(client, "get_collection", before=lambda: _write_s2(other))
        store._conn.client = spy
        try:
            found = store.similarity_search(QUERY)
        finally:
            store._conn.client = client
        assert spy.fired
    assert len(found) == 5 and "victim" not in [d.id for d in found]
    assert {"new", "updated"} <= {d.id for d in found}
    assert all((d.text, d.metadata) == AFTER[d.id] for d in found)


def test_an_embedded_folder_builds_the_page_from_its_saved_records(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An embedded folder's sidecar keeps the records too (saved with it, `SavedRecords` once
    # reopened): with its lexical half loaded, a broad filter reads no row from Chroma either.
    request = SearchRequest("delta code", top_k=10, filter=BROAD)
    with ChromaVectorStore(MODEL, path=tmp_path, collection="broad", ef_search=50) as store:
        store.add(_docs())
    with ChromaVectorStore(MODEL, path=tmp_path, collection="broad", ef_search=50) as store:
        _held(store)  # loads the lexical half: the saved records
        fetched: list[list[str]] = []
        fetch = store._nearest.fetch

        def counted(ids: list[str], fields: Any) -> Any:
            fetched.append(list(ids))
            return fetch(ids, fields)

        store._nearest.fetch = counted
        found = store.similarity_search(request)
        assert fetched == []
        with monkeypatch.context() as patched:
            patched.setattr(ChromaLexical, "records_of", lambda self, columns: None, raising=False)
            from_chroma = store.similarity_search(request)
        assert len(fetched) == 1
    assert len(found) == 10 and _fields(found) == _fields(from_chroma)
