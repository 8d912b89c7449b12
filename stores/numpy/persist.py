"""Saving the numpy store to a folder and loading it back, crash-safely.

A folder holds `manifest.json` and the data it names: `vectors-<generation>.npy` (float32),
`documents-<generation>.json` (ids, texts and metadata), the BM25 index in `bm25-<generation>/`
(`stores.lexical`) and the metadata's filter columns, encoded, in `columns-<generation>.npz`
(`stores.numpy.columns_file`), so a load does not encode every metadata value again. A save writes a
new generation of all four, flushes them, then replaces the manifest in one `os.replace`: a crash at
any point leaves the manifest naming one complete generation, old or new, so the vectors, the lexical
index and the columns can never disagree. Other generations are removed after the switch. The index
and the columns are derived data: a save without them (made before they were saved), one analysed
with another tokenizer, or a damaged file loads with `Snapshot.lexical` or `Snapshot.columns` None,
and the store rebuilds them from the texts and metadata.

Across processes: a save holds an exclusive lock on `<folder>/.lock` (`stores.locking.FolderLock`), so
saves to one folder never interleave, and it first checks that the folder still holds the generation
the saving copy was loaded from (or last saved). When another process (or another store object) saved
in between, the save raises `StoreError` naming the folder and writes nothing: a stale copy never
replaces newer data silently.

Example:
    >>> import tempfile, numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> snapshot = Snapshot("m", 2, np.eye(2, dtype=np.float32), ["a", "b"], ["x", "y"], [{}, {}])
    >>> generation = write(folder, snapshot)
    >>> loaded = read(folder, "m", 2)
    >>> loaded.ids, loaded.generation == generation
    (['a', 'b'], True)
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue, check_metadata
from rag.errors import EmbeddingModelMismatchError, StoreError, StoreNotFoundError
from stores.durable import sync_folder, write_new
from stores.lexical.index import LexicalIndex
from stores.lexical.text import TOKENIZER
from stores.locking import FolderLock
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import columns_from_arrays, columns_to_arrays, read_arrays, savez

__all__ = ["LOCK_FILE", "MANIFEST", "Snapshot", "exists", "read", "saved_generation", "write"]

MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
# The store's name before it was `NumpyVectorStore`, kept in the format tag so every saved folder still loads.
_FORMAT = "rag-advisors/inmemory-store"
_VERSION = 1
_COLUMNS_PREFIX = "columns-"
_DATA_PREFIXES = ("vectors-", "documents-", _COLUMNS_PREFIX, f".{MANIFEST}.")
_LEXICAL_PREFIX = "bm25-"
_PLAIN = frozenset((str, int, bool))


@dataclass
class Snapshot:
    """Everything a saved store holds: the model it was embedded with, vectors, and documents by row."""

    model: str
    dimensions: int
    vectors: npt.NDArray[np.float32]
    ids: list[str]
    texts: list[str]
    metadatas: list[dict[str, MetadataValue]]
    lexical: LexicalIndex | None = None
    generation: str | None = None
    """The save this snapshot was read from (None for one not read from a folder)."""
    columns: MetadataColumns | None = None
    """The metadata's filter columns (None: not saved, or unreadable; built from `metadatas`)."""


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a saved store."""
    return (Path(path) / MANIFEST).is_file()


def _encode_documents(snapshot: Snapshot) -> bytes:
    payload = {"ids": snapshot.ids, "texts": snapshot.texts, "metadata": snapshot.metadatas}
    # surrogatepass keeps texts with lone surrogates (valid Python strings) round-tripping.
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")


def saved_generation(path: str | os.PathLike[str]) -> str | None:
    """The generation of the save in `path` (None when nothing is saved there)."""
    folder = Path(path)
    if not exists(folder):
        return None
    return _generation_of(_read_manifest(folder))


def _generation_of(manifest: dict[str, Any]) -> str:
    generation = manifest.get("generation")
    if isinstance(generation, str):
        return generation
    # Saves of earlier versions name their generation only in their file names.
    return str(manifest.get("vectors", "")).removeprefix("vectors-").removesuffix(".npy")


def write(
    path: str | os.PathLike[str], snapshot: Snapshot, *, expected: str | None = None, overwrite: bool = False
) -> str:
    """Save `snapshot` into the folder `path` (created if needed), replacing any earlier save atomically.

    Args:
        path: The folder.
        snapshot: What to save.
        expected: The generation the folder must still hold (None: it must hold no save yet).
        overwrite: Replace whatever the folder holds, without checking `expected`.

    Returns:
        The generation written, to pass as `expected` to the next save of the same copy.

    Raises:
        StoreError: the folder cannot be written, or holds another generation than `expected`.
    """
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with FolderLock(folder, LOCK_FILE):
            if not overwrite:
                current = saved_generation(folder)
                if current != expected:
                    raise StoreError(_stale_message(folder, current, expected))
            return _write_unlocked(folder, snapshot)
    except OSError as exc:
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc


def _stale_message(folder: Path, current: str | None, expected: str | None) -> str:
    seen = "this copy was loaded or last saved" if expected is not None else "this store was created"
    return (
        f"not saving the store to {str(folder)!r}: another writer saved there (generation {current!r}) "
        f"since {seen}, and this copy does not hold those changes; nothing was written. Load the store "
        f"again and repeat the changes, or save with overwrite=True to replace the newer save"
    )


def _write_unlocked(folder: Path, snapshot: Snapshot) -> str:
    generation = uuid.uuid4().hex
    vectors_name = f"vectors-{generation}.npy"
    documents_name = f"documents-{generation}.json"
    manifest = {
        "format": _FORMAT,
        "version": _VERSION,
        "model": snapshot.model,
        "dimensions": snapshot.dimensions,
        "count": len(snapshot.ids),
        "generation": generation,
        "vectors": vectors_name,
        "documents": documents_name,
    }
    staged = folder / f".{MANIFEST}.{generation}.tmp"
    lexical_name = f"{_LEXICAL_PREFIX}{generation}"
    columns_name = f"{_COLUMNS_PREFIX}{generation}.npz"
    try:
        write_new(folder / vectors_name, lambda f: np.save(f, snapshot.vectors, allow_pickle=False))
        write_new(folder / documents_name, lambda f: f.write(_encode_documents(snapshot)))
        if snapshot.lexical is not None:
            snapshot.lexical.save(folder / lexical_name)  # flushed before the manifest names it
            manifest["lexical"] = lexical_name
        if snapshot.columns is not None:
            arrays = columns_to_arrays(snapshot.columns)
            write_new(folder / columns_name, lambda f: savez(f, arrays))
            manifest["columns"] = columns_name
        write_new(staged, lambda f: f.write(json.dumps(manifest, indent=1).encode("utf-8")))
        os.replace(staged, folder / MANIFEST)
        sync_folder(folder)
    except OSError as exc:
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc
    _remove_other_generations(folder, keep={vectors_name, documents_name, lexical_name, columns_name})
    return generation


def _remove_other_generations(folder: Path, keep: set[str]) -> None:
    for entry in folder.iterdir():
        if entry.name in keep:
            continue
        if entry.name.startswith(_DATA_PREFIXES) and entry.is_file():
            with contextlib.suppress(OSError):  # a leftover file only costs disk space
                entry.unlink()
        elif entry.name.startswith(_LEXICAL_PREFIX) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def _read_manifest(folder: Path) -> dict[str, Any]:
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise StoreNotFoundError(f"no saved numpy store at {str(folder)!r} (no {MANIFEST})", path=str(folder))
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the store manifest {str(manifest_path)!r}: {exc}") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != _FORMAT
        or manifest.get("version") != _VERSION
    ):
        raise StoreError(f"{str(manifest_path)!r} is not a numpy store manifest (format {_FORMAT!r})")
    return manifest


def read(path: str | os.PathLike[str], model: str, dimensions: int) -> Snapshot:
    """Load the store saved in `path`, checking it was embedded with `model` of `dimensions`.

    The folder's lock is held while reading, so a save by another process cannot remove the files of
    the generation being read; a folder where no lock file can be made (read-only) is read without.
    """
    folder = Path(path)
    if exists(folder):
        try:
            lock = FolderLock(folder, LOCK_FILE)
            lock.acquire()
        except OSError:
            return _read_unlocked(folder, model, dimensions)
        with lock:
            return _read_unlocked(folder, model, dimensions)
    return _read_unlocked(folder, model, dimensions)


def _read_unlocked(folder: Path, model: str, dimensions: int) -> Snapshot:
    manifest = _read_manifest(folder)
    if manifest["model"] != model or manifest["dimensions"] != dimensions:
        raise EmbeddingModelMismatchError(
            f"the store at {str(folder)!r} holds vectors of model {manifest['model']!r} "
            f"({manifest['dimensions']} dimensions); it cannot be opened with model {model!r} "
            f"({dimensions} dimensions)"
        )
    try:
        vectors = np.load(folder / manifest["vectors"], allow_pickle=False)
        raw = (folder / manifest["documents"]).read_bytes().decode("utf-8", "surrogatepass")
        documents = json.loads(raw)
        ids, texts, metadatas = documents["ids"], documents["texts"], documents["metadata"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read the store saved in {str(folder)!r}: {exc}") from exc
    count = manifest["count"]
    if (
        vectors.dtype != np.float32
        or vectors.shape != (count, dimensions)
        or not len(ids) == len(texts) == len(metadatas) == count
    ):
        raise StoreError(f"the store saved in {str(folder)!r} is inconsistent: {count} documents expected")
    checked = _checked_metadata(ids, metadatas)
    lexical = _read_lexical(folder, manifest, ids)
    generation = _generation_of(manifest)
    columns = _read_columns(folder, manifest, count)
    return Snapshot(model, dimensions, vectors, ids, texts, checked, lexical, generation, columns)


def _checked_metadata(ids: list[str], metadatas: list[Any]) -> list[dict[str, MetadataValue]]:
    """Each record's metadata validated as `check_metadata` does, which it calls only for metadata
    holding something besides str, int, bool and finite floats: validating every value through it
    cost more than half a second per 100,000 records on each load."""
    checked: list[dict[str, MetadataValue]] = []
    for doc_id, metadata in zip(ids, metadatas, strict=True):
        if type(metadata) is dict and "" not in metadata:
            for value in metadata.values():
                kind = type(value)
                if kind not in _PLAIN and (kind is not float or not math.isfinite(value)):
                    break
            else:  # JSON object keys are always str
                checked.append(metadata)
                continue
        checked.append(check_metadata(doc_id, metadata))
    return checked


def _read_columns(folder: Path, manifest: dict[str, Any], count: int) -> MetadataColumns | None:
    """The saved filter columns of `count` rows, or None when absent or damaged (the store rebuilds
    them from the metadata)."""
    name = manifest.get("columns")
    if not isinstance(name, str) or not name.startswith(_COLUMNS_PREFIX) or "/" in name or "\\" in name:
        return None
    arrays = read_arrays(folder / name)
    if arrays is None:
        return None
    try:
        return columns_from_arrays(arrays, count)
    except (KeyError, ValueError):
        return None


def _read_lexical(folder: Path, manifest: dict[str, Any], ids: list[str]) -> LexicalIndex | None:
    """The saved lexical index, or None when it is absent, of another tokenizer, or not these ids'.

    The index is derived data: whatever is wrong with it, the store rebuilds it from the texts.
    """
    name = manifest.get("lexical")
    if not isinstance(name, str) or not name.startswith(_LEXICAL_PREFIX) or "/" in name or "\\" in name:
        return None
    try:
        settings = LexicalIndex.saved_settings(folder / name)
        if settings is None or settings.tokenizer != TOKENIZER:
            return None
        index = LexicalIndex.load(folder / name)
    except StoreError:
        return None
    if len(index) != len(ids) or index.ids() != sorted(ids):
        return None
    return index
