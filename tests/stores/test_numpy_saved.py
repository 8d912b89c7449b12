"""A numpy store's saved folder: crash-safe saves, damage reported by file, old saves opened, lazy reads.

Damage is done to the files the tests find by their contents (the file holding the vectors, the one
holding a text), not through the store's internals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rag import Document, HashingEmbedding, SearchRequest
from rag.errors import StoreError
from rag.filters import key
from stores import NumpyVectorStore

DIMENSIONS = 32
DATA = Path(__file__).parent / "data"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".lock")


def _matrix_at(folder: Path, store: NumpyVectorStore) -> tuple[Path, int]:
    """The saved file holding `store`'s vectors (rows in id order), and where they start in it."""
    documents = store.get(include_embeddings=True)
    matrix = np.stack([np.asarray(d.embedding, np.float32) for d in documents]).tobytes()
    return _file_holding(folder, matrix)


def _overwrite_arrays(folder: Path, prefix: str, byte: bytes) -> None:
    """Overwrite, in place, every saved array whose name starts with `prefix` (from the manifest)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    path = folder / manifest["folder"] / "arrays.bin"
    with path.open("r+b") as handle:
        for name, (start, stop) in manifest["arrays"].items():
            if name.startswith(prefix):
                handle.seek(start)
                handle.write(byte * (stop - start))


def _file_holding(folder: Path, needle: bytes) -> tuple[Path, int]:
    for path in _files(folder):
        at = path.read_bytes().find(needle)
        if at >= 0:
            return path, at
    raise AssertionError(f"no file holds {needle!r}")


def _store(folder: Path, count: int = 60) -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=folder)
    store.add(
        Document(
            f"d{i:04d}", f"document {i} about harbour lanterns number{i}", {"n": i, "tags": ["a", str(i % 3)]}
        )
        for i in range(count)
    )
    store.save()
    return store


def _state(store: NumpyVectorStore) -> list[tuple[str, str, object, list[float]]]:
    return [
        (d.id, d.text, d.metadata, np.asarray(d.embedding).tolist())
        for d in store.get(include_embeddings=True)
    ]


# -- kill -9 during saves ----------------------------------------------------------------------

_SAVER = textwrap.dedent(
    """
    import sys
    from rag import Document, HashingEmbedding
    from stores import NumpyVectorStore

    folder, count = sys.argv[1], int(sys.argv[2])
    store = NumpyVectorStore(HashingEmbedding({dimensions}), path=folder)
    generation = 0
    while True:
        generation += 1
        store.delete(filter="n >= 0")
        store.add(
            Document(f"g{{generation}}-{{i}}", f"generation {{generation}} text {{i}} " * 20, {{"n": i}})
            for i in range(count)
        )
        for _ in range(3):  # saves take most of the loop, so most kills land inside one
            store.save()
        print(generation, flush=True)
    """
).format(dimensions=DIMENSIONS)


@pytest.mark.parametrize("delay", [0.05, 0.1, 0.2])
def test_a_save_killed_at_any_moment_leaves_one_whole_generation(tmp_path: Path, delay: float) -> None:
    folder = tmp_path / "home"
    script = tmp_path / "saver.py"
    script.write_text(_SAVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    count = 400
    process = subprocess.Popen(
        [sys.executable, str(script), str(folder), str(count)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "1"  # one generation saved before the kill
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=folder)
    documents = store.get(include_embeddings=True)
    generations = {d.id.split("-")[0] for d in documents}
    assert len(generations) == 1 and len(documents) == count
    [generation] = generations
    expected = {f"{generation}-{i}": f"generation {generation[1:]} text {i} " * 20 for i in range(count)}
    assert {d.id: d.text for d in documents} == expected
    vectors = HashingEmbedding(DIMENSIONS).embed([d.text for d in documents])
    np.testing.assert_allclose(np.stack([np.asarray(d.embedding) for d in documents]), vectors, atol=1e-6)
    assert store.count("n >= 0") == count
    hits = store.similarity_search(SearchRequest(f"generation {generation[1:]} text 7", top_k=1))
    assert hits[0].id.startswith(generation)


# -- damaged files ---------------------------------------------------------------------------------


def test_zeroed_vector_rows_are_reported_never_answered_from(tmp_path: Path) -> None:
    path, at = _matrix_at(tmp_path, _store(tmp_path, count=60))
    row = DIMENSIONS * 4
    with path.open("r+b") as handle:  # a third of the rows zeroed in place, the size kept
        for i in range(0, 60, 3):
            handle.seek(at + i * row)
            handle.write(b"\0" * row)
    with pytest.raises(StoreError, match="damaged") as info:
        # A small file is one block, checked when opened; a large one as its blocks are first read.
        NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path).similarity_search("harbour lanterns")
    assert str(path) in str(info.value)


def test_a_truncated_file_is_reported_by_name_at_open(tmp_path: Path) -> None:
    path, _ = _matrix_at(tmp_path, _store(tmp_path))
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size - 100)
    with pytest.raises(StoreError, match="truncated") as info:
        NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert str(path) in str(info.value)


def test_a_flipped_byte_in_a_text_is_reported_by_name(tmp_path: Path) -> None:
    _store(tmp_path)
    path, at = _file_holding(tmp_path, b"document 17 about")
    data = bytearray(path.read_bytes())
    data[at + 3] ^= 0x20
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="damaged") as info:
        NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path).get(["d0017"])
    assert str(path) in str(info.value)


def test_a_save_does_not_copy_damage_into_a_new_generation(tmp_path: Path) -> None:
    _store(tmp_path)
    path, at = _file_holding(tmp_path, b"document 5 about")
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    for change in (NumpyVectorStore.save, lambda store: store.add([Document("x", "a new text")])):
        with pytest.raises(StoreError, match="damaged"):
            change(NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path))


def test_a_damaged_lexical_index_is_rebuilt_from_the_records(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lexical = SearchRequest("number17 lanterns", top_k=3, mode="lexical")
    expected = [(d.id, d.score) for d in store.similarity_search(lexical)]
    _overwrite_arrays(tmp_path, "bm25.", b"\0")  # the size kept: caught by the checksums
    reopened = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert [(d.id, d.score) for d in reopened.similarity_search(lexical)] == expected
    reopened.add([Document("new", "number17 lanterns again")])  # writes and saves go on
    reopened.save()
    again = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert "new" in [d.id for d in again.similarity_search(lexical)]


def test_damaged_filter_columns_are_rebuilt_from_the_records(tmp_path: Path) -> None:
    _store(tmp_path)
    _overwrite_arrays(tmp_path, "columns.", b"\xff")
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert store.count("n < 10") == 10
    assert store.count("tags contains '2'") == 20
    store.delete(filter="n < 10")
    store.save()
    assert NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path).count("n < 20") == 10


# -- reads touch only what they need -----------------------------------------------------------


def test_reads_decode_only_the_records_they_return(tmp_path: Path) -> None:
    # 3,000 records of ~190 bytes span several checked blocks: damage in the last one does not stop
    # reads of the first records, counts or vector searches answered from other records.
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    store.add(Document(f"d{i:04d}", f"record {i:04d} " + "x" * 180, {"n": i}) for i in range(3000))
    store.save()
    path, at = _file_holding(tmp_path, b"record 2999 ")
    data = bytearray(path.read_bytes())
    data[at + 20] ^= 0x01
    path.write_bytes(bytes(data))
    reopened = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert [d.text[:11] for d in reopened.get(["d0000", "d0001"])] == ["record 0000", "record 0001"]
    assert reopened.count() == 3000
    text = "record 0003 " + "x" * 180
    assert reopened.similarity_search(SearchRequest(text, top_k=1))[0].id == "d0003"
    with pytest.raises(StoreError, match="damaged"):
        reopened.get(["d2999"])


@pytest.mark.parametrize("rewritten", [True, False])  # rows moved by writes, or as the adds left them
def test_a_reopened_store_answers_like_the_one_that_saved(tmp_path: Path, rewritten: bool) -> None:
    store = _store(tmp_path)
    if rewritten:
        store.delete(["d0003"])
        store.add([Document("d0005", "replaced text about harbour", {"n": -5})])
        store.save()
    reopened = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    assert _state(reopened) == _state(store)
    for request in (
        SearchRequest("harbour lanterns", top_k=5),
        SearchRequest("harbour lanterns", top_k=5, filter="n > 10"),
        SearchRequest("number17 harbour", top_k=5, mode="hybrid"),
    ):
        assert [(d.id, d.score) for d in reopened.similarity_search(request)] == [
            (d.id, d.score) for d in store.similarity_search(request)
        ]
    assert [
        (d.id, d.score) for d in reopened.similarity_search(SearchRequest("number7", mode="lexical"))
    ] == [(d.id, d.score) for d in store.similarity_search(SearchRequest("number7", mode="lexical"))]
    new = Document("new", "a new text", {"n": 1000})
    reopened.add([new])  # a write after opening keeps the rest
    assert reopened.count() == 61 - rewritten
    assert reopened.get(["d0005", "new"]) == [*store.get(["d0005"]), new]


# -- the first format --------------------------------------------------------------------------


def test_a_home_of_the_first_format_opens_and_is_written_anew(tmp_path: Path) -> None:
    from rag.testing import FakeEmbedding

    folder = shutil.copytree(DATA / "numpy_store_v1", tmp_path / "store")
    recorded = json.loads((DATA / "numpy_store_v1.answers.json").read_text(encoding="utf-8"))
    first = NumpyVectorStore(FakeEmbedding(8), path=folder)
    got = [[d.id, d.text, repr(d.metadata)] for d in first.get()]
    assert got == recorded["get"]
    assert not any(p.name.startswith("documents-") for p in folder.iterdir())  # converted once
    again = NumpyVectorStore(FakeEmbedding(8), path=folder)
    assert [[d.id, d.text, repr(d.metadata)] for d in again.get()] == recorded["get"]
    assert _vectors(again) == _vectors(first)


def _vectors(store: NumpyVectorStore) -> list[list[float]]:
    return [np.asarray(d.embedding).tolist() for d in store.get(include_embeddings=True)]


def test_saved_metadata_strings_filter_alike_after_a_reopen(tmp_path: Path) -> None:
    # The saved filter columns keep one string vocabulary: strings holding its separator (NUL), lone
    # surrogates side by side across two strings, and empty strings must come back exactly.
    values = ["", "a", "é", "\ud83d", "\ude00", "x" * 300, "\U0001f600", "a\x00b", "\x00", "c"]
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    store.add(Document(f"d{i}", f"text {i}", {"s": value}) for i, value in enumerate(values))
    store.save()
    reopened = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=tmp_path)
    for value in values:
        assert [d.metadata["s"] for d in reopened.get(filter=key("s") == value)] == [value]
        assert reopened.count(key("s") < value) == sum(other < value for other in values)
