"""The filter columns beside a Chroma collection (`stores.chroma.columns`, issue 17): filters decided in
numpy, Chroma asked only for the eligible ids, and the columns kept equal to the collection across
writes, reopenings, raw chromadb writes, crashes and other processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, HashingEmbedding, SearchRequest
from rag.filters import matches, parse
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.client import close_client
from stores.chroma.columns import FILE, LEGACY_FILE, FilterColumns
from stores.chroma.lexical import FOLDER, STATE_KEY
from stores.numpy.columns_file import unpack_strings

MODEL = HashingEmbedding(dimensions=32)
ROOT = Path(__file__).resolve().parents[2]
# A string ordering on a long operand: Chroma's order codes narrow it, Python would have to finish it.
LONG = "name >= 'n0050-and-a-long-tail-beyond-fifteen-bytes'"


def _docs(count: int = 600) -> list[Document]:
    return [
        Document(
            f"d{i:04d}",
            f"text {i} word{i % 7}",
            {"n": i, "bucket": i % 10, "name": f"n{(i * 37) % count:04d}", "date": f"20{10 + i % 15}-01-01"},
        )
        for i in range(count)
    ]


class _Spy:
    """Wraps a chromadb collection; records each call's method name and whether it passed `where`."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.calls: list[tuple[str, bool]] = []
        self.query_ids: list[int | None] = []  # how many ids each query was restricted to
        self.before_query: Any = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, kwargs.get("where") is not None))
            if name == "query":
                self.query_ids.append(None if kwargs.get("ids") is None else len(kwargs["ids"]))
            if name == "query" and self.before_query is not None:
                hook, self.before_query = self.before_query, None
                hook()
            return method(*args, **kwargs)

        return call


def _spied(store: ChromaVectorStore) -> _Spy:
    spy = _Spy(store._collection)
    store._collection = store._nearest.collection = spy
    return spy


def test_filters_on_an_embedded_store_make_no_where_call(tmp_path: Path) -> None:
    # Before: every filtered count, get, search and delete sent Chroma a `where` (54x numpy at 20k).
    reference = NumpyVectorStore(MODEL)
    reference.add(_docs())
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=20) as store:
        store.add(_docs())
        store.similarity_search("warm up")  # learns the collection is large (HNSW path)
        spy = _spied(store)
        for text in ("bucket < 3", "date >= '2020-01-01'", LONG, "n == 7 OR name IS NULL"):
            expected = [d.id for d in reference.get(filter=text)]
            assert store.count(text) == len(expected)
            assert [d.id for d in store.get(filter=text)] == expected
            found = store.similarity_search(SearchRequest("word3", top_k=5, filter=text))
            assert {d.id for d in found} <= set(expected) and len(found) == min(5, len(expected))
        assert store.delete(filter="bucket == 9") == reference.delete(filter="bucket == 9") == 60
        assert store.count("bucket >= 0") == 540
        assert spy.calls and [call for call in spy.calls if call[1]] == []  # no `where` at all


def test_a_filter_matching_nothing_makes_no_chroma_call(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=20) as store:
        store.add(_docs())
        store.similarity_search("warm up")
        spy = _spied(store)
        for mode in ("vector", "hybrid"):
            assert store.similarity_search(SearchRequest("word3", filter="n > 10000", mode=mode)) == []
        assert store.count("n > 10000") == 0 and store.get(filter="n > 10000") == []
        assert spy.calls == []


def test_a_broad_filter_is_one_unrestricted_query(tmp_path: Path) -> None:
    # Chroma's cost for `ids=` grows with their number: 90% of the records are better filtered after.
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=20) as store:
        store.add(_docs())
        store.similarity_search("warm up")
        spy = _spied(store)
        for mode in ("vector", "hybrid"):
            found = store.similarity_search(SearchRequest("word3", top_k=8, filter="bucket != 0", mode=mode))
            assert len(found) == 8 and all(d.metadata["bucket"] != 0 for d in found)
        assert spy.query_ids == [None, None]  # and one `get` of the vector hits' texts
        assert [call for call in spy.calls if call[1]] == []  # and no `where`


def test_a_broad_filter_whose_matches_are_far_asks_again_with_the_ids(tmp_path: Path) -> None:
    docs = [Document(f"z{i:03d}", "zebra stripes", {"x": 0}) for i in range(30)]
    docs += [Document(f"o{i:03d}", f"other text {i}", {"x": 1}) for i in range(300)]
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=20) as store:
        store.add(docs)
        store.similarity_search("warm up")
        spy = _spied(store)
        found = store.similarity_search(SearchRequest("zebra stripes", top_k=5, filter="x == 1"))
        assert len(found) == 5 and all(d.id.startswith("o") for d in found)
        assert spy.query_ids == [None, 300]  # the 22 nearest were all zebras: asked again by ids


def _token(store: ChromaVectorStore) -> str:
    token = store._access.metadata()[STATE_KEY]
    assert isinstance(token, str)
    return token


def test_the_columns_are_saved_with_the_token_and_loaded_on_reopening(tmp_path: Path) -> None:
    reference = NumpyVectorStore(MODEL)
    reference.add(_docs())
    reference.delete(["d0001"])
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs())
        store.delete(["d0001"])
        token = _token(store)
    saved = tmp_path / FOLDER / "rag" / token / FILE
    with np.load(saved) as arrays:
        assert len(unpack_strings(arrays["ids"], arrays["ids_ends"])) == 599
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(LONG) == reference.count(LONG) > 0
        assert [d.id for d in store.get(filter="bucket == 1")] == [
            d.id for d in reference.get(filter="bucket == 1")
        ]
        assert store._lexical.rebuilds == 0  # loaded, not read from Chroma


def test_a_save_without_columns_is_rebuilt(tmp_path: Path) -> None:
    # A folder saved by the version before the columns holds only the BM25 index.
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs())
        token = _token(store)
    (tmp_path / FOLDER / "rag" / token / FILE).unlink()
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count("bucket == 4") == 60 and store._lexical.rebuilds == 1
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count("bucket == 4") == 60 and store._lexical.rebuilds == 0  # saved again, whole


def test_a_raw_chromadb_write_makes_the_saved_columns_stale(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(50))
    client: Any = chromadb.PersistentClient(path=str(tmp_path), settings=Settings(anonymized_telemetry=False))
    raw = client.get_collection("rag")
    raw.add(ids=["raw"], embeddings=MODEL.embed(["raw text"]), metadatas=[{"bucket": 3, "extra": "x"}])
    client.close()
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count("bucket == 3") == 6  # the token did not move, the count did: rebuilt
        assert [d.id for d in store.get(filter="extra == 'x'")] == ["raw"]
        assert store._lexical.rebuilds == 1


_WRITER = """
import os, sys
from rag import Document, HashingEmbedding
from stores import ChromaVectorStore
store = ChromaVectorStore(HashingEmbedding(dimensions=32), path=sys.argv[1])
store.add([Document("late", "late text", {"bucket": 3, "name": "zzz"})])
store.delete(filter="bucket == 1")
os._exit(0)  # a crash: neither close() nor the exit handlers save anything
"""


def test_a_crash_between_a_write_and_the_save_costs_a_rebuild(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(50))
    env = {"PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path)], check=True, env=env, timeout=120)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count("bucket == 3") == 6 and store.count("bucket == 1") == 0
        assert [d.id for d in store.get(filter="name >= 'zz'")] == ["late"]
        assert store._lexical.rebuilds == 1


def _server_writer(url: str, code: str) -> None:
    script = textwrap.dedent(f"""
        from rag import Document, HashingEmbedding
        from stores import ChromaVectorStore
        with ChromaVectorStore(HashingEmbedding(dimensions=32), collection="cols", url={url!r}) as store:
            {code}
    """)
    env = {"PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)


def test_a_server_store_sees_another_process_write(chroma_server: str) -> None:
    with ChromaVectorStore(MODEL, collection="cols", url=chroma_server, ef_search=20) as store:
        store.delete(filter="n >= 0")
        store.add(_docs(100))
        assert store.count(LONG) == 49  # Chroma cannot finish this alone: the columns are built
        built = store._lexical.rebuilds
        _server_writer(chroma_server, 'store.add([Document("new", "word3", {"name": "z", "n": 1000})])')
        assert store.count(LONG) == 50 and store._lexical.rebuilds == built + 1  # the token moved on
        spy = _spied(store)
        assert store.count("n > 999") == 1 and spy.calls == []  # current columns: no Chroma call
        _server_writer(chroma_server, 'store.delete(["new"])')
        assert store.count("n > 999") == 0 and spy.calls == [("get", True)]  # stale: `where` decides
        found = store.similarity_search(SearchRequest("word3", top_k=3, filter=LONG))
        assert "new" not in {d.id for d in found} and len(found) == 3


@pytest.mark.parametrize("delete", [False, True])
def test_records_changed_between_the_token_check_and_the_query_never_reach_an_answer(
    chroma_server: str, delete: bool
) -> None:
    import chromadb

    host, port = chroma_server.removeprefix("http://").split(":")
    name = f"race-{delete}".lower()
    with ChromaVectorStore(
        MODEL, collection=name, url=chroma_server, ef_search=20, exact_copy=False
    ) as store:
        store.add(_docs(100))
        request = SearchRequest("word3", top_k=100, filter=LONG)
        eligible = {d.id for d in store.similarity_search(request)}
        assert len(eligible) == 49
        gone, changed = sorted(eligible)[:2]
        client: Any = chromadb.HttpClient(host=host, port=int(port))
        try:
            other = client.get_collection(name)
            spy = _spied(store)

            def meanwhile() -> None:  # another process, after the columns chose the ids
                other.update(ids=[changed], metadatas=[{"_rag_meta": json.dumps({"name": "a"}), "name": "a"}])
                if delete:
                    other.delete(ids=[gone])

            spy.before_query = meanwhile
            found = {d.id for d in store.similarity_search(request)}
            if delete:
                # Chroma refused the lost id; the store built the columns again and asked once more.
                assert found == eligible - {gone, changed}
                assert [name for name, _ in spy.calls].count("query") == 2
            else:
                # The changed record comes back with its new metadata and is dropped from the answer.
                assert found == eligible - {changed}
                assert [name for name, _ in spy.calls].count("query") == 1
        finally:
            close_client(client)  # chromadb leaves its HTTP pools open otherwise


def test_filter_columns_agree_with_the_reference_through_writes_and_deletes() -> None:
    rng = np.random.default_rng(11)
    values: list[Any] = [1, 2.5, -3, 2**60, 2**60 + 1, "a", "b", "ab", True, False, [1, "a"], [], [2**60]]
    columns, held = FilterColumns(), {}
    filters = [
        "k == 1",
        "k < 2.6",
        f"k >= {2**60 + 1}",
        "k > 'a'",
        "k == true",
        "k CONTAINS 'a'",
        f"k CONTAINS {2**60}",
        "k IS NULL",
        "k != 2.5 AND j IS NOT NULL",
        "NOT (k IN [1, 'b'] OR j < 0)",
    ]
    for _ in range(30):
        ids = [f"i{n}" for n in rng.choice(60, size=12, replace=False)]
        metadatas = [
            {name: values[rng.integers(len(values))] for name in ("k", "j") if rng.random() < 0.8}
            for _ in ids
        ]
        columns.write(ids, metadatas)
        held.update(zip(ids, metadatas, strict=True))
        doomed = [f"i{n}" for n in rng.choice(60, size=5, replace=False)]
        assert columns.delete(doomed) == sum(1 for i in doomed if i in held)
        for doc_id in doomed:
            held.pop(doc_id, None)
        assert len(columns) == len(held)
        for text in filters:
            tree = parse(text)
            expected = sorted(i for i, m in held.items() if matches(tree, m))
            assert sorted(columns.matching_ids(tree)) == expected, text
            assert columns.count(tree) == len(expected)
            assert columns.accepted(["nope", *sorted(held)], tree) == expected


def test_a_damaged_columns_file_is_not_loaded(tmp_path: Path) -> None:
    columns = FilterColumns()
    columns.write(["a", "b"], [{"n": 2**70, "s": "\ud800"}, {"n": [1.5, "x"]}])
    columns.save(tmp_path)
    loaded = FilterColumns.load(tmp_path)
    assert loaded is not None and loaded.matching_ids(parse(f"n == {2**70}")) == ["a"]
    assert loaded.matching_ids(parse("n CONTAINS 1.5")) == ["b"]
    # Saves of the first version (JSON) are read only when whole and of that format.
    (tmp_path / FILE).unlink()
    (tmp_path / LEGACY_FILE).write_text('{"format": "rag-chroma-filter-columns", "version": 1, "ids": ["a"]')
    assert FilterColumns.load(tmp_path) is None
    (tmp_path / LEGACY_FILE).write_text(
        json.dumps({"format": "other", "version": 1, "ids": [], "metadata": []})
    )
    assert FilterColumns.load(tmp_path) is None


@pytest.mark.parametrize("exact", [False, True])
def test_a_private_store_builds_the_columns_once_and_keeps_them(exact: bool) -> None:
    with ChromaVectorStore(MODEL, ef_search=20) as store:
        store.add(_docs(100))
        assert store._lexical.rebuilds == 0  # nothing needed them yet
        request = SearchRequest("word3", top_k=4, filter="bucket == 2", exact=exact)
        assert all(d.metadata["bucket"] == 2 for d in store.similarity_search(request))
        store.add([Document("x", "word3", {"bucket": 2})])
        store.delete(["d0002"])
        assert store.count("bucket == 2") == 10 and store._lexical.rebuilds == 1
