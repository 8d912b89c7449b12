"""String orderings on Chroma: exact order codes (`_rag_o1:`/`_rag_o2:`) compiled to `where`; older
collections narrowed by `_rag_ord:<key>` and finished in Python."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag import Document
from rag.embeddings import HashingEmbedding
from rag.filters import parse
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.filters import compile_filter
from stores.chroma.records import ORDER_EXACT_BYTES, order_code, order_codes, order_key, order_keys

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
    "abcdefghijklmno",
    "abcdefghijklmno\x00",
    "abcdefghijklmnop",
    "abcdefghijklmnoq",
    "abcdefghijklmnopq",
    "2023-01-01T12:00:00Z",
    "2023-01-01T12:00:01Z",
    "2023-01-01",
    "2023-01-01\x00",
    "2022-12-31",
]
OPERANDS = ("abcdef", "abcdefh", "é", "", "9", "abcdefghijklmno", "abcdefghijklmnop", "2023-01-01")
ORDERINGS = [f"v {op} {value!r}" for op in ("<", "<=", ">", ">=") for value in OPERANDS]
ORDERINGS += [f"v {op} '2023-01-01T12:00:00Z'" for op in ("<", "<=", ">", ">=")]


@given(st.text(max_size=12), st.text(max_size=12))
def test_order_codes_never_invert_an_order(a: str, b: str) -> None:
    low, high = sorted([a, b])
    assert order_code(low) <= order_code(high)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@given(st.text(max_size=20), st.text(max_size=20))
def test_exact_order_codes_order_short_strings_exactly(a: str, b: str) -> None:
    low, high = sorted([a, b])
    if max(_size(a), _size(b)) <= ORDER_EXACT_BYTES:
        assert (order_codes(low) < order_codes(high)) == (low < high)
        assert (order_codes(a) == order_codes(b)) == (a == b)
    else:
        assert order_codes(low) <= order_codes(high)
    assert all(-(2**63) <= code < 2**63 for code in order_codes(a))


def test_a_short_operand_compiles_to_an_exact_where() -> None:
    # Before: string orderings were narrowed by Chroma and every candidate's metadata read in Python.
    with ChromaVectorStore(MODEL, collection="exact-order") as store:
        compiled = store._compile(parse("v >= '2023-01-01'"))
        assert compiled.exact is True
        head, tail = order_keys("v")
        assert head in str(compiled.where) and tail in str(compiled.where)
        assert store._compile(parse("v > 'abcdefghijklmnop'")).exact is False  # 16 bytes: finished in Python


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


def test_a_new_collection_holds_exact_codes() -> None:
    with ChromaVectorStore(MODEL, collection="coded") as store:
        store.add(_docs())
        records = store.chroma_collection.get(ids=["s05", "n01"], include=["metadatas"])["metadatas"]
        head, tail = order_keys("v")
        assert (records[0][head], records[0][tail]) == order_codes("abcdefg")
        assert head not in records[1] and order_key("v") not in records[0]


def test_collections_with_the_single_code_keep_narrowing() -> None:
    seed = Document("z-seed", "without strings", {"other": 1})
    reference = NumpyVectorStore(MODEL)
    reference.add([*_docs(), seed])
    with ChromaVectorStore(MODEL, collection="first-codes") as first:
        first.add([seed])  # not empty, so the next store keeps the marks below
        raw = first.chroma_collection
        # As issue 17's first part created it: one `order_code` per string value.
        raw.modify(metadata={**raw.metadata, "rag:ordered": True, "rag:exact_order": False})
        with ChromaVectorStore(MODEL, collection="first-codes", client=first.chroma_client) as older:
            older.add(_docs())
            assert older._compile(parse("v >= 'b'")).where == {order_key("v"): {"$gte": order_code("b")}}
            record = raw.get(ids=["s05"], include=["metadatas"])["metadatas"][0]
            assert record[order_key("v")] == order_code("abcdefg") and order_keys("v")[0] not in record
            for text in ORDERINGS:
                assert [d.id for d in older.get(filter=text)] == [d.id for d in reference.get(filter=text)]


def test_collections_without_codes_on_every_record_are_not_narrowed() -> None:
    with ChromaVectorStore(MODEL, collection="unordered") as first:
        first.add(_docs())
        raw = first.chroma_collection
        # As older versions left it: records may lack the codes.
        raw.modify(
            metadata={k: v for k, v in raw.metadata.items() if k not in ("rag:ordered", "rag:exact_order")}
        )
        with ChromaVectorStore(MODEL, collection="unordered", client=first.chroma_client) as older:
            assert older._compile(parse("v >= 'b'")).where == {'_rag_key:"v"': {"$eq": 1}}
            assert [d.id for d in older.get(filter="v >= 'b'")] == ["s08", "s09", "s10", "s11"]


def test_compiling_without_codes_keeps_the_key_test() -> None:
    assert compile_filter(parse("v < 'x'")).where == {'_rag_key:"v"': {"$eq": 1}}
    assert compile_filter(parse("v < 'x'"), ordered=True).exact is False
