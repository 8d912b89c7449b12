"""Saving the numpy store to a folder and opening it again, crash-safely and in constant time.

The layout, the checks and what each first read costs are described in docs/performance.md. A save
writes a new generation and switches `manifest.json` (itself under a CRC-32) with one `os.replace`;
saves hold `<folder>/.lock` and refuse to replace a generation the saving copy has not seen. Folders
of the first format (version 1: vectors, JSON documents) are read by `read_legacy`, once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.errors import EmbeddingModelMismatchError, InvalidRequestError, StoreError, StoreNotFoundError
from stores.durable import sync_folder, write_new
from stores.lexical.index import LexicalIndex
from stores.lexical.persist import from_arrays, to_arrays
from stores.lexical.text import TOKENIZER
from stores.locking import FolderLock
from stores.numpy.columns import MetadataColumns
from stores.numpy.files import BLOCK, MappedFile, SavedIds, id_arrays, write_arrays
from stores.numpy.records import PackedRecords

__all__ = ["Contents", "Saved", "exists", "open_save", "read_legacy", "read_manifest", "write"]

MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
_FORMAT = "rag-advisors/inmemory-store"  # the store's first name, kept so every saved folder opens
_VERSION = 2
_GENERATION = "generation-"
_DATA = "arrays.bin"
_OLD_FILES = ("vectors-", "documents-", "columns-", f".{MANIFEST}.")  # first format, staged manifests
_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float32]


@dataclass
class Contents:
    """What a save writes: the model, the vectors and records by row, the ids, and the derived parts."""

    model: str
    dimensions: int
    vectors: npt.NDArray[np.float32]
    records: PackedRecords
    ids: list[str]
    id_order: npt.NDArray[np.int64]  # rows sorted by id
    lexical: LexicalIndex | None
    columns: MetadataColumns | None


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a saved store."""
    return (Path(path) / MANIFEST).is_file()


def _body_check(body: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(body, sort_keys=True).encode("ascii"))


def read_manifest(folder: Path, model: str | None = None, dimensions: int = 0) -> dict[str, Any]:
    """The folder's manifest (either format), checked to be of `model` and `dimensions` if given:
    `StoreNotFoundError` if there is none, `EmbeddingModelMismatchError`, or `StoreError` if damaged."""
    path = folder / MANIFEST
    if not path.is_file():
        raise StoreNotFoundError(f"no saved numpy store at {str(folder)!r} (no {MANIFEST})", path=str(folder))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the store manifest {str(path)!r}: {exc}") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != _FORMAT
        or manifest.get("version") not in (1, 2)
    ):
        raise StoreError(f"{str(path)!r} is not a numpy store manifest (format {_FORMAT!r})")
    body = {name: value for name, value in manifest.items() if name != "check"}
    if manifest["version"] == _VERSION and manifest.get("check") != _body_check(body):
        raise StoreError(f"the store manifest {str(path)!r} is damaged (it fails its checksum)")
    if model is not None and (manifest["model"] != model or manifest["dimensions"] != dimensions):
        raise EmbeddingModelMismatchError(
            f"the store at {str(folder)!r} holds vectors of model {manifest['model']!r} "
            f"({manifest['dimensions']} dimensions); it cannot be opened with model {model!r} "
            f"({dimensions} dimensions)"
        )
    return manifest


def _generation(manifest: dict[str, Any]) -> str:
    """The generation a manifest names (the first format names it only in its file names)."""
    found = manifest.get("generation")
    return found if isinstance(found, str) else str(manifest["vectors"]).removeprefix("vectors-")[:-4]


def write(
    path: str | os.PathLike[str], contents: Contents, *, expected: str | None = None, overwrite: bool = False
) -> str:
    """Save `contents` into the folder `path` (created if needed), replacing any earlier save atomically,
    and return the generation written. `StoreError` when the folder cannot be written, or holds another
    generation than `expected` (None: no save yet) and not `overwrite`."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with FolderLock(folder, LOCK_FILE):
            current = _generation(read_manifest(folder)) if exists(folder) else None
            if not overwrite and current != expected:
                seen = (
                    "this copy was loaded or last saved" if expected is not None else "this store was created"
                )
                raise StoreError(
                    f"not saving the store to {str(folder)!r}: another writer saved there (generation "
                    f"{current!r}) since {seen}, and this copy does not hold those changes; nothing was "
                    f"written. Load the store again and repeat the changes, or save with overwrite=True "
                    f"to replace the newer save"
                )
            return _write_unlocked(folder, contents)
    except OSError as exc:
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc


def _arrays(contents: Contents) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """Every array of the save by name, and what the manifest says of the derived parts."""
    data, stops = contents.records.packed()
    arrays: dict[str, npt.NDArray[Any]] = {
        "vectors.npy": contents.vectors,
        "records.npy": data,
        "record_stops.npy": stops,
        **id_arrays(contents.ids, contents.id_order),
    }
    described: dict[str, Any] = {"keys": contents.records.key_sets(), "lexical": None, "columns": []}
    if contents.lexical is not None:
        saved = contents.lexical.saved()
        lexical, lexical_arrays = to_arrays(saved)
        # Index rows equal to store rows spare a reopened store relinking every id.
        described["lexical"] = {
            **lexical,
            "arrays": sorted(lexical_arrays),
            "same_rows": saved.ids.live_ids() == contents.ids,
        }
        arrays.update({f"bm25.{name}.npy": array for name, array in lexical_arrays.items()})
    if contents.columns is not None:
        columns = contents.columns.to_arrays()
        described["columns"] = sorted(columns)
        arrays.update({f"columns.{name}.npy": array for name, array in columns.items()})
    return arrays, described


def _write_unlocked(folder: Path, contents: Contents) -> str:
    generation = uuid.uuid4().hex
    target = folder / f"{_GENERATION}{generation}"
    arrays, described = _arrays(contents)
    staged = folder / f".{MANIFEST}.{generation}.tmp"
    try:
        target.mkdir()
        data, spans = write_arrays(target / _DATA, arrays)
        sync_folder(target)
        body = {
            "format": _FORMAT,
            "version": _VERSION,
            "model": contents.model,
            "dimensions": contents.dimensions,
            "count": len(contents.ids),
            "generation": generation,
            "folder": target.name,
            "block": BLOCK,
            **described,
            "data": data,
            "arrays": spans,
        }
        write_new(staged, json.dumps({**body, "check": _body_check(body)}, indent=1).encode("ascii"))
        os.replace(staged, folder / MANIFEST)  # the switch: before it the old generation, after it the new
        sync_folder(folder)
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        staged.unlink(missing_ok=True)
        raise  # `write` reports it
    for entry in folder.iterdir():  # older generations and files of the first format
        if entry.name == target.name:
            continue
        if entry.name.startswith(_OLD_FILES) and entry.is_file():
            with contextlib.suppress(OSError):  # a leftover file only costs disk space
                entry.unlink()
        elif entry.name.startswith((_GENERATION, "bm25-")) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
    return generation


def open_save(path: str | os.PathLike[str], model: str, dimensions: int) -> Saved:
    """Map the generation saved in `path`, under the folder's lock (so a save by another process cannot
    remove it half-way), or without where no lock file can be made (a read-only folder)."""
    folder = Path(path)
    lock = FolderLock(folder, LOCK_FILE)
    with contextlib.suppress(OSError):
        lock.acquire()
    try:
        return Saved(folder, read_manifest(folder, model, dimensions))
    finally:
        lock.release()


class Saved:
    """A generation mapped into memory: vectors, records and ids read in place, the derived parts
    loaded on first use."""

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        try:
            self.count = int(manifest["count"])
            self.generation: str = manifest["generation"]
            self._lexical: dict[str, Any] | None = manifest.get("lexical")
            self._columns: list[str] = list(manifest.get("columns", []))
            data = MappedFile(folder / manifest["folder"] / _DATA, manifest["data"])
            self.parts = {
                name: data.part(name, start, stop) for name, (start, stop) in manifest["arrays"].items()
            }
            self.vectors = self.parts["vectors.npy"]  # mapped copy-on-write
            vectors = self.vectors.array()
            self.records = PackedRecords.saved(self.parts, [tuple(names) for names in manifest["keys"]])
            self.ids = SavedIds(self.parts)
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"the store manifest in {str(folder)!r} is incomplete: {exc}") from exc
        if vectors.dtype != np.float32 or vectors.shape != (self.count, manifest["dimensions"]):
            raise StoreError(f"the saved store file {str(data.path)!r} does not hold the vectors")

    def check_all(self) -> None:
        """Check every block of the vectors, records and ids (the derived parts are checked as they load)."""
        for name, part in self.parts.items():
            if not name.startswith(("bm25.", "columns.")):
                part.check_all()

    def _arrays(self, prefix: str, names: list[str]) -> dict[str, npt.NDArray[Any]]:
        parts = [self.parts[f"{prefix}.{name}.npy"] for name in names]
        for part in parts:
            part.check_all()
        return {name: part.array() for name, part in zip(names, parts, strict=True)}

    def columns(self) -> MetadataColumns:
        """The saved filter columns, or columns built from the records when they are damaged or absent."""
        if self._columns:
            try:
                return MetadataColumns.from_arrays(self._arrays("columns", self._columns), self.count)
            except (StoreError, KeyError, ValueError) as exc:
                _log.warning("rebuilding the filter columns of %r: %s", str(self.folder), exc)
        columns = MetadataColumns()
        columns.write(
            np.arange(self.count), [metadata for _, metadata in self.records.read_many(range(self.count))]
        )
        return columns

    def lexical(self) -> tuple[LexicalIndex, list[str] | None]:
        """The saved BM25 index, or one built from the records when it is damaged, of another text
        analysis, or absent; and the store's ids by row, None when the index numbers rows alike."""
        described = self._lexical
        if described is not None:
            try:
                arrays = self._arrays("bm25", list(described["arrays"]))
                saved = from_arrays(described, arrays, TOKENIZER, str(self.folder))
                if len(saved.ids) == self.count:
                    index = LexicalIndex.from_saved(saved)
                    return index, None if described.get("same_rows") else self.ids.all_ids()
            except (StoreError, KeyError, TypeError, ValueError) as exc:
                if described.get("settings", {}).get("tokenizer") == TOKENIZER:
                    _log.warning("rebuilding the lexical index of %r: %s", str(self.folder), exc)
        index = LexicalIndex()
        rows = self.records.read_many(range(self.count))
        index.add(self.ids.all_ids(), [text for text, _ in rows], [metadata for _, metadata in rows])
        return index, None


def read_legacy(
    folder: Path, manifest: dict[str, Any], dimensions: int
) -> tuple[str, FloatArray, list[Document]]:
    """The generation, vectors and documents of a first-format save (`vectors-<g>.npy` and
    `documents-<g>.json`; the rest of it is derived). JSON has no checksum: each record is checked."""
    try:
        vectors = np.load(folder / manifest["vectors"], allow_pickle=False)
        found = json.loads((folder / manifest["documents"]).read_bytes().decode("utf-8", "surrogatepass"))
        documents = [
            Document(*record) for record in zip(found["ids"], found["texts"], found["metadata"], strict=True)
        ]
        count = manifest["count"]
        if vectors.dtype != np.float32 or vectors.shape != (count, dimensions):
            raise ValueError(f"{count} vectors of {dimensions} dimensions expected")
        if len({document.id for document in documents}) != len(documents) or len(documents) != count:
            raise ValueError(f"{count} documents with distinct ids expected")
    except (OSError, ValueError, KeyError, TypeError, InvalidRequestError) as exc:
        raise StoreError(f"cannot read the store saved in {str(folder)!r}: {exc}") from exc
    return _generation(manifest), vectors, documents
