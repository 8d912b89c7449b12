"""The numpy store's memory layout: packed records, the shared id map, narrow postings, and that none of
it changes what the store answers or what an older save loads as."""

from __future__ import annotations

import enum
import gc
import json
import os
import pickle
import shutil
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import Document, SearchRequest
from rag.documents import MetadataValue
from rag.filters import key
from rag.testing import FakeEmbedding
from stores.lexical import LexicalIndex, idmap
from stores.lexical.segments import build, merge
from stores.numpy.records import PackedRecords
from stores.numpy.search import candidate_positions, rank_rows
from stores.numpy.store import NumpyVectorStore

DATA = Path(__file__).parent / "data"
OLD_SAVE = DATA / "numpy_store_v1"
IDS = ["a", "b", "é", "\ud800", "ab", "ba", "abc", "x" * 40]
WORDS = ["harbour", "lantern", "keeper", "tide", "fog", "ledger", "signal", "storm"]


def _answers(store: NumpyVectorStore) -> dict[str, object]:
    """The same questions `numpy_store_v1.answers.json` holds the old store's answers to."""
    out: dict[str, object] = {"get": [[d.id, d.text, repr(d.metadata)] for d in store.get()]}
    requests = {
        "vector": SearchRequest("keeper lantern", top_k=10),
        "lexical": SearchRequest("storm keeper", top_k=10, mode="lexical"),
        "hybrid": SearchRequest("storm fog", top_k=10, mode="hybrid"),
        "hybrid filtered": SearchRequest("storm fog", top_k=10, mode="hybrid", filter=key("n") > 10),
        "weighted": SearchRequest("tide ledger", top_k=10, mode="hybrid", fusion="weighted"),
        "mmr": SearchRequest("signal", top_k=5, mode="hybrid", diversity=0.5),
    }
    for name, request in requests.items():
        out[name] = [[d.id, d.score, repr(d.metadata)] for d in store.similarity_search(request)]
    out["count even"] = store.count(key("even") == True)  # noqa: E712 - a filter tree, not a comparison
    return out


_NOT_LEXICAL = {"get", "vector", "count even"}


def test_a_folder_saved_by_the_previous_layout_loads_with_the_same_answers(tmp_path: Path) -> None:
    # numpy_store_v1 was written by the store before records were packed (commit 1165268), and the
    # answers file holds that version's answers on it: ints beyond float64, -0.0, key order, a term
    # repeated 300 times, deleted and replaced documents.
    # The lexical analysis changed since (rag-en-2: stems, compounds, k1/b, titles), so the old BM25
    # index is rebuilt on load: answers that rank lexically must equal a store built afresh from the same
    # documents; the rest must equal the old version's answers.
    folder = shutil.copytree(OLD_SAVE, tmp_path / "store")
    recorded = json.loads((DATA / "numpy_store_v1.answers.json").read_text(encoding="utf-8"))
    store = NumpyVectorStore.load(folder, FakeEmbedding(8))
    fresh = NumpyVectorStore(FakeEmbedding(8))
    fresh.add(store.get(include_embeddings=True))
    rebuilt = json.loads(json.dumps(_answers(fresh)))
    expected = {name: recorded[name] if name in _NOT_LEXICAL else rebuilt[name] for name in recorded}
    assert json.loads(json.dumps(_answers(store))) == expected
    store.save()  # and it saves again in the same format, which loads to the same answers
    assert json.loads(json.dumps(_answers(NumpyVectorStore.load(folder, FakeEmbedding(8))))) == expected


def test_metadata_types_and_key_order_survive_packing() -> None:
    metadata: dict[str, MetadataValue] = {
        "z": 1,
        "big": -(2**80),
        "neg_zero": -0.0,
        "flag": False,
        "s": "\ud800 lone",
        "l": [1, 2.0, "x"],
    }
    store = NumpyVectorStore(FakeEmbedding(8))
    store.add([Document("a", "text \udfff", metadata, embedding=np.eye(8, dtype=np.float32)[0])])
    [doc] = store.get(["a"])
    assert list(doc.metadata) == list(metadata) and repr(doc.metadata) == repr(metadata)
    assert [type(v) for v in doc.metadata["l"]] == [int, float, str]  # type: ignore[union-attr]
    assert doc.text == "text \udfff"
    doc.metadata["z"] = 99  # a returned dict is the caller's own
    assert store.get(["a"])[0].metadata["z"] == 1


def test_records_rewrite_their_buffer_when_garbage_outweighs_live_bytes() -> None:
    records = PackedRecords()
    rows = np.arange(100, dtype=np.int64)
    for round_ in range(200):  # 200 rewrites of 100 records of ~1 kB: 20 MB written in all
        records.write(
            rows, [f"{round_}-{row}-" + "x" * 1000 for row in range(100)], [{"round": round_}] * 100
        )
    assert records.nbytes < 4 * 100 * 1100  # garbage was dropped along the way
    assert records.read(42) == ("199-42-" + "x" * 1000, {"round": 199})
    records.remove(np.array([0, 1]), np.array([0, 1]), np.array([98, 99]), 98)
    assert len(records) == 98 and records.read(1) == ("199-99-" + "x" * 1000, {"round": 199})


def _docs(count: int, start: int = 0) -> list[Document]:
    rng = np.random.default_rng(start)
    vectors = rng.standard_normal((count, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        Document(
            f"d{start + i:05d}", " ".join(rng.choice(WORDS, size=6).tolist()), {"n": start + i}, embedding=v
        )
        for i, v in enumerate(vectors)
    ]


def test_ids_find_their_rows_after_the_lexical_index_renumbers() -> None:
    store = NumpyVectorStore(FakeEmbedding(8))
    docs = _docs(3000)
    store.add(docs)
    gone = [d.id for d in docs[::3]] + [d.id for d in docs[1::3]]
    assert store.delete(gone) == 2000
    probe = LexicalIndex()  # the same writes on an index alone: 2,000 dead of 3,000 renumber its rows
    probe.add([d.id for d in docs], [d.text for d in docs])
    probe.delete(gone)
    assert probe.renumberings == 1
    kept = docs[2::3]
    store.add(_docs(10, start=5000))  # and rows keep linking after it
    fresh = NumpyVectorStore(FakeEmbedding(8))
    fresh.add(kept + _docs(10, start=5000))
    assert [d.id for d in store.get([d.id for d in kept[::-1]])] == [d.id for d in kept[::-1]]
    for request in (
        SearchRequest("storm fog", top_k=20, mode="hybrid", filter=key("n") < 2500),
        SearchRequest("keeper", top_k=20, mode="lexical"),
        SearchRequest("x", top_k=20),
    ):
        assert [(d.id, d.score, d.text) for d in store.similarity_search(request)] == [
            (d.id, d.score, d.text) for d in fresh.similarity_search(request)
        ]
    assert store.delete([kept[5].id, "unknown"]) == 1 and store.get([kept[5].id]) == []


def test_term_frequencies_of_any_size_survive_a_save(tmp_path: Path) -> None:
    texts = ["storm fog", "storm " * 300, "fog " * 70_000]
    index = LexicalIndex()
    index.add([f"d{i}" for i in range(len(texts))], texts)
    scores = index.search("storm fog", top_k=3)
    index.save(tmp_path / "index")
    loaded = LexicalIndex.load(tmp_path / "index")
    assert loaded.search("storm fog", top_k=3) == scores


def test_merged_segments_narrow_again() -> None:
    wide = build(np.array([0] * 300, np.int32), np.zeros(300, np.int64), 1, first_row=0)
    narrow = build(np.array([0, 1], np.int32), np.array([0, 0]), 1, first_row=1)
    assert wide.tfs.dtype == np.uint16 and narrow.tfs.dtype == np.uint8
    live = np.array([False, True])
    assert merge([wide, narrow], live).tfs.dtype == np.uint8  # the 300 belonged to a dead row


@pytest.mark.parametrize("count", [10_000, 70_000, 400_000])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_candidate_positions_hold_the_top_k(count: int, k: int) -> None:
    rng = np.random.default_rng(count + k)
    scores = rng.standard_normal((2, count)).astype(np.float32)
    scores[1, rng.integers(0, count, size=50)] = scores[1].max()  # ties at the top
    for row, positions in zip(scores, candidate_positions(scores, k), strict=True):
        kth = np.sort(row)[-k]
        assert set(np.flatnonzero(row >= kth).tolist()) <= set(positions.tolist())
        assert len(positions) < max(4 * k, 200)  # and the bound stays tight


def test_rank_rows_break_ties_by_id_and_honour_the_threshold() -> None:
    matrix = np.repeat(np.eye(4, dtype=np.float32)[:1], 6, axis=0)
    matrix[5] = np.eye(4, dtype=np.float32)[1]
    ids = np.array(["f", "e", "d", "c", "b", "a"], dtype=object)
    rows = np.arange(6, dtype=np.int64)
    query = np.eye(4, dtype=np.float32)[0]

    def ranked(k: int, threshold: float = 0.0) -> list[tuple[int, float]]:
        found, scores = rank_rows(matrix, rows, query, k, lambda tied: list(ids[tied]), threshold)
        return list(zip(found.tolist(), scores.tolist(), strict=True))

    assert ranked(3) == [(4, 1.0), (3, 1.0), (2, 1.0)]
    assert ranked(10, threshold=0.5) == [(4, 1.0), (3, 1.0), (2, 1.0), (1, 1.0), (0, 1.0)]
    assert ranked(10)[-1] == (5, 0.0)


def test_the_store_keeps_no_python_object_per_document_beyond_its_id() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20_000, 8)).astype(np.float32)
    texts = [" ".join(rng.choice(WORDS, size=6).tolist()) for _ in range(20_000)]
    tracemalloc.start()
    try:
        docs = [
            Document(f"d{i:05d}", text, {"n": i}, embedding=v)
            for i, (text, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        store = NumpyVectorStore(FakeEmbedding(8))
        store.add(docs)
        del docs
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    beyond = held - vectors.nbytes - sum(len(text) for text in texts)
    # Per document beyond its vector and text: the id and its map entries, packed metadata and offsets,
    # postings. Dicts and strs per document (an earlier layout) put this at ~430 bytes; the packed
    # layout at ~115, with 21 bytes of metadata columns and marshal's framing of each record; now ~87.
    assert beyond / len(store) < 100


def _crc32(doc_id: str) -> int:
    return zlib.crc32(doc_id.encode("utf-8", "surrogatepass"))


# The id map keys ids by CRC-32 (its documented hash). "plumless" and "buckeroo" share one; a CRC's
# state after equal-length inputs with one CRC is the same, so any prefix or suffix keeps them colliding.
_PAIR = ("plumless", "buckeroo")
COLLIDING = [
    *(a + b for a in _PAIR for b in _PAIR),  # four ids, one hash
    *("é" + a for a in _PAIR),
    *("\ud800" + a for a in _PAIR),
    "a",
]


def test_the_colliding_ids_collide() -> None:
    groups = {_crc32(i) for i in COLLIDING}
    assert len(groups) == 4 and [_crc32(i) for i in COLLIDING].count(_crc32("plumlessplumless")) == 4


@pytest.mark.parametrize("pool", [IDS, COLLIDING], ids=["distinct", "colliding"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_packed_ids_agree_with_a_dict(pool: list[str], data: st.DataObject) -> None:
    steps = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["add", "kill", "renumber"]), st.lists(st.sampled_from(pool))),
            max_size=40,
        )
    )
    packed, model = (
        idmap.PackedIds(),
        dict[str, int](),
    )  # model: id -> row, rows renumbered like the real thing
    order: list[str | None] = []
    for action, ids in steps:
        if action == "add":
            fresh = [i for i in dict.fromkeys(ids) if i not in model]
            packed.append(fresh)
            model.update({i: len(order) + n for n, i in enumerate(fresh)})
            order.extend(fresh)
        elif action == "kill":
            assert sorted(packed.kill(ids).tolist()) == sorted({model[i] for i in ids if i in model})
            for i in ids:
                if i in model:
                    order[model.pop(i)] = None
        else:
            packed.renumber()
            kept = [i for i in order if i is not None]
            model = {i: row for row, i in enumerate(kept)}
            order = list(kept)
        probe = list(pool)
        assert packed.rows_of(probe).tolist() == [model.get(i, -1) for i in probe]
        assert len(packed) == len(model) and packed.live_ids() == [i for i in order if i is not None]
        assert all(packed.id_at(row) == i for i, row in model.items())


def test_rows_follow_a_renumbering_during_an_upsert() -> None:
    store = NumpyVectorStore(FakeEmbedding(8))
    docs = _docs(1500)
    store.add(docs)
    probe = LexicalIndex()  # the same writes on an index alone renumber its rows once
    probe.add([d.id for d in docs], [d.text for d in docs])
    for round_ in range(2):  # the second upsert leaves 3,000 dead rows beside 1,500 live ones
        docs = [Document(d.id, f"{d.text} round{round_}", {"n": round_}, embedding=d.embedding) for d in docs]
        store.add(docs[::-1])
        probe.add([d.id for d in docs[::-1]], [d.text for d in docs[::-1]])
    assert probe.renumberings == 1
    fresh = NumpyVectorStore(FakeEmbedding(8))
    fresh.add(docs)
    assert [(d.id, d.text, d.metadata) for d in store.get()] == [
        (d.id, d.text, d.metadata) for d in fresh.get()
    ]
    request = SearchRequest("round1 storm", top_k=30, mode="hybrid", filter=key("n") == 1)
    assert [(d.id, d.score) for d in store.similarity_search(request)] == [
        (d.id, d.score) for d in fresh.similarity_search(request)
    ]


def test_an_index_over_many_rows_answers_like_one_batch(tmp_path: Path) -> None:
    count = 70_000
    texts = [f"w{n % 97} w{n % 13} common" for n in range(count)]
    index = LexicalIndex()
    index.add([f"a{n}" for n in range(40_000)], texts[:40_000])
    index.add([f"a{n}" for n in range(40_000, count)], texts[40_000:])
    assert index.segment_count == 2
    found = [index.search(q, 30) for q in ("w5 w7", "common w96")]
    at_once = LexicalIndex()
    at_once.add([f"a{n}" for n in range(count)], texts)  # one batch wider than a narrow segment: split
    assert [at_once.search(q, 30) for q in ("w5 w7", "common w96")] == found
    index.save(tmp_path / "index")
    loaded = LexicalIndex.load(tmp_path / "index")  # saved as one int32 segment, split again on load
    assert loaded.segment_count == 2
    assert [loaded.search(q, 30) for q in ("w5 w7", "common w96")] == found
    gone = [f"a{n}" for n in range(count) if n % 3 != 2]
    assert index.delete(gone) == len(gone) and index.renumberings == 1  # compacted
    fresh = LexicalIndex()
    fresh.add([f"a{n}" for n in range(2, count, 3)], texts[2::3])
    for query in ("w5 w7", "common w96"):
        assert index.search(query, 30) == fresh.search(query, 30)


def test_documents_without_terms_are_compacted_too() -> None:
    store = NumpyVectorStore(FakeEmbedding(8))
    docs = [Document(d.id, "", d.metadata, embedding=d.embedding) for d in _docs(3000)]  # no terms at all
    store.add(docs)
    assert store.delete([d.id for d in docs[:2000]]) == 2000
    probe = LexicalIndex()  # the same writes on an index alone: it renumbers though it holds no postings
    probe.add([d.id for d in docs], ["" for _ in docs])
    probe.delete([d.id for d in docs[:2000]])
    assert probe.row_count == 1000
    assert [d.id for d in store.get([docs[2500].id, docs[5].id])] == [docs[2500].id]
    assert store.count() == 1000 and store.get(limit=1)[0].id == docs[2000].id


def test_a_pickled_index_finds_its_ids_in_a_process_with_another_hash_salt(tmp_path: Path) -> None:
    index = LexicalIndex()
    index.add([f"id-{n}" for n in range(3000)], [f"word{n % 50} common" for n in range(3000)])
    index.delete(["id-7"])
    (tmp_path / "index.pickle").write_bytes(pickle.dumps(index))
    script = (
        "import pickle, sys\n"
        "index = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "print(index.rows_of(['id-0', 'id-7', 'id-2999', 'nope']).tolist(), 'id-5' in index, len(index))\n"
        "print([doc_id for doc_id, _ in index.search('word7 words', 2)])\n"  # terms are hashed again too
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "index.pickle")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows, found = done.stdout.splitlines()
    assert rows.split() == ["[0,", "-1,", "2999,", "-1]", "True", "2999"]
    assert found == str([doc_id for doc_id, _ in index.search("word7 words", 2)])


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 3


class _Text(str):
    def __str__(self) -> str:
        return "not the text"


def test_subclasses_of_plain_types_come_back_as_their_plain_values(tmp_path: Path) -> None:
    metadata: dict[str, MetadataValue] = {
        "f": np.float64(1.5),
        "s": np.str_("z"),
        "colour": _Colour.RED,
        "size": _Size.BIG,
        "odd": _Text("kept"),
        "items": [np.float64(2.5), _Colour.RED, 4],
        _Text("key"): 1,
    }
    store = NumpyVectorStore(FakeEmbedding(8))
    store.add([Document("x", _Text("body"), metadata, embedding=np.eye(8, dtype=np.float32)[0])])
    [doc] = store.get(["x"])
    expected = {
        "f": 1.5,
        "s": "z",
        "colour": "red",
        "size": 3,
        "odd": "kept",
        "items": [2.5, "red", 4],
        "key": 1,
    }
    assert doc.metadata == expected and doc.text == "body" and type(doc.text) is str
    assert [type(v) for v in doc.metadata.values()] == [float, str, str, int, str, list, int]
    assert all(type(name) is str for name in doc.metadata)
    store.save(tmp_path / "s")  # what a save and load gives back, too
    assert NumpyVectorStore.load(tmp_path / "s", FakeEmbedding(8)).get(["x"])[0].metadata == expected
