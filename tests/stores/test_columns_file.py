"""Filter columns saved as their encoded arrays (`stores.numpy.columns_file`, issue 17): a load encodes
nothing again, answers exactly like the reference evaluator, reads a save of the previous version, and
rebuilds from a damaged save instead of answering wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag import Document, HashingEmbedding
from rag.errors import InvalidRequestError
from rag.testing import FakeEmbedding
from stores import NumpyVectorStore
from stores.numpy import persist
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import pack_strings, unpack_strings

MODEL = HashingEmbedding(dimensions=16)


def _no_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any encoding of metadata into columns fail: a load must read the saved arrays."""

    def refuse(*args: object) -> None:
        raise AssertionError("metadata was encoded again")

    monkeypatch.setattr(MetadataColumns, "write", refuse)


def test_packed_strings_come_back_exactly() -> None:
    # Lone surrogates side by side must not merge into one character when the buffer is decoded.
    strings = ["", "a", "é", "\ud83d", "\ude00", "x" * 300, "\U0001f600", ""]
    data, ends = pack_strings(strings)
    assert data.dtype == np.uint8 and ends.dtype == np.int64
    assert unpack_strings(data, ends) == strings
    with_nul = ["a\x00b", "", "\x00", "c"]  # the separator inside a string: read by the ends instead
    assert unpack_strings(*pack_strings(with_nul)) == with_nul
    assert unpack_strings(*pack_strings([""])) == [""]
    assert unpack_strings(*pack_strings([])) == []
    with pytest.raises(ValueError, match="ends"):
        unpack_strings(data, ends[:-2])
    # Ends that cut the buffer anywhere but at its separators are refused, not sliced.
    nul_data, nul_ends = pack_strings(with_nul)
    shifted = nul_ends.copy()
    shifted[0] -= 1
    with pytest.raises(ValueError, match="separator"):
        unpack_strings(nul_data, shifted)


def _docs(count: int) -> list[Document]:
    return [
        Document(f"d{i:04d}", f"text {i}", {"n": i, "bucket": i % 10, "name": f"n{(i * 37) % count:04d}"})
        for i in range(count)
    ]


def _numpy_store(count: int = 150) -> NumpyVectorStore:
    store = NumpyVectorStore(MODEL)
    store.add(_docs(count))
    store.delete(["d0003", "d0100"])
    return store


def _answers(store: NumpyVectorStore) -> list[list[str]]:
    texts = ["bucket == 3", "name > 'n0120'", "n < 20 AND bucket IN [1, 2]", "name IS NULL"]
    return [sorted(d.id for d in store.get(filter=text)) for text in texts]


def test_a_numpy_folder_loads_its_saved_columns_without_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _numpy_store()
    store.save(tmp_path)
    manifest = json.loads((tmp_path / persist.MANIFEST).read_text())
    assert (tmp_path / manifest["columns"]).is_file()
    with monkeypatch.context() as patch:
        _no_encoding(patch)
        loaded = NumpyVectorStore.load(tmp_path, MODEL)
        assert _answers(loaded) == _answers(store)
    # Writes after the load grow, replace and remove rows of the loaded columns.
    for changed in (store, loaded):
        changed.add([Document("d0005", "again", {"bucket": 3}), *_docs(180)[150:]])
        changed.delete(["d0007", "d0160"])
    assert _answers(loaded) == _answers(store)


@pytest.mark.parametrize("damage", ["previous version", "truncated"])
def test_a_numpy_folder_without_usable_columns_builds_them(tmp_path: Path, damage: str) -> None:
    store = _numpy_store()
    store.save(tmp_path)
    manifest_path = tmp_path / persist.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    columns = tmp_path / manifest["columns"]
    if damage == "previous version":  # that version's manifest names no columns file
        del manifest["columns"]
        manifest_path.write_text(json.dumps(manifest))
        columns.unlink()
    else:
        columns.write_bytes(columns.read_bytes()[:100])
    loaded = NumpyVectorStore.load(tmp_path, MODEL)
    assert _answers(loaded) == _answers(store)
    loaded.save()  # saved again with whole columns
    assert persist.read(tmp_path, MODEL.name, MODEL.dimensions).columns is not None


def test_the_old_numpy_folder_fixture_still_loads(tmp_path: Path) -> None:
    folder = shutil.copytree(Path(__file__).parent / "data" / "numpy_store_v1", tmp_path / "store")
    manifest = json.loads((folder / persist.MANIFEST).read_text())
    assert "columns" not in manifest  # written before the columns were saved
    assert persist.read(folder, FakeEmbedding(8).name, 8).columns is None


def _edit_documents(folder: Path, raw: str) -> None:
    """Replace the first record's metadata in the saved documents file by the JSON text `raw`."""
    manifest = json.loads((folder / persist.MANIFEST).read_text())
    path = folder / manifest["documents"]
    documents = json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
    documents["metadata"][0] = "<edited>"
    path.write_text(json.dumps(documents).replace('"<edited>"', raw), encoding="utf-8")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"n": NaN}', "metadata 'n' of document 'd0000' is not finite: nan"),
        ('{"n": 1e400}', "metadata 'n' of document 'd0000' is not finite: inf"),
        ('{"n": -Infinity}', "metadata 'n' of document 'd0000' is not finite: -inf"),
        ('{"n": {"deep": 1}}', "metadata 'n' of document 'd0000' has unsupported type dict"),
        ('{"n": [1, [2]]}', "metadata 'n' of document 'd0000' must be a list of str, int, float or bool"),
        ('{"": 1}', "metadata key '' of document 'd0000' must be a non-empty str"),
        ('["n"]', "metadata of document 'd0000' must be a mapping"),
    ],
)
def test_a_hand_edited_saved_metadata_value_is_refused_by_name(
    tmp_path: Path, raw: str, message: str
) -> None:
    _numpy_store(10).save(tmp_path)
    _edit_documents(tmp_path, raw)
    with pytest.raises(InvalidRequestError) as caught:
        NumpyVectorStore.load(tmp_path, MODEL)
    assert str(caught.value).startswith(message)


def test_saved_metadata_loads_as_saved_with_none_values_dropped(tmp_path: Path) -> None:
    store = NumpyVectorStore(MODEL)
    kept = {"s": "é\ud800", "i": 2**70, "f": -0.0, "b": True, "l": [1, "a", 2.5, False], "e": []}
    store.add([Document("a", "x", kept), Document("b", "y", {"n": 1})])
    store.save(tmp_path)
    edited = json.dumps({**kept, "gone": None})  # None is dropped, as `Document` drops it
    _edit_documents(tmp_path, edited)
    loaded = NumpyVectorStore.load(tmp_path, MODEL)
    [document] = loaded.get(ids=["a"])
    assert document.metadata == kept and list(document.metadata) == list(kept)
    assert [type(value) for value in document.metadata.values()] == [type(value) for value in kept.values()]
