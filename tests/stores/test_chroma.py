"""ChromaVectorStore: Chroma's own filter semantics, every limit the store works around, errors, exactness."""

from __future__ import annotations

import doctest
import importlib
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import (
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidRequestError,
    StoreConnectionError,
    StoreError,
)
from rag.filters import Filter, key, matches, parse
from stores import ChromaVectorStore
from stores.chroma.filters import compile_filter
from stores.testing.cases import filter_documents
from tests.stores.conftest import start_chroma_server, stop_chroma_server

MODEL = HashingEmbedding(dimensions=64)


@pytest.fixture(scope="module")
def shared() -> Iterator[ChromaVectorStore]:
    """One in-process store for the whole module; tests clear it by deleting ids, not by reconnecting."""
    with ChromaVectorStore(MODEL, collection="chroma-tests") as store:
        yield store


@pytest.fixture
def store(shared: ChromaVectorStore) -> ChromaVectorStore:
    everything = [doc.id for doc in shared.get()]
    if everything:
        shared.delete(everything)
    return shared


# -- chromadb's own behaviour, which chroma_filters.py relies on or works around ------------------------


@pytest.fixture(scope="module")
def raw() -> Iterator[Any]:
    """A bare chromadb collection in a database of its own (same settings as the store's clients)."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    database = f"raw-{uuid.uuid4().hex}"
    admin = chromadb.AdminClient(settings)
    admin.create_database(database)
    client = chromadb.EphemeralClient(settings, database=database)
    collection = client.create_collection(
        "raw", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    metadatas: list[dict[str, Any]] = [{"a": 1}, {"a": 1.5}, {"a": True}, {"a": "x"}, {"b": 1}, {"a": [1, 2]}]
    vectors = np.eye(6, 4, dtype=np.float32) + 0.1
    collection.add(ids=[f"r{i}" for i in range(6)], embeddings=vectors, metadatas=metadatas)  # type: ignore[arg-type]
    yield collection
    client.close()  # type: ignore[attr-defined]  # Client has close(); the ClientAPI protocol does not
    admin.delete_database(database)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"a": {"$ne": 1}}, ["r1", "r2", "r3", "r4", "r5"]),  # missing key (r4) and list (r5): true
        ({"a": {"$nin": [1]}}, ["r1", "r2", "r3", "r4", "r5"]),
        ({"a": {"$not_contains": 1}}, ["r0", "r1", "r2", "r3", "r4"]),
        ({"a": {"$eq": 1.0}}, ["r0"]),  # int and float equal, True apart
        ({"a": {"$eq": True}}, ["r2"]),
        ({"a": {"$eq": 1.5}}, ["r0", "r1"]),  # the float operand is truncated against the int 1
        ({"a": {"$lt": 1.5}}, []),  # ... so 1 < 1.5 is missed
        ({"a": {"$contains": 1.0}}, []),  # $contains is type-strict: 1.0 does not find 1
    ],
)
def test_raw_chroma_semantics(raw: Any, where: dict[str, Any], expected: list[str]) -> None:
    assert sorted(raw.get(where=where)["ids"]) == expected


@pytest.mark.parametrize(
    "where",
    [
        {"a": {"$in": []}},
        {"a": {"$in": [1, "x"]}},
        {"a": {"$gt": "a"}},
        {"$and": [{"a": {"$eq": 1}}]},
    ],
)
def test_raw_chroma_rejects(raw: Any, where: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Expected"):
        raw.get(where=where)


# -- every limit, handled by the store --------------------------------------------------------------

TRICKY: dict[str, dict[str, Any]] = {
    "t01": {"n": 1, "s": "b", "l": [1, 2], "flag": True},
    "t02": {"n": 1.5, "s": "a", "l": [1.0, 2.5], "flag": False},
    "t03": {"n": 2020.0, "s": "B", "l": ["x", "y"], "flag": 1},
    "t04": {"n": True, "s": 3, "l": [], "mixed": [1, "x", True]},
    "t05": {"n": 2**70, "$dollar": 5, "#hash": "h", "_rag_keys": "mine", "chroma:x": 1},
    "t06": {"n": -(2**60) - 1, "s": "ü", "big": [2**70, 1]},
    "t07": {},
    "t08": {"n": 0, "s": "", "flag": 0},
}

TRICKY_FILTERS = [
    "n == 1.5",  # would match the int 1 in raw Chroma
    "n < 1.5",
    "n <= 1",
    "n > 1 AND n < 3000",
    "n == 2020",
    "n == 1",
    "n == true",
    "n != 1",
    "n == 1180591620717411303424",  # 2**70: beyond 2**53
    "n > 1e20",
    "n < -1152921504606846976",
    "n IN [1.5, 'b', true]",
    "n NOT IN [1, 0, true]",
    "s < 'b'",
    "s >= 'B' AND s <= 'a'",
    "s > 2",
    "s IN ['a', 3]",
    "s == ''",
    "l CONTAINS 1",
    "l CONTAINS 2.0",
    "l NOT CONTAINS 1",
    "l == 1",
    "l != 1",
    "l IN [1, 'x']",
    "l IS NULL",
    "l IS NOT NULL",
    "mixed CONTAINS 'x'",
    "mixed CONTAINS true",
    "big CONTAINS 1180591620717411303424",
    "'$dollar' == 5",
    "'$dollar' != 5",
    "'#hash' >= 'a'",
    "'_rag_keys' == 'mine'",
    "'chroma:x' IS NOT NULL",
    "flag == 1",
    "flag == true",
    "NOT (n < 1.5 OR s IS NULL)",
    "n < true",
    "NOT n < true",
]


def _tricky_docs() -> list[Document]:
    rng = np.random.default_rng(3)
    return [
        Document(i, f"text {i}", meta, embedding=rng.standard_normal(MODEL.dimensions).astype(np.float32))
        for i, meta in TRICKY.items()
    ]


def _expected(tree: Filter) -> list[str]:
    return sorted(i for i, meta in TRICKY.items() if matches(tree, meta))


@pytest.mark.parametrize("text", TRICKY_FILTERS)
def test_every_chroma_limit_gives_the_reference_answer(store: ChromaVectorStore, text: str) -> None:
    store.add(_tricky_docs())
    tree = parse(text)
    expected = _expected(tree)
    assert [d.id for d in store.get(filter=tree)] == expected
    assert store.count(tree) == len(expected)
    hits = store.similarity_search(SearchRequest("text", top_k=10, filter=tree))
    assert sorted(d.id for d in hits) == expected


def test_spot_checks_of_the_tricky_filters(store: ChromaVectorStore) -> None:
    store.add(_tricky_docs())
    assert [d.id for d in store.get(filter="n == 1.5")] == ["t02"]
    assert [d.id for d in store.get(filter="n < 1.5")] == ["t01", "t06", "t08"]
    assert [d.id for d in store.get(filter="l CONTAINS 1")] == ["t01", "t02"]
    assert [d.id for d in store.get(filter="'$dollar' == 5")] == ["t05"]
    assert [d.id for d in store.get(filter="l IS NULL")] == ["t05", "t06", "t07", "t08"]


def test_builder_only_filters(store: ChromaVectorStore) -> None:
    store.add(_tricky_docs())
    assert store.get(filter=key("n").in_([])) == []
    assert store.count(key("n").not_in([])) == len(TRICKY)
    assert store.similarity_search(SearchRequest("text", filter=key("n").in_([]))) == []


def test_metadata_round_trips_exactly_and_hides_reserved_keys(store: ChromaVectorStore) -> None:
    store.add(_tricky_docs())
    for doc in store.get():
        assert doc.metadata == TRICKY[doc.id]
        assert {k: type(v) for k, v in doc.metadata.items()} == {
            k: type(v) for k, v in TRICKY[doc.id].items()
        }


def test_text_chroma_cannot_store_round_trips(store: ChromaVectorStore) -> None:
    odd = "lone surrogate \ud800, NUL \x00, ünïcödé 東京"
    store.add([Document("odd", odd, {"k": "\udfff"})])
    [doc] = store.get(["odd"])
    assert (doc.text, doc.metadata) == (odd, {"k": "\udfff"})
    assert store.count("k == '\udfff'") == 1


def test_compiled_where_rewrites() -> None:
    enc = {"_rag_enc": {"$contains": '"a"'}}
    assert compile_filter(parse("a == 1")).where == {"$or": [{"a": {"$eq": 1}}, enc]}
    assert compile_filter(parse("a != 1")).where == {"a": {"$ne": 1}}  # encoded records: key missing
    mixed = compile_filter(parse("a IN [1, 'x', 2.5]"))
    assert mixed.where == {"$or": [{"a": {"$in": [1]}}, {"a": {"$in": ["x"]}}, {"a": {"$in": [2.5]}}, enc]}
    assert compile_filter(parse("NOT a IN [true, 'x']")).where == {
        "$and": [{"a": {"$nin": [True]}}, {"a": {"$nin": ["x"]}}]
    }
    assert compile_filter(parse("a < true AND b == 1")).matches_nothing
    # A fractional operand is widened to whole numbers: Chroma truncates it against integer values.
    assert compile_filter(parse("a < 1.5")).where == {"$or": [{"a": {"$lte": 2}}, enc]}
    assert compile_filter(parse("a CONTAINS 2")).where == {
        "$or": [{"a": {"$contains": 2}}, {"a": {"$contains": 2.0}}, enc]
    }
    assert compile_filter(parse("a < 'm'")).where is None  # Chroma refuses string orderings: Python decides
    assert compile_filter(parse("a IS NULL")).where is None
    assert compile_filter(key("a").not_in([])).where is None
    assert compile_filter(key("a").in_([])).matches_nothing


# -- writing, batching, errors ------------------------------------------------------------------


def test_batches_smaller_than_the_client_maximum(embedding: HashingEmbedding) -> None:
    with (
        ChromaVectorStore(embedding, batch_size=3) as small,
        ChromaVectorStore(embedding, batch_size=10**9) as big,
    ):
        assert small.batch_size == 3
        assert big.batch_size < 10**9  # capped at the client's get_max_batch_size()
        docs = [Document(f"d{i:02d}", f"text number {i}", {"i": i}) for i in range(11)]
        small.add(docs)
        assert small.count() == 11
        backwards = [f"d{i:02d}" for i in range(10, -1, -1)]
        assert [d.id for d in small.get(backwards)] == backwards
        assert small.delete(filter="i >= 4") == 7
        assert small.delete([d.id for d in docs]) == 4
        assert small.count() == 0


def test_bad_vectors_write_nothing(store: ChromaVectorStore) -> None:
    store.add([Document("keep", "kept text")])
    wrong = np.ones(MODEL.dimensions + 1, dtype=np.float32)
    with pytest.raises(DimensionMismatchError, match="'bad'"):
        store.add([Document("new", "x"), Document("bad", "y", embedding=wrong)])
    nan = np.full(MODEL.dimensions, np.nan, dtype=np.float32)
    with pytest.raises(DimensionMismatchError, match="'nan'"):
        store.add([Document("keep", "replaced"), Document("nan", "y", embedding=nan)])
    assert [(d.id, d.text) for d in store.get()] == [("keep", "kept text")]


def test_ephemeral_stores_are_isolated(embedding: HashingEmbedding) -> None:
    with ChromaVectorStore(embedding) as one, ChromaVectorStore(embedding) as two:
        one.add([Document("a", "alpha")])
        assert (one.count(), two.count()) == (1, 0)


def test_closed_in_process_stores_leave_no_metadata_behind() -> None:
    # chromadb 1.5.9 leaks a dropped database's metadata rows into records written later elsewhere.
    for _ in range(6):
        with ChromaVectorStore(HashingEmbedding(dimensions=64), collection="left-behind") as old:
            old.add(filter_documents(64))
    with ChromaVectorStore(MODEL, collection="fresh") as fresh:
        fresh.add([Document(f"n{i:02d}", "text") for i in range(40)])
        assert fresh.count("year IS NULL") == 40 and fresh.count("tags CONTAINS 'tech'") == 0
        raw = fresh.chroma_collection.get(include=["metadatas"])["metadatas"]
        assert all(set(record) == {"_rag_doc"} for record in raw)  # the text, nothing inherited


def test_persistent_store_reopens_with_its_data(tmp_path: Path, embedding: HashingEmbedding) -> None:
    with ChromaVectorStore(embedding, path=tmp_path / "db") as first:
        first.add([Document("a", "alpha", {"n": 2**70}), Document("b", "beta", {"n": 1})])
    with ChromaVectorStore(embedding, path=tmp_path / "db") as again:
        assert [d.id for d in again.get(filter="n == 1180591620717411303424")] == ["a"]
        assert again.similarity_search("alpha")[0].id == "a"


def test_other_model_is_refused(tmp_path: Path) -> None:
    with ChromaVectorStore(HashingEmbedding(dimensions=64), path=tmp_path) as first:
        first.add([Document("a", "alpha")])
    other = HashingEmbedding(dimensions=32)
    with pytest.raises(EmbeddingModelMismatchError) as info:
        ChromaVectorStore(other, path=tmp_path)
    assert MODEL.name in str(info.value) and other.name in str(info.value)


def test_a_file_as_path_is_a_store_error(tmp_path: Path, embedding: HashingEmbedding) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a folder")
    with pytest.raises(StoreError, match=r"notes\.txt"):
        ChromaVectorStore(embedding, path=file)


@pytest.mark.parametrize("name", ["ab", "-bad", "has space", "a" * 513])
def test_bad_collection_names(embedding: HashingEmbedding, name: str) -> None:
    with pytest.raises(InvalidRequestError, match="collection name"):
        ChromaVectorStore(embedding, collection=name)


@pytest.mark.server
def test_server_store(chroma_server: str, embedding: HashingEmbedding) -> None:
    with ChromaVectorStore(embedding, url=chroma_server, collection="server-smoke") as store:
        store.add([Document("a", "alpha beta", {"n": 1}), Document("b", "beta gamma", {"n": 2.5})])
        assert [d.id for d in store.get(filter="n < 2")] == ["a"]
        with ChromaVectorStore(embedding, url=chroma_server, collection="server-smoke") as second:
            assert second.count() == 2


@pytest.mark.server
def test_closed_server_is_a_connection_error(tmp_path: Path, embedding: HashingEmbedding) -> None:
    server, url = start_chroma_server(tmp_path)
    try:
        store = ChromaVectorStore(embedding, url=url, collection="closing")
        store.add([Document("a", "alpha")])
    finally:
        stop_chroma_server(server)
    with pytest.raises(StoreConnectionError, match=url):
        store.count()
    with pytest.raises(StoreConnectionError, match=url):
        store.similarity_search("alpha")
    with pytest.raises(StoreConnectionError, match=url) as info:
        ChromaVectorStore(embedding, url=url)
    assert info.value.url == url


def test_a_password_in_the_server_url_stays_out_of_errors(embedding: HashingEmbedding) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    for url, error in ((f"http://ann:s3cret@127.0.0.1:{port}", StoreConnectionError),
                       ("http://ann:s3cret@127.0.0.1:port", InvalidRequestError),
                       ("http://ann:s3cret@127.0.0.1/path", InvalidRequestError)):  # fmt: skip
        with pytest.raises(error, match=r"127\.0\.0\.1") as info:
            ChromaVectorStore(embedding, url=url)
        assert "s3cret" not in str(info.value) and "s3cret" not in str(getattr(info.value, "url", ""))


# -- exact search -------------------------------------------------------------------------------


class _Lookup:
    """An embedding model that maps chosen query texts to chosen vectors (documents bring their own)."""

    def __init__(self, vectors: dict[str, np.ndarray], dimensions: int) -> None:
        self.vectors = vectors
        self.dimensions = dimensions
        self.name = f"lookup-{dimensions}"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts]).astype(np.float32)


@pytest.mark.parametrize(
    "name", ["stores.chroma.filters", "stores.chroma.lexical", "stores.chroma.records", "stores.locking"]
)
def test_the_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_importing_stores_does_not_import_chromadb() -> None:
    code = "import sys, stores; assert 'chromadb' not in sys.modules, 'chromadb imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
