"""The records a store's sidecar keeps (`stores.chroma.kept`, saved in folders by
`stores.chroma.kept_file`), and the pages built from them.

A lexical or hybrid page over HTTP or in a folder is assembled from the kept records; these tests hold
it identical, field by field, to the page read from Chroma, for records of every metadata type, after
a close and reopen, and for records another tool wrote (read from Chroma and checked, never kept).
"""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import pytest

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore
from stores.chroma.client import close_client
from stores.chroma.columns import FilterColumns
from stores.chroma.kept import KeptRecords
from stores.chroma.kept_file import FILE as RECORDS_FILE
from stores.chroma.kept_file import SavedRecords, save_records
from stores.chroma.lexical import FOLDER

MODEL = HashingEmbedding(dimensions=32)

ODD = [
    Document("big", "omega big integers", {"n": 2**70, "neg": -(2**65)}),
    Document("zero", "omega negative zero", {"z": -0.0, "f": 1e-300, "b": True}),
    Document("lists", "omega lists", {"tags": ["a", 1, 2.5, False], "empty": []}),
    Document("surrogate", "omega lone \ud800 surrogate", {"k\udfff": "v\ud800"}),
    Document("plain", "omega plain", {}),
    Document("unicode", "omega ünïcødé 漢字 🙂", {"title": "Ω", "headings": ["α", "β"]}),
]


def _fields(docs: list[Document]) -> list[tuple[Any, ...]]:
    """Everything a caller sees, with types and the sign of zero (== would let 0.0 pass for -0.0)."""

    def exact(value: Any) -> Any:
        if isinstance(value, list):
            return [exact(item) for item in value]
        if isinstance(value, float):
            return (float, value.hex(), math.copysign(1.0, value))
        return (type(value), value)

    return [(d.id, d.text, {k: exact(v) for k, v in d.metadata.items()}, d.score) for d in docs]


def test_kept_records_replace_delete_and_read_fresh_copies() -> None:
    kept = KeptRecords()
    kept.write(["a", "b", "c"], ["one", "two", "three"], [{"n": 1}, {"n": 2}, {"l": [1]}])
    kept.write(["b", "d"], ["two again", "four"], [{"n": 20}, {}])
    assert kept.delete(["a", "missing"]) == 1 and len(kept) == 3 and "a" not in kept
    read = kept.read(["d", "c", "b", "a", "c"])
    assert read == {"d": ("four", {}), "c": ("three", {"l": [1]}), "b": ("two again", {"n": 20})}
    tags = read["c"][1]["l"]
    assert isinstance(tags, list)
    tags.append(2)  # a caller changing what it got never changes what is kept
    assert kept.read(["c"]) == {"c": ("three", {"l": [1]})}
    kept.write(["c", "e"], ["x", "y"], [{}, {}], trusted=[False, True])
    assert "c" not in kept and kept.read(["e", "d"]) == {"e": ("y", {}), "d": ("four", {})}
    assert kept.delete(["b", "d", "e"]) == 3 and len(kept) == 0 and kept.read(["b"]) == {}


def test_kept_records_survive_many_deletes_and_rewrites() -> None:
    # Rows move into holes and the buffer is compacted; every id must keep its own record.
    kept = KeptRecords()
    expected: dict[str, tuple[str, dict[str, Any]]] = {}
    for round_ in range(6):
        ids = [f"r{i}" for i in range(round_ * 300, round_ * 300 + 3000)]
        texts = [f"text {i} " * 40 + str(round_) for i in range(len(ids))]
        metas = [{"i": i, "round": round_} for i in range(len(ids))]
        kept.write(ids, texts, metas)
        expected.update({i: (t, m) for i, t, m in zip(ids, texts, metas, strict=True)})
        gone = ids[::3]
        kept.delete(gone)
        for doc_id in gone:
            del expected[doc_id]
    assert len(kept) == len(expected)
    assert kept.read(list(expected)) == expected


@pytest.mark.server
def test_pages_from_kept_records_equal_pages_read_from_chroma(chroma_server: str) -> None:
    filler = [Document(f"f{i:03d}", f"filler words {i} omega" * (i % 3), {"i": i}) for i in range(200)]
    with ChromaVectorStore(MODEL, url=chroma_server, collection="kept-equal", ef_search=50) as store:
        store.add([*filler, *ODD])
        _pages_agree(store, KeptRecords)
        sidecar = store._lexical._index
        assert sidecar is not None and sidecar.records is not None and len(sidecar.records) == 206


@pytest.mark.server
def test_records_another_tool_wrote_are_read_from_chroma_and_checked(chroma_server: str) -> None:
    with ChromaVectorStore(MODEL, url=chroma_server, collection="kept-foreign", ef_search=50) as store:
        store.add([Document("ours", "omega ours", {"n": 1})])
        store.chroma_collection.add(
            ids=["foreign"],
            embeddings=MODEL.embed(["omega foreign"]),
            documents=["omega foreign"],
            metadatas=[{"n": 2, "s": "x"}],
        )
        store.add([Document("later", "unrelated", {})])  # changes the state token: the sidecar rebuilds
        found = store.similarity_search(SearchRequest("omega", top_k=3, mode="lexical"))
        sidecar = store._lexical._index
        assert sidecar is not None and sidecar.records is not None
        assert "foreign" not in sidecar.records and "ours" in sidecar.records
    assert sorted((d.id, d.text, d.metadata) for d in found) == [
        ("foreign", "omega foreign", {"n": 2, "s": "x"}),
        ("ours", "omega ours", {"n": 1}),
    ]


def _pages_agree(store: ChromaVectorStore, kind: type) -> None:
    """Pages from the sidecar's records (of type `kind`) equal pages read from Chroma, field by field."""
    for mode in ("hybrid", "lexical"):
        for query in ("omega", "omega surrogate", "big integers", "filler 7"):
            request = SearchRequest(query, top_k=12, mode=mode)
            from_kept = store.similarity_search(request)
            sidecar = store._lexical._index
            assert sidecar is not None and isinstance(sidecar.records, kind)
            held, sidecar.records = sidecar.records, None  # the page is read from Chroma instead
            try:
                from_chroma = store.similarity_search(request)
            finally:
                sidecar.records = held
            assert from_kept and _fields(from_kept) == _fields(from_chroma), (mode, query)


def test_embedded_pages_from_kept_records_equal_pages_read_from_chroma(tmp_path: Any) -> None:
    filler = [Document(f"f{i:03d}", f"filler words {i} omega" * (i % 3), {"i": i}) for i in range(200)]
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:
        store.add([*filler, *ODD])  # over the empty sidecar built and saved at the first write
        _pages_agree(store, SavedRecords)
        assert store._lexical.sidecar().records.written == 206  # type: ignore[union-attr]
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:  # loaded from the save
        _pages_agree(store, SavedRecords)
        assert store._lexical.rebuilds == 0 and len(store._lexical.sidecar().records or ()) == 206
        store.delete(["f007", "lists"])  # writes go to memory, over the saved records
        store.add([Document("omega-new", "omega new", {"n": -0.0}), Document("big", "omega big again", {})])
        _pages_agree(store, SavedRecords)
        records = store._lexical.sidecar().records
        assert isinstance(records, SavedRecords) and records.written == 2 and len(records) == 205
        assert "lists" not in records and "omega-new" in records and "big" in records
        store.flush()  # the merged save becomes the new base: the writes leave memory
        records = store._lexical.sidecar().records
        assert isinstance(records, SavedRecords) and records.written == 0 and len(records) == 205
        _pages_agree(store, SavedRecords)
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:
        _pages_agree(store, SavedRecords)
        found = {d.id for d in store.similarity_search(SearchRequest("omega", top_k=300, mode="lexical"))}
        assert "omega-new" in found and not {"f007", "lists"} & found and store._lexical.rebuilds == 0


def _token_folder(root: Any) -> Any:
    [collection] = (root / FOLDER).iterdir()
    [folder] = collection.iterdir()
    return folder


def _damage_header(folder: Any) -> None:
    (folder / RECORDS_FILE).write_bytes((folder / RECORDS_FILE).read_bytes()[:-40])


def _truncate_texts(folder: Any) -> None:
    [texts] = folder.glob("kept-texts-*.npy")
    texts.write_bytes(texts.read_bytes()[:-5])


@pytest.mark.parametrize(
    "damage",
    [
        lambda folder: (folder / RECORDS_FILE).unlink(),  # a save of the version before
        _damage_header,
        _truncate_texts,
        lambda folder: [path.unlink() for path in folder.glob("kept-texts-*.npy")],
    ],
    ids=["no-records", "damaged-header", "truncated-texts", "no-texts"],
)
def test_a_missing_or_damaged_records_save_is_rebuilt(tmp_path: Any, damage: Any) -> None:
    request = SearchRequest("omega", top_k=6, mode="hybrid")
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(ODD)
        expected = _fields(store.similarity_search(request))
    damage(_token_folder(tmp_path))
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert _fields(store.similarity_search(request)) == expected
        assert store._lexical.rebuilds == 1
    with ChromaVectorStore(MODEL, path=tmp_path) as store:  # and the rebuilt sidecar was saved whole
        assert _fields(store.similarity_search(request)) == expected
        assert store._lexical.rebuilds == 0 and isinstance(store._lexical._index.records, SavedRecords)  # type: ignore[union-attr]


def test_a_damaged_saved_text_is_read_from_chroma(tmp_path: Any) -> None:
    # Same length, one byte changed: the row's checksum fails and Chroma's get gives the record.
    request = SearchRequest("omega", top_k=6, mode="hybrid")
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(ODD)
        expected = _fields(store.similarity_search(request))
    [texts] = _token_folder(tmp_path).glob("kept-texts-*.npy")
    raw = bytearray(texts.read_bytes())
    at = raw.index(b"omega plain")
    raw[at] = ord("O")
    texts.write_bytes(bytes(raw))
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert _fields(store.similarity_search(request)) == expected
        records = store._lexical._index.records  # type: ignore[union-attr]
        assert isinstance(records, SavedRecords) and store._lexical.rebuilds == 0
        assert "plain" in records and records.read(["plain", "big"]).keys() == {"big"}


def test_saved_records_skip_records_another_tool_wrote(tmp_path: Any) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add([Document("ours", "omega ours", {"n": 1})])
        store.chroma_collection.add(
            ids=["foreign"],
            embeddings=MODEL.embed(["omega foreign"]),
            metadatas=[{"n": 2, "s": "x"}],
            documents=["omega foreign"],
        )
    with ChromaVectorStore(MODEL, path=tmp_path) as store:  # the count changed: rebuilt and saved
        store.similarity_search(SearchRequest("omega", top_k=3, mode="lexical"))
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        found = store.similarity_search(SearchRequest("omega", top_k=3, mode="lexical"))
        records = store._lexical._index.records  # type: ignore[union-attr]
        assert isinstance(records, SavedRecords) and store._lexical.rebuilds == 0
        assert "foreign" not in records and "ours" in records
    assert sorted((d.id, d.text, d.metadata) for d in found) == [
        ("foreign", "omega foreign", {"n": 2, "s": "x"}),
        ("ours", "omega ours", {"n": 1}),
    ]


@pytest.mark.server
def test_a_raw_chromadb_delete_stays_in_server_answers_until_another_store_writes(chroma_server: str) -> None:
    # Raw chromadb calls leave the state token alone (docs/concurrency.md): the sidecar, records
    # included, holds the document as it was until another store's write changes the token.
    request = SearchRequest("omega", top_k=5, mode="lexical")
    with ChromaVectorStore(MODEL, url=chroma_server, collection="kept-raw-delete", ef_search=50) as store:
        store.add([Document("gone", "omega gone", {"n": 1}), Document("kept", "omega kept", {"n": 2})])
        assert {d.id for d in store.similarity_search(request)} == {"gone", "kept"}
        store.chroma_collection.delete(ids=["gone"])
        held = {d.id: d.text for d in store.similarity_search(request)}
        assert held == {"gone": "omega gone", "kept": "omega kept"}
        store.add([Document("mine", "unrelated", {})])  # its own write updates the sidecar in place
        assert {d.id for d in store.similarity_search(request)} == {"gone", "kept"}
        other_url = chroma_server.replace("127.0.0.1", "localhost")  # another client, as in another process
        with ChromaVectorStore(MODEL, url=other_url, collection="kept-raw-delete") as other:
            other.add([Document("theirs", "unrelated", {})])
        assert [d.id for d in store.similarity_search(request)] == ["kept"]
    with ChromaVectorStore(MODEL, url=chroma_server, collection="kept-raw-delete") as reopened:
        assert [d.id for d in reopened.similarity_search(request)] == ["kept"]


@pytest.mark.server
def test_a_store_given_an_http_client_keeps_records(chroma_server: str) -> None:
    import chromadb

    host, port = chroma_server.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port))
    try:
        with ChromaVectorStore(MODEL, collection="kept-given-client", client=client) as store:
            store.add(ODD)
            assert store.similarity_search(SearchRequest("omega", top_k=3, mode="hybrid"))
            sidecar = store._lexical._index
            assert sidecar is not None and sidecar.records is not None and len(sidecar.records) == len(ODD)
    finally:
        close_client(client)


def test_an_in_process_store_never_imports_the_http_client() -> None:
    # Telling whether a store talks HTTP must not import chromadb's HTTP client (70 ms) for stores
    # that cannot use it.
    code = (
        "import sys\n"
        "from rag import Document, HashingEmbedding, SearchRequest\n"
        "from stores import ChromaVectorStore\n"
        "with ChromaVectorStore(HashingEmbedding(dimensions=8)) as store:\n"
        "    store.add([Document('a', 'omega')])\n"
        "    store.similarity_search(SearchRequest('omega', mode='hybrid'))\n"
        "print('chromadb.api.fastapi' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


def test_saved_records_load_only_for_their_own_columns(tmp_path: Any) -> None:
    columns, kept = FilterColumns(), KeptRecords()
    columns.write(["a", "b"], [{"n": 1}, {"s": "x\ud800"}])
    kept.write(["a", "b"], ["red", "blue \ud800"], [{"n": 1}, {"s": "x\ud800"}])
    save_records(kept, columns, tmp_path)
    loaded = SavedRecords.load(tmp_path, columns)
    assert loaded is not None and len(loaded) == 2
    assert loaded.read(["b", "a", "zz"]) == {"b": ("blue \ud800", {"s": "x\ud800"}), "a": ("red", {"n": 1})}
    loaded.write(["c"], ["green"], [{}])
    assert loaded.read(["a", "b", "c"]) == {**kept.read(["a", "b"]), "c": ("green", {})}
    other = FilterColumns()  # the same number of rows, other ids: no row's checksum holds
    other.write(["b", "a"], [{"s": "x\ud800"}, {"n": 1}])
    swapped = SavedRecords.load(tmp_path, other)
    assert swapped is not None and swapped.read(["a", "b"]) == {}
    more = FilterColumns()
    more.write(["a", "b", "c"], [{}, {}, {}])
    assert SavedRecords.load(tmp_path, more) is None  # another row count: not these columns' save
