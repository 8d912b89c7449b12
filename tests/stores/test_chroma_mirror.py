"""The exact copy of a Chroma collection (`stores.chroma.mirror`): exact search and filters in numpy.

Built once by an `exact=True` request, it answers exact and filtered requests until a write drops it;
stores of one process share it; stores on a server see other clients' writes through the state token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.errors import InvalidRequestError
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.client import close_client

DIMS = 16
FILTERS = [None, "bucket < 3", "name >= 'n0150'", "name < 'n0100-and-a-long-tail' OR odd == true"]


class _Lookup:
    """Query texts `q<i>` map to fixed unit vectors; documents bring their own."""

    def __init__(self) -> None:
        rng = np.random.default_rng(5)
        rows = rng.standard_normal((20, DIMS)).astype(np.float32)
        self.queries = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        self.dimensions = DIMS
        self.name = f"mirror-lookup-{DIMS}"

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self.queries[[int(text[1:]) for text in texts]]
        return vectors


def _docs(count: int = 600, seed: int = 3) -> list[Document]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[40:50] = vectors[7]  # exact ties, ordered by id
    return [
        Document(
            f"d{i:04d}",
            f"text {i}",
            {"bucket": i % 10, "odd": i % 2 == 1, "name": f"n{(i * 37) % count:04d}"},
            embedding=v,
        )
        for i, v in enumerate(vectors)
    ]


class _Calls:
    """Wraps a chromadb collection and records its method calls with their `include` (the real ones run)."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.collection, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, tuple(kwargs.get("include") or ())))
            return method(*args, **kwargs)

        return call


def _hits(found: list[Document]) -> list[tuple[str, float | None]]:
    return [(d.id, d.score) for d in found]


def _pair(**options: Any) -> tuple[ChromaVectorStore, NumpyVectorStore]:
    model = _Lookup()
    reference = NumpyVectorStore(model)  # type: ignore[arg-type]
    reference.add(_docs())
    store = ChromaVectorStore(model, collection="mirrored", ef_search=10, **options)  # type: ignore[arg-type]
    store.add(_docs())
    return store, reference


def test_a_second_exact_search_makes_no_chroma_call() -> None:
    # Before: every exact=True search paged through all of the collection's embeddings.
    store, reference = _pair()
    with store:
        request = SearchRequest("q1", top_k=7, exact=True)
        assert _hits(store.similarity_search(request)) == _hits(reference.similarity_search(request))
        spy = _Calls(store._collection)
        store._collection = spy
        store._nearest.collection = spy
        found = store.similarity_search(SearchRequest("q2", top_k=7, exact=True))
        assert _hits(found) == _hits(reference.similarity_search(SearchRequest("q2", top_k=7)))
        assert [d.text for d in found] == [d.text for d in reference.get(ids=[d.id for d in found])]
        assert [d.metadata for d in found] == [d.metadata for d in reference.get(ids=[d.id for d in found])]
        assert spy.calls == []  # texts and metadata come from the copy too
        assert store._mirror.builds == 1


def test_the_copy_answers_filters_exactly() -> None:
    store, reference = _pair()
    with store:
        store.similarity_search(SearchRequest("q0", exact=True))  # builds the copy
        for text in FILTERS:
            for name in ("q3", "q4"):
                for mode in ("vector", "hybrid"):
                    # Unfiltered default searches stay on HNSW (fast); filtered ones use the copy.
                    request = SearchRequest(name, top_k=9, filter=text, mode=mode, exact=text is None)
                    got = store.similarity_search(request)
                    assert _hits(got) == _hits(reference.similarity_search(request)), (text, mode)
            if text is not None:
                assert store.count(text) == reference.count(text)
                assert [d.id for d in store.get(filter=text)] == [d.id for d in reference.get(filter=text)]
        assert store._mirror.builds == 1


def test_writes_drop_the_copy() -> None:
    store, reference = _pair()
    with store:
        request = SearchRequest("q5", top_k=3, exact=True, filter="bucket == 4")
        store.similarity_search(request)
        best = reference.similarity_search(request)[0]
        vector = next(d.embedding for d in _docs() if d.id == best.id)
        twin = Document("zz-new", "new", {"bucket": 4}, embedding=vector)
        store.add([twin])
        assert "zz-new" in [d.id for d in store.similarity_search(request)]
        assert store.count("bucket == 4") == 61
        store.delete(["zz-new", best.id])
        found = [d.id for d in store.similarity_search(request)]
        assert "zz-new" not in found and best.id not in found
        assert store.count("bucket == 4") == 59
        assert store._mirror.builds == 3


def test_stores_over_one_folder_share_the_copy(tmp_path: Path) -> None:
    model = _Lookup()
    with (
        ChromaVectorStore(model, path=tmp_path, ef_search=10) as first,  # type: ignore[arg-type]
        ChromaVectorStore(model, path=tmp_path, ef_search=10) as second,  # type: ignore[arg-type]
    ):
        first.add(_docs())
        first.similarity_search(SearchRequest("q1", exact=True))
        assert second._mirror is first._mirror
        second.add([Document("zz-new", "new", {"bucket": 99}, embedding=_Lookup().queries[1])])
        assert first.similarity_search(SearchRequest("q1", top_k=1, exact=True))[0].id == "zz-new"


def test_a_server_store_sees_writes_by_other_clients(chroma_server: str) -> None:
    model = _Lookup()
    with ChromaVectorStore(model, collection="mirror-server", url=chroma_server, ef_search=10) as store:  # type: ignore[arg-type]
        store.add(_docs(100))
        assert store.count("bucket == 99") == 0
        store.similarity_search(SearchRequest("q1", exact=True))
        import chromadb

        host, port = chroma_server.removeprefix("http://").split(":")
        other_client = chromadb.HttpClient(host=host, port=int(port))
        try:
            # Another client, as another process would be: its own lock and its own copy.
            with ChromaVectorStore(model, collection="mirror-server", client=other_client) as other:  # type: ignore[arg-type]
                assert other._mirror is not store._mirror
                other.add([Document("zz-new", "new", {"bucket": 99}, embedding=model.queries[1])])
            assert store.count("bucket == 99") == 1
            assert store.similarity_search(SearchRequest("q1", top_k=1, exact=True))[0].id == "zz-new"
        finally:
            close_client(other_client)  # chromadb leaves its HTTP pools open otherwise


def test_filtering_often_builds_the_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    import stores.chroma.mirror as mirror

    # A client the caller made: other processes may write, so Chroma's `where` decides filters (no
    # filter columns are held) and its cost counts toward the copy.
    client = chromadb.PersistentClient(path=str(tmp_path), settings=Settings(anonymized_telemetry=False))
    store, reference = _pair(client=client)
    with store:
        monkeypatch.setattr(mirror, "READ_SECONDS_PER_RECORD", 1.0)  # a copy dearer than any filter here
        for name in ("q1", "q2", "q3"):
            store.similarity_search(SearchRequest(name, top_k=4, filter="bucket < 3"))
        assert store.count("bucket < 3") == 180 and store._mirror.builds == 0
        store._mirror._price = 0.0  # as if filtering had already cost as much as a full read
        request = SearchRequest("q4", top_k=6, filter="name >= 'n0150'")
        store.similarity_search(request)  # Chroma's time is charged, and the copy is built
        assert store._mirror.builds == 1
        assert _hits(store.similarity_search(request)) == _hits(reference.similarity_search(request))
        store.add([Document("zz-new", "new", {"bucket": 1}, embedding=_docs()[0].embedding)])
        assert store._mirror.rent == 0.0  # a write drops the copy and starts renting anew
        assert store.count("bucket < 3") == 181


def test_filters_on_a_store_only_this_process_writes_never_build_the_copy(tmp_path: Path) -> None:
    store, reference = _pair(path=tmp_path)
    with store:
        store._mirror._price = 0.0  # as if filtering had already cost as much as a full read
        for text in FILTERS[1:]:
            eligible = {d.id for d in reference.get(filter=text)}
            found = store.similarity_search(SearchRequest("q4", top_k=6, filter=text))  # HNSW: approximate
            assert len(found) == 6 and {d.id for d in found} <= eligible
            assert store.count(text) == len(eligible)
        # The filter columns decide, so no Chroma time is charged toward a copy of the vectors.
        assert store._mirror.rent == 0.0 and store._mirror.builds == 0


def test_exact_copy_false_keeps_no_copy_and_stays_exact() -> None:
    store, reference = _pair(exact_copy=False)
    with store:
        for text in FILTERS:
            request = SearchRequest("q6", top_k=8, filter=text, exact=True)
            assert _hits(store.similarity_search(request)) == _hits(reference.similarity_search(request))
        assert store._mirror.builds == 0


def test_exact_copy_true_builds_at_the_first_filter() -> None:
    store, reference = _pair(exact_copy=True)
    with store:
        request = SearchRequest("q7", top_k=8, filter="bucket == 2")
        assert _hits(store.similarity_search(request)) == _hits(reference.similarity_search(request))
        assert store._mirror.builds == 1


def test_exact_copy_must_be_a_flag_or_none() -> None:
    with pytest.raises(InvalidRequestError, match="exact_copy must be True, False or None, got 'yes'"):
        ChromaVectorStore(_Lookup(), exact_copy="yes")  # type: ignore[arg-type]


def test_closing_the_last_store_frees_the_copy(tmp_path: Path) -> None:
    import gc
    import weakref

    model = _Lookup()
    store = ChromaVectorStore(model, path=tmp_path, ef_search=10)  # type: ignore[arg-type]
    store.add(_docs(50))
    store.similarity_search(SearchRequest("q1", exact=True))
    held = weakref.ref(store._mirror)
    store.close()
    gc.collect()
    assert held() is None  # the closed store object itself still exists
    assert store._mirror.builds == 0


def _reopened_exact(
    path: Path, request: SearchRequest
) -> tuple[list[Document], int, list[tuple[str, tuple[str, ...]]]]:
    """An exact search by a fresh store over `path` (as the next process would be): hits, builds, calls."""
    import gc

    gc.collect()  # the closed stores' copy is gone, as it would be in another process
    with ChromaVectorStore(_Lookup(), path=path, ef_search=10) as store:  # type: ignore[arg-type]
        spy = _Calls(store._nearest.collection)
        store._nearest.collection = spy
        found = store.similarity_search(request)
        store._nearest.collection = spy.collection
        return found, store._mirror.builds, spy.calls


def test_an_embedded_folder_saves_the_copy_for_the_next_process(tmp_path: Path) -> None:
    reference = NumpyVectorStore(_Lookup())  # type: ignore[arg-type]
    odd = Document("zz-odd", "lone \ud800 surrogate", {"bucket": 1}, embedding=_Lookup().queries[2])
    reference.add([*_docs(), odd])
    request = SearchRequest("q2", top_k=8, exact=True, filter="bucket < 5")
    with ChromaVectorStore(_Lookup(), path=tmp_path, ef_search=10) as store:  # type: ignore[arg-type]
        store.add([*_docs(), odd])
        store.similarity_search(request)
        assert store._mirror.builds == 1
    found, builds, calls = _reopened_exact(tmp_path, request)
    assert _hits(found) == _hits(reference.similarity_search(request))
    assert found[0].id == "zz-odd" and found[0].text == "lone \ud800 surrogate"
    assert builds == 0 and calls == []  # loaded from rag-copy/, not read from Chroma
    with ChromaVectorStore(_Lookup(), path=tmp_path, ef_search=10) as store:  # type: ignore[arg-type]
        store.delete(["zz-odd"])  # the saved copy is now stale
    found, builds, _ = _reopened_exact(tmp_path, request)
    assert builds == 1 and "zz-odd" not in [d.id for d in found]
    [saved] = list((tmp_path / "rag-copy" / "rag").iterdir())
    (saved / "records.json").write_text("{not json", "ascii")
    found, builds, _ = _reopened_exact(tmp_path, request)  # a damaged save is read again
    assert builds == 1 and "zz-odd" not in [d.id for d in found]
