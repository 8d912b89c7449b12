"""Lone surrogates and NUL (strings PostgreSQL cannot hold) on every store: numpy and Chroma store and
return them; pgvector refuses such a document with one clear error naming it and the field, writing
nothing of its batch; a filter or query holding them gets the same answer from all three."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import InvalidRequestError
from rag.filters import Filter, key
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore, PgVectorStore

MODEL = HashingEmbedding(dimensions=32)
KINDS = ["numpy", "chroma", "pgvector"]
ODD = [
    (Document("t", "bad \udc80 byte"), r"document 't': PostgreSQL cannot store a lone surrogate .* its text"),
    (Document("m", "fine", {"source": "caf\udce9.md"}), r"metadata 'source' of document 'm': .* surrogate"),
    (Document("l", "fine", {"tags": ["ok", "\ud800"]}), r"metadata 'tags' of document 'l': .* surrogate"),
    (Document("k", "fine", {"k\udc80": 1}), r"metadata 'k\\udc80' of document 'k': .* surrogate"),
    (Document("n", "fine", {"k": "a\x00"}), r"metadata 'k' of document 'n': .* the NUL character"),
]
DOCS = [
    Document("a", "lamp one", {"s": "caf", "tags": ["x", "y"], "n": 1}),
    Document("b", "lamp two", {"s": "café", "tags": ["y"]}),
    Document("c", "lamp three", {"s": "caf\ue000", "n": 3}),
    Document("d", "lamp four", {"s": "cafz"}),
    Document("e", "lamp five", {"s": "ca"}),
    Document("f", "lamp six", {"s": "caf\x01"}),
]


def _open(kind: str, request: pytest.FixtureRequest, tmp_path: Path, name: str) -> Iterator[VectorStore]:
    if kind == "numpy":
        yield NumpyVectorStore(MODEL)
    elif kind == "chroma":
        with ChromaVectorStore(MODEL, path=tmp_path / f"chroma-{name}") as chroma:
            yield chroma
    else:
        url = request.getfixturevalue("postgres_server_url")
        with PgVectorStore(MODEL, url=url, table=name) as store:
            yield store


@pytest.fixture(params=KINDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_name: Callable[[str], str]
) -> Iterator[VectorStore]:
    yield from _open(request.param, request, tmp_path, fresh_name("odd"))


@pytest.mark.parametrize(("odd", "message"), ODD, ids=["text", "metadata", "list", "key", "nul"])
def test_odd_text_is_kept_where_it_can_be_and_refused_clearly_where_not(
    store: VectorStore, odd: Document, message: str
) -> None:
    store.add([Document("keep", "kept", {"source": "keep.md"})])
    if isinstance(store, PgVectorStore):
        with pytest.raises(InvalidRequestError, match=message):
            store.add([Document("new", "fine"), odd])
        assert [d.id for d in store.get()] == ["keep"]  # nothing of the refused batch
    else:
        store.add([Document("new", "fine"), odd])
        [back] = store.get([odd.id])
        assert (back.text, back.metadata) == (odd.text, odd.metadata)


def test_an_id_holding_one_is_kept_by_numpy_and_refused_by_pgvector(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    odd = Document("i\udc80", "fine")
    numpy_store = NumpyVectorStore(MODEL)
    numpy_store.add([odd])
    assert [d.id for d in numpy_store.get()] == [odd.id]
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("odd_id")) as store:
        message = r"document 'i\\udc80': PostgreSQL cannot store a lone surrogate .* in its id"
        with pytest.raises(InvalidRequestError, match=message):
            store.add([Document("new", "fine"), odd])
        assert store.count() == 0


FILTERS: list[Filter] = [
    key("s") == "caf\udce9",
    key("s") != "caf\udce9",
    key("s").in_(["caf\udce9", "ca"]),
    key("s").not_in(["caf\udce9", "ca"]),
    key("s").in_(["\ud800", "a\x00"]),
    key("s").not_in(["\ud800"]),
    key("tags").contains("\ud800"),
    key("tags").not_contains("\ud800"),
    key("s") < "caf\udce9",
    key("s") <= "caf\udce9",
    key("s") > "caf\udce9",
    key("s") >= "caf\udce9",
    key("s") < "caf\x00",
    key("s") >= "caf\x00z",
    key("s") == "caf\x00",
    key("k\udc80") == 1,
    key("k\udc80") != 1,
    key("k\udc80").is_null(),
    key("k\udc80").is_not_null(),
    (key("n") == 1) | (key("s") > "ca\ud800"),
]


@pytest.fixture(scope="module")
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, VectorStore]]:
    folder = tmp_path_factory.mktemp("filters")
    opened = {kind: _open(kind, request, folder, f"odd_filters_{kind}") for kind in KINDS}
    stores = {kind: next(generator) for kind, generator in opened.items()}
    for store in stores.values():
        store.delete(filter=key("s").is_not_null())
        store.add(DOCS)
    yield stores
    for generator in opened.values():
        generator.close()


@pytest.mark.parametrize("tree", FILTERS, ids=[f"f{i}" for i in range(len(FILTERS))])
def test_filters_holding_them_get_the_same_answer_everywhere(
    filled: dict[str, VectorStore], tree: Filter
) -> None:
    answers = {kind: sorted(d.id for d in store.get(filter=tree)) for kind, store in filled.items()}
    counts = {kind: store.count(tree) for kind, store in filled.items()}
    assert answers["chroma"] == answers["pgvector"] == answers["numpy"], tree
    assert counts["chroma"] == counts["pgvector"] == counts["numpy"] == len(answers["numpy"])


def test_queries_holding_them_are_answered_everywhere(filled: dict[str, VectorStore]) -> None:
    for mode in ("vector", "lexical", "hybrid"):
        found = {
            kind: [
                d.id for d in store.similarity_search(SearchRequest("lamp \udc80 one", top_k=1, mode=mode))
            ]
            for kind, store in filled.items()
        }
        assert found["numpy"] == found["chroma"] == found["pgvector"] == ["a"], (mode, found)
