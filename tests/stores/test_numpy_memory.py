"""Memory the numpy store and its BM25 index keep beside vectors and texts: the packed vocabulary,
metadata columns that hold only the arrays a key uses, records of any metadata size, and no row map
while store and index number rows alike."""

from __future__ import annotations

import gc
import pickle
import tracemalloc

import numpy as np
import pytest

from rag import Document
from rag.documents import MetadataValue
from rag.filters import Filter, key, matches
from stores.lexical import idmap
from stores.lexical.text import Vocabulary, analyze
from stores.numpy.columns import MetadataColumns
from stores.numpy.records import PackedRecords
from stores.numpy.store import NumpyVectorStore


def _random_words(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, size=int(n))) for n in rng.integers(5, 10, size=count)]


def test_the_vocabulary_keeps_no_python_object_per_term() -> None:
    words = _random_words(40_000, 5)
    texts = [" ".join(words[i : i + 40]) for i in range(0, len(words), 40)]
    gc.collect()
    tracemalloc.start()
    try:
        vocabulary = Vocabulary()
        vocabulary.encode_many(texts)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(vocabulary) > 39_000
    # ~7 bytes of UTF-8 a term here. A dict term -> id, a list of str and a dict word -> id (and the
    # stemmer's cache of every word) took ~180 bytes a term; the packed arrays take ~36.
    assert held / len(vocabulary) < 60


_LONG_ASCII = "x" * 70  # past the 64 bytes that word hashes cover
_LONG_OTHER = "é" * 40  # 80 bytes of UTF-8


@pytest.mark.parametrize("batches", [1, 3])
def test_every_path_of_the_vocabulary_analyses_like_the_reference(batches: int) -> None:
    texts = [
        "Running runners ran; IL-10 and T-cell/B levels",
        f"{_LONG_ASCII} plain ascii {_LONG_ASCII}-tail",
        f"Café crème, naïve {_LONG_OTHER} IL-10 “quoted” running",
        "数据库 検索 the and of",  # characters in pairs; stopwords only besides
        "",
        f"{_LONG_OTHER} {_LONG_ASCII} running",
    ]
    vocabulary = Vocabulary()
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for part in np.array_split(np.arange(len(texts)), batches):
        found.append(vocabulary.encode_many([texts[i] for i in part.tolist()]))
        found[-1] = (found[-1][0], part[found[-1][1]], found[-1][2])
    ids = np.concatenate([f[0] for f in found])
    owners = np.concatenate([f[1] for f in found])
    terms = vocabulary.terms
    assert len(set(terms)) == len(terms)
    for row, text in enumerate(texts):
        assert sorted(terms[i] for i in ids[owners == row].tolist()) == sorted(analyze(text)), text
    for text in texts:  # a text seen before gives the same ids again, and learns nothing
        again, _, _ = vocabulary.encode_many([text])
        assert sorted(vocabulary.term(i) for i in again.tolist()) == sorted(analyze(text))
    assert vocabulary.terms == terms
    query = f"running café {_LONG_OTHER} il10 unknownword the"
    expected = [terms.index(t) for t in analyze(query) if t in terms]
    assert [i for i in vocabulary.encode_query(query) if i is not None and i >= 0] == expected
    restored = pickle.loads(pickle.dumps(vocabulary))
    assert [i for i in restored.encode_query(query) if i is not None and i >= 0] == expected


def test_metadata_of_any_size_survives_packing() -> None:
    records = PackedRecords()
    # Serialised metadata of 0, ~250, 254-256 and ~70,000 bytes: the length trailer's two forms.
    metadatas: list[dict[str, MetadataValue]] = [{}, {"k": ""}]
    metadatas += [{"k": "v" * n} for n in range(240, 262)]
    metadatas += [{"k": "w" * 70_000, "n": -(2**70), "l": [1.5, "\ud800"]}]
    records_in = [(f"text {i} \udfff é", metadata) for i, metadata in enumerate(metadatas)]
    records.write(np.arange(len(records_in), dtype=np.int64), [t for t, _ in records_in], metadatas)
    assert records.read_many(range(len(records_in))) == records_in
    assert [records.read(i) for i in range(len(records_in))] == records_in
    records.write(np.array([0]), [""], [{}])
    assert records.read(0) == ("", {}) and records.metadata(24) == metadatas[24]


def test_an_int_column_keeps_nine_bytes_a_row() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        columns = MetadataColumns()
        columns.write(np.arange(20_000, dtype=np.int64), [{"n": i} for i in range(20_000)])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # A kind byte and a float64 per row (with the growth slack of the arrays): no string codes and no
    # rows of list items, which an int column never uses (21 bytes a row before).
    assert held / 20_000 < 12


def test_a_column_of_small_ints_keeps_two_bytes_a_row() -> None:
    columns = MetadataColumns()  # built outside the trace: only the column's arrays are measured
    columns.write(np.arange(1), [{"bucket": 0}])
    gc.collect()
    tracemalloc.start()
    try:
        columns.write(np.arange(1, 20_000, dtype=np.int64), [{"bucket": i % 100} for i in range(1, 20_000)])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # A kind byte and an int8 per row (with the growth slack of the arrays); a float64 took 9 bytes.
    assert held / 20_000 < 3.5


def test_whole_number_columns_widen_as_values_need_and_filter_exactly() -> None:
    rows: list[dict[str, MetadataValue]] = []
    columns = MetadataColumns()
    batches: list[list[dict[str, MetadataValue]]] = [
        [{"v": i} for i in range(-3, 4)] + [{"v": True}, {"v": 127}, {"v": -128}, {}],
        [{"v": 128}, {"v": -129}, {"v": 32767.0}],  # past int8: int16
        [{"v": 2**31 - 1}, {"v": -(2**31)}, {"v": "s"}],  # past int16: int32
        [{"v": 2**31}, {"v": -0.0}],  # past int32: float64
        [{"v": 2.5}, {"v": float("nan")}, {"v": 2**60 + 1}],
    ]
    filters: list[Filter] = [
        key("v") == 3,
        key("v") > 127.5,
        key("v") >= 128,
        key("v") < -128,
        key("v") <= -(2**31),
        key("v") == 2**31,
        key("v").in_([-129, 2**31 - 1, 0.5, 2**60 + 1]),
        key("v") != 0,
        key("v") == True,  # noqa: E712 - a filter tree, not a comparison
        key("v") > 2**62,
    ]
    for batch in batches:
        columns.write(np.arange(len(rows), len(rows) + len(batch), dtype=np.int64), batch)
        rows.extend(batch)
        metadata = np.empty(len(rows), dtype=object)
        metadata[:] = rows
        for tree in filters:
            assert columns.mask(tree, len(rows), metadata.__getitem__).tolist() == [
                matches(tree, r) for r in rows
            ], tree


def test_columns_that_gain_new_kinds_of_values_filter_like_the_reference() -> None:
    rows: list[dict[str, MetadataValue]] = []
    columns = MetadataColumns()
    batches: list[list[dict[str, MetadataValue]]] = [
        [{"v": i} for i in range(5)],  # ints only: no string codes yet
        [{"v": "b"}, {"v": True}, {"w": "x"}, {"v": 2**60 + 1}],
        [{"v": ["a", 3]}, {"v": "a"}, {"v": 2.5}, {}],
    ]
    for batch in batches:
        columns.write(np.arange(len(rows), len(rows) + len(batch), dtype=np.int64), batch)
        rows.extend(batch)
    filters: list[Filter] = [
        key("v") == 3,
        key("v") == "a",
        key("v") == True,  # noqa: E712 - a filter tree, not a comparison
        key("v") > 2,
        key("v") >= "a",
        key("v").contains("a"),
        key("v").contains(3),
        key("v").in_([1, "b", 2**60 + 1]),
        key("w") == "x",
        key("v") != 3,
    ]
    metadata = np.empty(len(rows), dtype=object)
    metadata[:] = rows
    for tree in filters:
        expected = [matches(tree, row) for row in rows]
        assert columns.mask(tree, len(rows), metadata.__getitem__).tolist() == expected, tree
    # Moving the last rows into holes keeps every kind of value with its row.
    dead = np.zeros(len(rows), np.bool_)
    dead[[1, 6]] = True
    new_size = len(rows) - 2
    holes = np.flatnonzero(dead[:new_size])
    tails = new_size + np.flatnonzero(~dead[new_size:])
    columns.remove(holes, tails, dead, new_size)
    moved = list(rows)
    for hole, tail in zip(holes.tolist(), tails.tolist(), strict=True):
        moved[hole] = moved[tail]
    moved = moved[:new_size]
    metadata = np.empty(new_size, dtype=object)
    metadata[:] = moved
    for tree in filters:
        assert columns.mask(tree, new_size, metadata.__getitem__).tolist() == [
            matches(tree, row) for row in moved
        ], tree


def test_offsets_widen_to_int64_past_their_narrow_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idmap, "NARROW_OFFSETS", 300)  # 4 GiB of ids or texts, scaled down
    ids = idmap.PackedIds()
    names = [f"id-{n}-é" for n in range(60)]  # ~10 bytes each: the offsets pass 300 on the way
    for part in (names[:20], names[20:]):
        ids.append(part)
    assert ids.rows_of([names[5], names[55], "nope"]).tolist() == [5, 55, -1]
    assert ids.live_ids() == names
    records = PackedRecords()
    texts: list[tuple[str, dict[str, MetadataValue]]] = [(f"text {n} " * 5, {"n": n}) for n in range(30)]
    records.write(np.arange(5, dtype=np.int64), [t for t, _ in texts[:5]], [m for _, m in texts[:5]])
    records.write(np.arange(5, 30, dtype=np.int64), [t for t, _ in texts[5:]], [m for _, m in texts[5:]])
    assert records.read_many(range(30)) == texts


def test_records_share_key_sequences_and_keep_key_order() -> None:
    # The records number 4,096 key sequences; past them, a record holds its keys itself.
    metadatas: list[dict[str, MetadataValue]] = [
        *({f"k{n}": n} for n in range(4093)),
        {"a": 1, "b": "x"},
        {"b": "x", "a": 1},  # same keys, other order: another sequence
        {"a": 2, "b": "y"},
        {"c": [1, 2]},  # the 4,096th sequence
        {"d": True},  # the table is full: keys go into the record
        {"e": 1.5, "a": -(2**80)},
        {"a": 3, "b": "z"},
    ]
    records = PackedRecords()
    records.write(np.arange(len(metadatas), dtype=np.int64), ["t"] * len(metadatas), metadatas)
    assert records.key_sets()[-3:] == [("a", "b"), ("b", "a"), ("c",)]
    assert ("d",) not in records.key_sets() and ("e", "a") not in records.key_sets()
    found = [metadata for _, metadata in records.read_many(range(len(metadatas)))]
    assert [list(m.items()) for m in found] == [list(m.items()) for m in metadatas]
    one_key = PackedRecords()
    one_key.write(np.arange(1000, dtype=np.int64), [""] * 1000, [{"bucket": n % 7} for n in range(1000)])
    # Per record: the key sequence's number, a tuple of one small int, the length trailer.
    assert one_key.nbytes - 1000 * 8 <= 1000 * 9


def _zipf_texts(count: int, seed: int) -> list[str]:
    """Chunks of 30-50 words drawn Zipf-like from 3,000: most terms occur once in a chunk, a few often."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(3000)]
    texts = []
    for size in rng.integers(30, 51, size=count).tolist():
        ranks = np.minimum(rng.zipf(1.1, size=size), len(vocabulary)) - 1
        texts.append(" ".join(vocabulary[r] for r in ranks.tolist()))
    return texts


class _Ones:
    name = "ones-8"
    dimensions = 8

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 8), np.float32)


def test_a_store_filled_by_adds_keeps_no_row_map_arrays() -> None:
    texts = _zipf_texts(20_000, 2)
    documents = [
        Document(f"doc-{i:06d}", text, {"n": i % 7}, embedding=np.ones(8, np.float32))
        for i, text in enumerate(texts)
    ]
    gc.collect()
    tracemalloc.start()
    try:
        store = NumpyVectorStore(_Ones())
        store.add(documents[:12_000])
        store.add(documents[12_000:])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    beyond = held - 20_000 * 8 * 4 - sum(len(text) for text in texts)
    # Everything beside vectors and texts: 108 bytes a document here (ids, BM25 postings, metadata,
    # a filter column); with two int32 row maps, wider postings and lengths it was 125.
    assert beyond / 20_000 < 116


def test_documents_with_embeddings_leave_nothing_behind_once_dropped() -> None:
    vectors = np.ones((20_000, 8), np.float32)

    def make_and_drop() -> None:
        documents = [Document(f"d{i}", "text", embedding=vectors[i]) for i in range(20_000)]
        del documents
        gc.collect()

    # A first round outside the trace fills the interpreter's free lists, which otherwise count as
    # "left" (about 1 KB, depending on what the tests before this one emptied).
    make_and_drop()
    tracemalloc.start()
    try:
        make_and_drop()
        left = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # `flags.writeable = False` left ~24 KB of small objects per 20,000 documents in numpy 2 (over one
    # byte a document), scattered over the arenas the documents filled, which then stayed resident
    # after they were dropped. Setting the flag with `setflags` leaves nothing per document.
    assert left < 4000


def test_records_in_row_order_keep_one_offset_a_row_and_read_back_after_any_write() -> None:
    records = PackedRecords()
    expected: list[tuple[str, dict[str, MetadataValue]]] = [(f"text {n}", {"n": n}) for n in range(300)]

    def write(rows: range, items: list[tuple[str, dict[str, MetadataValue]]]) -> None:
        records.write(
            np.arange(rows.start, rows.stop, dtype=np.int64), [t for t, _ in items], [m for _, m in items]
        )

    def offsets() -> int:  # bytes held beside the live records (garbage and offsets)
        return records.nbytes - len(records.packed()[0])

    write(range(200), expected[:200])
    write(range(200, 300), expected[200:])
    # Appended in row order: each record starts where the one before it ends, so no start is kept.
    assert offsets() < 6 * 300  # 4 bytes of offsets a row (and the growth slack), not 8
    assert records.read_many(range(300)) == expected and records.read(0) == expected[0]
    replaced: tuple[str, dict[str, MetadataValue]] = ("replaced", {"n": -1})
    write(range(5, 6), [replaced])  # an upsert: row 5's bytes move to the end
    expected[5] = replaced
    assert offsets() > 8 * 300 and records.read_many(range(300)) == expected
    records.compact()  # back to back in row order again
    assert offsets() < 6 * 300 and records.read_many(range(300)) == expected
    dead = np.zeros(300, np.bool_)
    dead[[0, 7, 299]] = True
    holes, tails = np.array([0, 7]), np.array([297, 298])
    records.remove(np.flatnonzero(dead), holes, tails, 297)
    expected[0], expected[7] = expected[297], expected[298]
    assert [records.read(row) for row in range(297)] == expected[:297]
    write(range(297, 400), [("new", {"n": n}) for n in range(103)])
    assert records.read_many(range(400)) == expected[:297] + [("new", {"n": n}) for n in range(103)]


def test_records_rewrite_themselves_once_most_of_the_buffer_is_garbage() -> None:
    records = PackedRecords()
    small: list[tuple[str, dict[str, MetadataValue]]] = [(f"text {n}", {"n": n}) for n in range(100)]
    records.write(np.arange(100, dtype=np.int64), [t for t, _ in small], [m for _, m in small])

    def beside_live() -> int:  # bytes held beside the live records (garbage and offsets)
        return records.nbytes - len(records.packed()[0])

    for _ in range(2):  # garbage twice the live bytes, yet too little to be worth a rewrite: kept
        records.write(np.arange(100, dtype=np.int64), [t for t, _ in small], [m for _, m in small])
    assert beside_live() > 2 * len(records.packed()[0])
    records.write(np.array([100]), ["x" * (1 << 19)], [{"n": 100}])
    records.write(np.array([100]), ["y" * (1 << 19)], [{"n": 100}])  # half a MiB more: kept
    assert beside_live() > 1 << 19
    records.write(np.array([100]), ["short"], [{"n": 100}])  # a MiB of garbage, most of the buffer
    assert beside_live() < 8 * 101  # rewritten back to back: offsets only
    assert records.read_many(range(101)) == [*small, ("short", {"n": 100})]
