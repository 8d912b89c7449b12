"""Writes over the kept records an embedded folder loaded from its save (`stores.chroma.kept_file`).

The saved records stay memory-mapped; records written since live in memory over them. These tests
hold the overlay equal to records kept wholly in memory (`KeptRecords`) after any mix of writes,
rewrites, deletes and records another tool wrote, through a save and a load of the merged form; and
that the first write after a load reads no saved record (counted through the row checksum every
saved read verifies, never timed).
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore
from stores.chroma import kept_file
from stores.chroma.columns import FilterColumns
from stores.chroma.kept import KeptRecords
from stores.chroma.kept_file import SavedRecords, save_records
from stores.numpy.columns_file import read_arrays

MODEL = HashingEmbedding(dimensions=32)
ODD_TEXTS = ["", "lone \ud800 surrogate", "ünïcødé 漢字 🙂", "x" * 3000]


def _record(rng: random.Random, doc_id: str) -> tuple[str, dict[str, Any]]:
    text = rng.choice(ODD_TEXTS) + f" {doc_id} {rng.random()}" * rng.randint(0, 3)
    metadata: dict[str, Any] = {"n": rng.randint(-5, 5), "tags": ["a", rng.random()], "k\udfff": -0.0}
    return text, rng.choice([metadata, {}])


class _Twin:
    """The same records as columns plus `SavedRecords` (the overlay) and as plain `KeptRecords`."""

    def __init__(self, folder: Path, size: int, rng: random.Random) -> None:
        self.rng, self.columns, self.reference = rng, FilterColumns(), KeptRecords()
        self.write([f"d{i:04d}" for i in range(size)], records=None)
        save_records(self.reference, self.columns, folder)
        loaded = SavedRecords.load(folder, self.columns)
        assert loaded is not None
        self.saved = loaded

    def write(self, ids: list[str], records: SavedRecords | None) -> None:
        pairs = [_record(self.rng, doc_id) for doc_id in ids]
        trusted = [self.rng.random() > 0.1 for _ in ids]  # some records another tool wrote
        texts, metadatas = [text for text, _ in pairs], [meta for _, meta in pairs]
        if records is not None:
            records.detach()  # as `Sidecar.add` does, before the columns change
        self.columns.write(ids, metadatas)
        self.reference.write(ids, texts, metadatas, trusted)
        if records is not None:
            records.write(ids, texts, metadatas, trusted)

    def delete(self, ids: list[str]) -> None:
        self.saved.detach()
        self.columns.delete(ids)
        assert self.saved.delete(ids) == self.reference.delete(ids)

    def agree(self, records: SavedRecords) -> None:
        every = [*self.columns.ids, "never-stored"]
        assert records.read(every) == self.reference.read(every)
        assert len(records) == len(self.reference)
        assert [doc_id in records for doc_id in every] == [doc_id in self.reference for doc_id in every]


@pytest.mark.parametrize("seed", range(6))
def test_writes_over_saved_records_equal_records_kept_in_memory(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    twin = _Twin(tmp_path / "first", 120, rng)
    twin.agree(twin.saved)
    fresh = 0
    for _ in range(12):
        if rng.random() < 0.4:
            twin.delete(rng.sample([*twin.columns.ids, "unknown"], rng.randint(1, 15)))
        else:
            old = rng.sample(twin.columns.ids, min(len(twin.columns), rng.randint(0, 10)))
            new = [f"n{fresh + i}" for i in range(rng.randint(0, 6))]
            fresh += len(new)
            twin.write([*old, *new], twin.saved)
        twin.agree(twin.saved)
    save_records(twin.saved, twin.columns, tmp_path / "second")  # the merged form
    again = SavedRecords.load(tmp_path / "second", twin.columns)
    assert again is not None and again.written == 0
    twin.agree(again)
    # And the merged save is the one a sidecar kept wholly in memory writes, byte for byte.
    save_records(twin.reference, twin.columns, tmp_path / "reference")
    merged = read_arrays(tmp_path / "second" / kept_file.FILE) or {}
    reference = read_arrays(tmp_path / "reference" / kept_file.FILE) or {}
    for name in ("offsets", "kept", "crc"):
        assert merged[name].tolist() == reference[name].tolist(), name
    [merged_texts] = (tmp_path / "second").glob("kept-texts-*.npy")
    [reference_texts] = (tmp_path / "reference").glob("kept-texts-*.npy")
    assert merged_texts.read_bytes() == reference_texts.read_bytes()


def test_saved_records_all_deleted_then_written_again(tmp_path: Path) -> None:
    twin = _Twin(tmp_path / "first", 30, random.Random(3))
    twin.delete(list(twin.columns.ids))
    twin.agree(twin.saved)
    save_records(twin.saved, twin.columns, tmp_path / "empty")  # no row at all
    empty = SavedRecords.load(tmp_path / "empty", twin.columns)
    assert empty is not None and len(empty) == 0
    twin.saved = empty
    twin.write(["d0001", "fresh"], twin.saved)
    twin.agree(twin.saved)
    save_records(twin.saved, twin.columns, tmp_path / "again")
    again = SavedRecords.load(tmp_path / "again", twin.columns)
    assert again is not None
    twin.agree(again)


def test_a_write_over_saved_records_reads_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = _Twin(tmp_path / "first", 500, random.Random(7))
    checks = _counted_checks(monkeypatch)
    twin.write(["d0003", "new"], twin.saved)
    twin.delete(["d0010"])
    assert checks == [] and twin.saved.written == len(twin.saved.read(["d0003", "new"]))
    save_records(twin.saved, twin.columns, tmp_path / "second")
    assert sorted(checks) == ["d0003", "new"]  # the saved rows are copied with their checksums


def _counted_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids whose saved-row checksum is computed from now on (every saved read and write does one)."""
    checks: list[str] = []
    real = kept_file._check

    def counted(doc_id: str, text: bytes) -> int:
        checks.append(doc_id)
        return real(doc_id, text)

    monkeypatch.setattr(kept_file, "_check", counted)
    return checks


def _docs(count: int) -> list[Document]:
    return [Document(f"f{i:04d}", f"omega filler {i} " + "words " * (i % 7), {"i": i}) for i in range(count)]


def test_the_first_write_after_opening_a_home_reads_no_saved_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the first write turned the saved records into memory (`SavedRecords.to_kept`), reading
    # and checking every one of them, and the save read them all again.
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(400))
    request = SearchRequest("omega filler", top_k=8, mode="hybrid")
    checks = _counted_checks(monkeypatch)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add([Document("f0005", "omega rewritten", {"i": -1}), Document("new", "omega new", {})])
        store.delete(["f0009"])
        assert checks == []
        found = [(d.id, d.text, d.metadata, d.score) for d in store.similarity_search(request)]
        assert len(checks) <= request.top_k  # the page's saved rows only
        checks.clear()
    assert sorted(checks) == ["f0005", "new"]  # the save: written records only
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert [(d.id, d.text, d.metadata, d.score) for d in store.similarity_search(request)] == found
        assert store._lexical.rebuilds == 0 and store.count() == 400
        records = store._lexical.sidecar().records
        assert isinstance(records, SavedRecords) and len(records) == 400 and "f0009" not in records
        assert records.read(["f0005", "new"]) == {
            "f0005": ("omega rewritten", {"i": -1}),
            "new": ("omega new", {}),
        }


_CRASH = """
import os
from rag import Document, HashingEmbedding
from stores import ChromaVectorStore
from stores.chroma import kept_file, lexical
from stores.lexical.index import LexicalIndex

def crash(*args, **kwargs):
    os._exit(0)  # skips every finalizer, like a kill

store = ChromaVectorStore(HashingEmbedding(dimensions=32), path={path!r})
store.add([Document("f0005", "omega rewritten", {{"i": -1}}), Document("new", "omega new", {{}})])
store.delete(["f0009"])
{patch}
store.flush()
os._exit(0)
"""

_PATCHES = {
    "texts": "kept_file.write_new = crash",  # before the new texts file exists
    "header": "kept_file.write_arrays = crash",  # texts written, the header that names them not
    "index": "LexicalIndex.save = crash",  # columns and records saved, the index manifest not
    "after": "",  # the whole save done
}


@pytest.mark.parametrize("step", list(_PATCHES))
def test_a_save_of_writes_over_saved_records_interrupted_at_any_step(tmp_path: Path, step: str) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(200))
    script = textwrap.dedent(_CRASH.format(path=str(tmp_path), patch=_PATCHES[step]))
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=120)
    request = SearchRequest("omega", top_k=10, mode="hybrid")
    expected = ChromaVectorStore(MODEL)  # the same writes, in memory, never saved
    expected.add(_docs(200))
    expected.add([Document("f0005", "omega rewritten", {"i": -1}), Document("new", "omega new", {})])
    expected.delete(["f0009"])
    want = [(d.id, d.text, d.metadata, d.score) for d in expected.similarity_search(request)]
    expected.close()
    for opening in range(2):  # an interrupted save is rebuilt once, then loaded
        with ChromaVectorStore(MODEL, path=tmp_path) as store:
            assert [(d.id, d.text, d.metadata, d.score) for d in store.similarity_search(request)] == want
            assert store.count("i < 0") == 1 and store.count() == 200
            assert store._lexical.rebuilds == (1 if step != "after" and opening == 0 else 0)
