"""An embedded home's sidecar loads its filter columns alone for filters, and the lexical half (the
BM25 index and the kept records) only when a lexical or hybrid search or a write needs it.

Every `rag query --filter ...` is a new process: it must not pay for reading a BM25 index it never
uses. The lazy half is checked as a whole load checks it, so a missing, damaged or foreign one costs a
rebuild when first needed, never a wrong answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma import kept_file
from stores.chroma.columns import FILE as COLUMNS_FILE
from stores.chroma.columns import LEGACY_FILE, FilterColumns
from stores.chroma.kept_file import FILE as RECORDS_FILE
from stores.chroma.lexical import FOLDER
from stores.lexical.index import LexicalIndex
from stores.lexical.persist import MANIFEST

MODEL = HashingEmbedding(dimensions=32)
FILTER = "lang == 'en' AND n >= 40"


def _docs() -> list[Document]:
    langs = ["en", "de", "fr"]
    return [
        Document(f"d{i:03d}", f"omega text {i} " + "words " * (i % 5), {"lang": langs[i % 3], "n": i})
        for i in range(150)
    ]


def _fields(docs: list[Document]) -> list[tuple[Any, ...]]:
    return [(d.id, d.text, d.metadata, d.score) for d in docs]


def _reference() -> NumpyVectorStore:
    reference = NumpyVectorStore(MODEL)
    reference.add(_docs())
    return reference


def _home(path: Path) -> Path:
    with ChromaVectorStore(MODEL, path=path) as store:
        store.add(_docs())
    [collection] = (path / FOLDER).iterdir()
    [folder] = collection.iterdir()
    return folder


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the sidecar reads of its lexical half: BM25 index loads and kept-records loads."""
    seen: list[str] = []
    index_load = LexicalIndex.load.__func__  # type: ignore[attr-defined]
    records_load = kept_file.SavedRecords.load.__func__  # type: ignore[attr-defined]

    def load_index(cls: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append("index")
        return index_load(cls, *args, **kwargs)

    def load_records(cls: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append("records")
        return records_load(cls, *args, **kwargs)

    monkeypatch.setattr(LexicalIndex, "load", classmethod(load_index))
    monkeypatch.setattr(kept_file.SavedRecords, "load", classmethod(load_records))
    return seen


def test_filters_on_a_reopened_home_leave_the_lexical_half_on_disk(tmp_path: Path, loads: list[str]) -> None:
    # Before: the first filtered request loaded the BM25 index and the kept records with the columns.
    _home(tmp_path)
    loads.clear()  # building the home saved and loaded its records
    reference = _reference()
    vector = SearchRequest("omega text", top_k=7, filter=FILTER)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == reference.count(FILTER)
        assert _fields(store.similarity_search(vector)) == _fields(reference.similarity_search(vector))
        assert sorted(d.id for d in store.get(filter=FILTER)) == sorted(
            d.id for d in reference.get(filter=FILTER)
        )
        assert loads == [] and store._lexical.rebuilds == 0
        for mode in ("lexical", "hybrid"):  # the first lexical use loads the rest, once
            request = SearchRequest("omega words", top_k=9, mode=mode, filter=FILTER)
            found = store.similarity_search(request)
            assert [(d.id, d.score) for d in found] == [
                (d.id, d.score) for d in reference.similarity_search(request)
            ]
        assert loads == ["index", "records"] and store._lexical.rebuilds == 0


def test_a_write_loads_the_lexical_half_first(tmp_path: Path, loads: list[str]) -> None:
    _home(tmp_path)
    loads.clear()
    reference = _reference()
    before = reference.count(FILTER)
    added = [Document("late", "omega words late", {"lang": "en", "n": 99})]
    reference.add(added)
    reference.delete(["d003"])
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == before and loads == []
        store.add(added)
        store.delete(["d003"])
        assert loads == ["index", "records"]
    request = SearchRequest("omega words late", top_k=12, mode="hybrid", filter="lang == 'en'")
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert _fields(store.similarity_search(request)) == _fields(reference.similarity_search(request))
        assert store._lexical.rebuilds == 0


def _drop_index_data(folder: Path) -> None:
    for path in folder.glob("lexical-*.npz"):
        path.unlink()


def _damage_index_data(folder: Path) -> None:
    [path] = folder.glob("lexical-*.npz")
    path.write_bytes(path.read_bytes()[:-100])


def _drop_records(folder: Path) -> None:
    (folder / RECORDS_FILE).unlink()  # as a save of the version before kept records


def _truncate_texts(folder: Path) -> None:
    [path] = folder.glob("kept-texts-*.npy")
    path.write_bytes(path.read_bytes()[:-3])


@pytest.mark.parametrize(
    "damage",
    [_drop_index_data, _damage_index_data, _drop_records, _truncate_texts],
    ids=["no-index-data", "truncated-index", "no-records", "truncated-texts"],
)
def test_a_damaged_lexical_half_is_rebuilt_when_first_needed(tmp_path: Path, damage: Any) -> None:
    folder = _home(tmp_path)
    damage(folder)
    reference = _reference()
    request = SearchRequest("omega words", top_k=9, mode="hybrid", filter=FILTER)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == reference.count(FILTER) and store._lexical.rebuilds == 0
        assert _fields(store.similarity_search(request)) == _fields(reference.similarity_search(request))
        assert store._lexical.rebuilds == 1
    with ChromaVectorStore(MODEL, path=tmp_path) as store:  # the rebuilt sidecar was saved whole
        assert _fields(store.similarity_search(request)) == _fields(reference.similarity_search(request))
        assert store._lexical.rebuilds == 0


def test_a_save_without_its_index_manifest_is_not_used_even_for_filters(tmp_path: Path) -> None:
    # The manifest is written last: without it the save may be incomplete, columns included.
    folder = _home(tmp_path)
    (folder / MANIFEST).unlink()
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == _reference().count(FILTER) and store._lexical.rebuilds == 1


def test_a_lexical_half_of_other_records_is_not_taken(tmp_path: Path) -> None:
    # The same token folder holding an index of another size than the columns: rebuilt, not mixed.
    folder = _home(tmp_path)
    other = LexicalIndex()
    other.add(["x"], ["omega"])
    other.save(folder)
    reference = _reference()
    request = SearchRequest("omega words", top_k=5, mode="lexical")
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == reference.count(FILTER) and store._lexical.rebuilds == 0
        assert _fields(store.similarity_search(request)) == _fields(reference.similarity_search(request))
        assert store._lexical.rebuilds == 1


def test_a_home_with_first_version_columns_loads_both_halves(tmp_path: Path, loads: list[str]) -> None:
    # A save whose columns are in the first version's JSON file: read and rewritten by the first
    # filter, and the lexical half still loads (no rebuild) when a hybrid search needs it.
    folder = _home(tmp_path)
    columns = FilterColumns.load(folder)
    assert columns is not None
    body = {
        "format": "rag-chroma-filter-columns",
        "version": 1,
        "ids": list(columns.ids),
        "metadata": [columns.metadata_text(row) for row in range(len(columns))],
    }
    (folder / COLUMNS_FILE).unlink()
    (folder / LEGACY_FILE).write_text(json.dumps(body), encoding="utf-8")
    loads.clear()
    reference = _reference()
    request = SearchRequest("omega words", top_k=9, mode="hybrid", filter=FILTER)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count(FILTER) == reference.count(FILTER) and loads == []
        assert _fields(store.similarity_search(request)) == _fields(reference.similarity_search(request))
        assert loads == ["index", "records"] and store._lexical.rebuilds == 0
    assert (folder / COLUMNS_FILE).is_file() and not (folder / LEGACY_FILE).exists()
