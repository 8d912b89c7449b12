"""What one search costs in Chroma calls: the constant costs issue 17 removed, pinned by counting calls.

A spy wraps the chromadb collection or client and records each method called (the real ones run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore

MODEL = HashingEmbedding(dimensions=32)


class Calls:
    """Records `name(include=...)` of every method called on the wrapped object."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, tuple(kwargs.get("include") or ())))
            return method(*args, **kwargs)

        return call


def _docs() -> list[Document]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [
        Document(f"d{i:04d}", f"{words[i % 8]} {words[(i * 3) % 8]} code E-{i}", {"n": i}) for i in range(900)
    ]


def _spied(store: ChromaVectorStore) -> tuple[Calls, Calls]:
    collection, client = Calls(store._collection), Calls(store._conn.client)
    store._collection = store._nearest.collection = collection
    store._conn.client = client
    return collection, client


def test_a_hybrid_search_on_a_folder_makes_one_query(tmp_path: Path) -> None:
    # Before: the vector half fetched embeddings, metadata and text of 100 candidates, the final rows
    # were read again, and every search read the collection's metadata for the lexical state token.
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:
        store.add(_docs())
        request = SearchRequest("gamma code E-17", top_k=5, mode="hybrid")
        first = store.similarity_search(request)
        collection, client = _spied(store)
        again = store.similarity_search(request)
        assert [(d.id, d.score, d.text) for d in again] == [(d.id, d.score, d.text) for d in first]
        assert len(again) == 5
        # The final page comes from the records the sidecar keeps (tests/stores/test_chroma_kept.py).
        assert collection.calls == [("query", ("distances",))]
        assert client.calls == []


def test_a_write_by_a_second_store_reaches_the_first_ones_lexical_index(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as first, ChromaVectorStore(MODEL, path=tmp_path) as second:
        first.add(_docs()[:10])
        assert first.similarity_search(SearchRequest("omega", mode="lexical")) == []
        second.add([Document("new", "omega", {})])
        assert [d.id for d in first.similarity_search(SearchRequest("omega", mode="lexical"))] == ["new"]
        second.delete(["new"])
        assert first.similarity_search(SearchRequest("omega", mode="lexical")) == []


def test_a_hybrid_search_after_reopening_a_folder_makes_one_query_and_no_read(tmp_path: Path) -> None:
    # Before: an embedded sidecar loaded from disk kept no records, so each search ended with a `get`
    # of the final page (about 1.1 ms of a 4 ms hybrid search at 10,000 records).
    request = SearchRequest("gamma code E-17", top_k=5, mode="hybrid")
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:
        store.add(_docs())
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:  # as a new `rag query` would
        store.count()  # opens the collection
        collection, client = _spied(store)
        found = [(d.id, d.score, d.text, d.metadata) for d in store.similarity_search(request)]
        assert collection.calls == [("count", ()), ("query", ("distances",))]
        # The state token, read once when the sidecar is loaded.
        assert client.calls == [("get_collection", ())] and store._lexical.rebuilds == 0
        sidecar = store._lexical.sidecar()
        sidecar.records = None  # the same search with the page read from Chroma
        assert [(d.id, d.score, d.text, d.metadata) for d in store.similarity_search(request)] == found
        assert len(found) == 5 and ("get", ("metadatas", "documents")) in collection.calls
