"""String orderings on Chroma: narrowed by order codes (`_rag_ord:<key>`), finished exactly in Python."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag import Document
from rag.embeddings import HashingEmbedding
from rag.filters import parse
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.filters import compile_filter
from stores.chroma.records import order_code, order_key

MODEL = HashingEmbedding(dimensions=16)
VALUES = [
    "",
    "a",
    "a\x00",
    "ab",
    "abcdef",
    "abcdefg",
    "abcdefh",
    "abcdeg",
    "é",
    "éa",
    "東京",
    "😀",
    "Z",
    "10",
    "9",
]
ORDERINGS = [
    f"v {op} {value!r}" for op in ("<", "<=", ">", ">=") for value in ("abcdef", "abcdefh", "é", "", "9")
]


@given(st.text(max_size=12), st.text(max_size=12))
def test_order_codes_never_invert_an_order(a: str, b: str) -> None:
    low, high = sorted([a, b])
    assert order_code(low) <= order_code(high)


def _docs() -> list[Document]:
    docs = [Document(f"s{i:02d}", f"text {i}", {"v": value}) for i, value in enumerate(VALUES)]
    docs += [Document("n01", "number", {"v": 5}), Document("l01", "list", {"v": ["a", "b"]})]
    return [*docs, Document("m01", "missing", {"other": "x"})]


def test_string_orderings_equal_the_numpy_store() -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(_docs())
    with ChromaVectorStore(MODEL, collection="ordered") as store:
        store.add(_docs())
        for text in ORDERINGS + [f"NOT ({text})" for text in ORDERINGS]:
            assert [d.id for d in store.get(filter=text)] == [d.id for d in reference.get(filter=text)], text
            assert store.count(text) == reference.count(text), text


def test_a_new_collection_narrows_string_orderings_in_chroma() -> None:
    with ChromaVectorStore(MODEL, collection="narrowed") as store:
        store.add(_docs())
        where = store._compile(parse("v >= 'abcdefh'")).where
        assert where == {order_key("v"): {"$gte": order_code("abcdefh")}}
        records = store.chroma_collection.get(ids=["s05", "n01"], include=["metadatas"])["metadatas"]
        assert records[0][order_key("v")] == order_code("abcdefg") and order_key("v") not in records[1]


def test_collections_without_codes_on_every_record_are_not_narrowed() -> None:
    with ChromaVectorStore(MODEL, collection="unordered") as first:
        first.add(_docs())
        raw = first.chroma_collection
        # As older versions left it: records may lack the codes.
        raw.modify(metadata={k: v for k, v in raw.metadata.items() if k != "rag:ordered"})
        with ChromaVectorStore(MODEL, collection="unordered", client=first.chroma_client) as older:
            assert older._compile(parse("v >= 'b'")).where == {'_rag_key:"v"': {"$eq": 1}}
            assert [d.id for d in older.get(filter="v >= 'b'")] == ["s08", "s09", "s10", "s11"]


def test_compiling_without_codes_keeps_the_key_test() -> None:
    assert compile_filter(parse("v < 'x'")).where == {'_rag_key:"v"': {"$eq": 1}}
    assert compile_filter(parse("v < 'x'"), ordered=True).exact is False
