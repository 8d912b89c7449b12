"""Filter columns saved as their encoded arrays (`stores.numpy.columns_file`, issue 17): a load encodes
nothing again, answers exactly like the reference evaluator, reads a save of the previous version, and
rebuilds from a damaged save instead of answering wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, HashingEmbedding
from rag.filters import matches, parse
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.columns import FILE, LEGACY_FILE, FilterColumns
from stores.chroma.lexical import FOLDER, STATE_KEY
from stores.numpy import persist
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import pack_strings, read_arrays, unpack_strings, write_arrays

MODEL = HashingEmbedding(dimensions=16)
VALUES: list[Any] = [
    1, 0, -3, 2.5, -0.0, 1e300, 2**60, 2**60 + 1, -(2**70), True, False,
    "a", "b", "ab", "", "é", "\ud800", "Z", [1, "a"], [], [2**60, True], ["b", 2.5],
]  # fmt: skip
FILTERS = [
    "k == 1",
    "k == true",
    "k != 1",
    "k < 2.6",
    "k >= 0",
    f"k >= {2**60 + 1}",
    f"k == {2**60}",
    f"k < {-(2**69)}",
    "k > 'a'",
    "k <= 'ab'",
    "k < 'é'",
    "k == ''",
    "k IN ['b', 1, false]",
    "k NOT IN ['a', 2.5]",
    "k CONTAINS 'a'",
    f"k CONTAINS {2**60}",
    "k CONTAINS true",
    "k IS NULL",
    "j IS NOT NULL",
    "k != 2.5 AND j IS NOT NULL",
    "NOT (k IN [1, 'b'] OR j < 0)",
    "absent == 1 OR j >= 'a'",
]


def _records(seed: int, count: int) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return {
        f"i{n}": {name: VALUES[rng.integers(len(VALUES))] for name in ("k", "j") if rng.random() < 0.8}
        for n in rng.choice(count * 2, size=count, replace=False).tolist()
    }


def _check(columns: FilterColumns, held: dict[str, dict[str, Any]]) -> None:
    """Every filter selects exactly what the reference evaluator selects."""
    assert len(columns) == len(held)
    for text in FILTERS:
        tree = parse(text)
        expected = sorted(i for i, metadata in held.items() if matches(tree, metadata))
        assert sorted(columns.matching_ids(tree)) == expected, text
        assert columns.count(tree) == len(expected), text


def _written(held: dict[str, dict[str, Any]]) -> FilterColumns:
    columns = FilterColumns()
    items = list(held.items())
    columns.write([i for i, _ in items], [m for _, m in items])
    return columns


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


def test_saved_columns_load_without_encoding_and_answer_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _records(1, 120)
    columns = _written(held)
    columns.delete(list(held)[:30])  # rows moved into holes, strings of deleted rows in the vocabulary
    for doc_id in list(held)[:30]:
        del held[doc_id]
    columns.save(tmp_path)
    assert (tmp_path / FILE).is_file() and not (tmp_path / LEGACY_FILE).exists()
    with monkeypatch.context() as patch:
        _no_encoding(patch)
        loaded = FilterColumns.load(tmp_path)
        assert loaded is not None
        _check(loaded, held)
    # The loaded columns keep working through writes that grow, replace and remove rows.
    more = _records(2, 60)
    loaded.write(list(more), list(more.values()))
    held.update(more)
    doomed = list(held)[::3]
    loaded.delete(doomed)
    for doc_id in doomed:
        del held[doc_id]
    _check(loaded, held)


def _legacy_save(folder: Path, held: dict[str, dict[str, Any]]) -> None:
    """The first version's file, as that version wrote it: ids and compact JSON texts."""
    texts = [json.dumps(metadata, separators=(",", ":")) for metadata in held.values()]
    body = {"format": "rag-chroma-filter-columns", "version": 1, "ids": list(held), "metadata": texts}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LEGACY_FILE).write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")


def test_a_save_of_the_first_version_is_read_then_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _records(3, 80)
    _legacy_save(tmp_path, held)
    loaded = FilterColumns.load(tmp_path)
    assert loaded is not None
    _check(loaded, held)
    assert (tmp_path / FILE).is_file() and not (tmp_path / LEGACY_FILE).exists()
    _no_encoding(monkeypatch)
    again = FilterColumns.load(tmp_path)
    assert again is not None
    _check(again, held)


def _token_folder(home: Path) -> Path:
    folders = [entry for entry in (home / FOLDER / "rag").iterdir() if entry.is_dir()]
    assert len(folders) == 1
    return folders[0]


def _docs(count: int) -> list[Document]:
    return [
        Document(f"d{i:04d}", f"text {i}", {"n": i, "bucket": i % 10, "name": f"n{(i * 37) % count:04d}"})
        for i in range(count)
    ]


def test_a_chroma_home_of_the_previous_version_opens_with_its_sidecar(tmp_path: Path) -> None:
    docs = _docs(200)
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(docs)
        token = store.chroma_collection.metadata[STATE_KEY]
    folder = tmp_path / FOLDER / "rag" / token
    (folder / FILE).unlink()
    _legacy_save(folder, {d.id: dict(d.metadata) for d in docs})
    for _ in range(2):  # the first open converts the save, the second reads the new one
        with ChromaVectorStore(MODEL, path=tmp_path) as store:
            assert store.count("name >= 'n0100' AND bucket < 5") == 50
            assert store._lexical.rebuilds == 0
        assert (folder / FILE).is_file() and not (folder / LEGACY_FILE).exists()


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_damaged_save_is_never_loaded_wrong(tmp_path: Path) -> None:
    held = _records(4, 60)
    _written(held).save(tmp_path)
    good = (tmp_path / FILE).read_bytes()
    size = len(good)
    loaded_whole = 0
    positions = range(0, size, max(1, size // 300))
    for at in positions:
        (tmp_path / FILE).write_bytes(good)
        _flip(tmp_path / FILE, at)
        loaded = FilterColumns.load(tmp_path)
        if loaded is not None:  # a byte no answer depends on (zip metadata): still exact
            loaded_whole += 1
            _check(loaded, held)
    # Member data is covered by the zip's CRCs; what loads is a flip in zip headers (times, attributes).
    assert loaded_whole < len(positions) // 4
    for cut in (0, 10, size // 2, size - 1):
        (tmp_path / FILE).write_bytes(good[:cut])
        assert FilterColumns.load(tmp_path) is None


def _rewritten(folder: Path, change: str) -> None:
    """Rewrite the save with one array made inconsistent, as a buggy writer might (valid CRCs)."""
    arrays = read_arrays(folder / FILE)
    assert arrays is not None
    if change == "code out of range":
        code = arrays["k0.values.code"].copy()
        code[code >= 0] = 10_000
        arrays["k0.values.code"] = code
    elif change == "unsorted vocabulary":
        arrays["vocabulary_order"] = arrays["vocabulary_order"][::-1].copy()
    elif change == "bad kind":
        arrays["k0.values.kind"] = np.full_like(arrays["k0.values.kind"], 9)
    elif change == "posting row out of range":
        arrays["k0.items.row"] = arrays["k0.items.row"] + 1000
    elif change == "ids and texts differ":
        arrays["texts_ends"] = arrays["texts_ends"][:-1].copy()
    else:
        del arrays["k0.values.num"]
    write_arrays(folder / FILE, arrays)


@pytest.mark.parametrize(
    "change",
    [
        "code out of range",
        "unsorted vocabulary",
        "bad kind",
        "posting row out of range",
        "ids and texts differ",
        "missing array",
    ],
)
def test_an_inconsistent_save_is_not_loaded(tmp_path: Path, change: str) -> None:
    held = {f"i{n}": {"k": ["b", n, "a"] if n % 4 == 0 else ("s" if n % 4 == 1 else n)} for n in range(40)}
    _written(held).save(tmp_path)
    assert FilterColumns.load(tmp_path) is not None
    _rewritten(tmp_path, change)
    assert FilterColumns.load(tmp_path) is None


def test_a_chroma_home_with_a_truncated_save_rebuilds_it(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add(_docs(200))
    saved = _token_folder(tmp_path) / FILE
    saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        assert store.count("bucket == 3 OR name < 'n0010'") == 29
        assert store._lexical.rebuilds == 1


def _numpy_store(count: int = 150) -> NumpyVectorStore:
    store = NumpyVectorStore(MODEL)
    store.add(_docs(count))
    store.delete(["d0003", "d0100"])
    return store


def _answers(store: NumpyVectorStore) -> list[list[str]]:
    texts = ["bucket == 3", "name > 'n0120'", "n < 20 AND bucket IN [1, 2]", "name IS NULL"]
    return [sorted(d.id for d in store.get(filter=text)) for text in texts]


def _edit_documents(folder: Path, raw: str) -> None:
    """Replace the first record's metadata in the saved documents file by the JSON text `raw`."""
    manifest = json.loads((folder / persist.MANIFEST).read_text())
    path = folder / manifest["documents"]
    documents = json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
    documents["metadata"][0] = "<edited>"
    path.write_text(json.dumps(documents).replace('"<edited>"', raw), encoding="utf-8")
