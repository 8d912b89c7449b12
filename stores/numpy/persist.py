"""Saving the numpy store to a folder and opening it again, crash-safely and in constant time.

A folder holds `manifest.json` and one generation folder, `generation-<id>/`, that it names. The
generation holds one file, `arrays.bin`, of `.npy` arrays one after the other (`stores.numpy.files`;
one file, so an open store holds one mapping and one file descriptor): the vectors (float32, one
row a document), the packed records (texts and metadata, `stores.numpy.records`) and their ends, the
ids and their lookup tables (`stores.numpy.saved_ids`), the BM25 index's arrays (`bm25.*`,
`stores.lexical.persist`) and the metadata's filter columns (`columns.*`,
`stores.numpy.columns_file`). The manifest records the model, the count, the records' key sequences,
where each array lies, and the file's size and a CRC-32 per 256 KiB block; it carries a CRC-32 of its
own body.

Opening reads the manifest, compares the file's size with it and maps the file (copy-on-write): a
few system calls, whatever the size. Nothing is decoded or validated then; each read checks the
blocks it touches against their checksums (`MappedFile.check`), so a damaged file is reported with a
`StoreError` naming it, never answered from. The mapping outlives the file's removal, so a later
save by another process, which removes this generation, cannot pull it from under a reader.

A save writes a complete new generation folder, flushes every file and the folder, then replaces the
manifest with one `os.replace` (flushed too): killed at any moment, the folder holds the previous
generation or the next, never a mix. Older generations (and the files of the first format, below)
are removed after the switch. Saves hold an exclusive lock on `<folder>/.lock`
(`stores.locking.FolderLock`) and first check that the folder still holds the generation the saving
copy was opened from (or last saved): a stale copy never replaces newer data silently.

Folders saved by the first format (`version` 1: vectors, JSON documents, an `.npz` of columns) are
read by `stores.numpy.legacy`; the store writes them again in this format when it opens them.

Example:
    >>> import tempfile
    >>> from stores.numpy.records import PackedRecords
    >>> records = PackedRecords()
    >>> records.write(np.arange(2), [("x", {}), ("y", {})])
    >>> folder = tempfile.mkdtemp()
    >>> contents = Contents("m", 2, np.eye(2, dtype=np.float32), records, ["a", "b"], None, None, None)
    >>> generation = write(folder, contents)
    >>> opened = open_save(folder, "m", 2)
    >>> opened.count, opened.generation == generation
    (2, True)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.errors import EmbeddingModelMismatchError, StoreError, StoreNotFoundError
from stores.durable import sync_folder, write_new
from stores.lexical.index import LexicalIndex
from stores.lexical.persist import to_arrays
from stores.locking import FolderLock
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import columns_to_arrays
from stores.numpy.files import BLOCK, MappedFile, MappedPart, write_arrays
from stores.numpy.records import PackedRecords
from stores.numpy.saved_ids import id_arrays

__all__ = [
    "LOCK_FILE",
    "MANIFEST",
    "Contents",
    "OpenedSave",
    "exists",
    "open_save",
    "saved_generation",
    "write",
]

MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
# The store's name before it was `NumpyVectorStore`, kept in the format tag so every saved folder opens.
_FORMAT = "rag-advisors/inmemory-store"
_VERSION = 2
LEGACY_VERSION = 1
_GENERATION_PREFIX = "generation-"
_DATA = "arrays.bin"  # every array of a generation, one `.npy` image after another
# Files of the first format, and staged manifests, removed once a save of this format is in place.
_OLD_FILE_PREFIXES = ("vectors-", "documents-", "columns-", f".{MANIFEST}.")
_OLD_FOLDER_PREFIX = "bm25-"
IntArray = npt.NDArray[np.int64]


@dataclass
class Contents:
    """What a save writes: the model, the vectors and records by row, the ids, and the derived parts."""

    model: str
    dimensions: int
    vectors: npt.NDArray[np.float32]
    records: PackedRecords
    ids: list[str]
    id_order: IntArray | None
    """Rows sorted by id, if known (else sorted here)."""
    lexical: LexicalIndex | None
    columns: MetadataColumns | None


@dataclass
class OpenedSave:
    """A generation mapped into memory: its files by name and what the manifest says about them."""

    folder: Path
    model: str
    dimensions: int
    count: int
    generation: str
    keys: list[tuple[str, ...]]
    files: dict[str, MappedPart]
    lexical: dict[str, Any] | None = None
    """The BM25 index's description (`stores.lexical.persist.to_arrays`), or None if not saved."""
    columns: list[str] = field(default_factory=list)
    """Names of the saved filter-column arrays."""

    def arrays(self, prefix: str, names: list[str]) -> dict[str, npt.NDArray[Any]]:
        """The arrays `prefix.<name>.npy`, every block checked first."""
        out = {}
        for name in names:
            mapped = self.files[f"{prefix}.{name}.npy"]
            mapped.check_all()
            out[name] = mapped.array()
        return out


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a saved store."""
    return (Path(path) / MANIFEST).is_file()


def saved_generation(path: str | os.PathLike[str]) -> str | None:
    """The generation of the save in `path` (None when nothing is saved there)."""
    folder = Path(path)
    if not exists(folder):
        return None
    return generation_of(read_manifest(folder))


def generation_of(manifest: dict[str, Any]) -> str:
    """The generation a manifest names (saves of the first format name it only in their file names)."""
    generation = manifest.get("generation")
    if isinstance(generation, str):
        return generation
    return str(manifest.get("vectors", "")).removeprefix("vectors-").removesuffix(".npy")


def _body_check(body: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(body, sort_keys=True).encode("ascii"))


def read_manifest(folder: Path) -> dict[str, Any]:
    """The folder's manifest, of either format.

    Raises:
        StoreNotFoundError: there is none.
        StoreError: it is unreadable, damaged, or of another format.
    """
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
        or manifest.get("version") not in (_VERSION, LEGACY_VERSION)
    ):
        raise StoreError(f"{str(path)!r} is not a numpy store manifest (format {_FORMAT!r})")
    if manifest["version"] == _VERSION:
        body = {name: value for name, value in manifest.items() if name != "check"}
        if manifest.get("check") != _body_check(body):
            raise StoreError(f"the store manifest {str(path)!r} is damaged (it fails its checksum)")
    return manifest


def check_model(folder: Path, manifest: dict[str, Any], model: str, dimensions: int) -> None:
    """Raise `EmbeddingModelMismatchError` unless the save holds vectors of `model` and `dimensions`."""
    if manifest["model"] != model or manifest["dimensions"] != dimensions:
        raise EmbeddingModelMismatchError(
            f"the store at {str(folder)!r} holds vectors of model {manifest['model']!r} "
            f"({manifest['dimensions']} dimensions); it cannot be opened with model {model!r} "
            f"({dimensions} dimensions)"
        )


# -- writing -------------------------------------------------------------------------------------


def write(
    path: str | os.PathLike[str], contents: Contents, *, expected: str | None = None, overwrite: bool = False
) -> str:
    """Save `contents` into the folder `path` (created if needed), replacing any earlier save atomically.

    Args:
        path: The folder.
        contents: What to save.
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
            return _write_unlocked(folder, contents)
    except OSError as exc:
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc


def _stale_message(folder: Path, current: str | None, expected: str | None) -> str:
    seen = "this copy was loaded or last saved" if expected is not None else "this store was created"
    return (
        f"not saving the store to {str(folder)!r}: another writer saved there (generation {current!r}) "
        f"since {seen}, and this copy does not hold those changes; nothing was written. Load the store "
        f"again and repeat the changes, or save with overwrite=True to replace the newer save"
    )


def _arrays(contents: Contents) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """Every array of the save by file name, and what the manifest says of the derived parts."""
    data, stops = contents.records.packed()
    arrays: dict[str, npt.NDArray[Any]] = {
        "vectors.npy": contents.vectors,
        "records.npy": data,
        "record_stops.npy": stops,
        **id_arrays(contents.ids, contents.id_order),
    }
    described: dict[str, Any] = {"keys": contents.records.key_sets(), "lexical": None, "columns": []}
    if contents.lexical is not None:
        lexical, lexical_arrays = to_arrays(contents.lexical.saved())
        described["lexical"] = {**lexical, "arrays": sorted(lexical_arrays)}
        arrays.update({f"bm25.{name}.npy": array for name, array in lexical_arrays.items()})
    if contents.columns is not None:
        columns = columns_to_arrays(contents.columns)
        described["columns"] = sorted(columns)
        arrays.update({f"columns.{name}.npy": array for name, array in columns.items()})
    return arrays, described


def _write_unlocked(folder: Path, contents: Contents) -> str:
    generation = uuid.uuid4().hex
    target = folder / f"{_GENERATION_PREFIX}{generation}"
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
        manifest = {**body, "check": _body_check(body)}
        write_new(staged, json.dumps(manifest, indent=1).encode("ascii"))
        os.replace(staged, folder / MANIFEST)  # the switch: before it the old generation, after it the new
        sync_folder(folder)
    except OSError as exc:
        shutil.rmtree(target, ignore_errors=True)
        staged.unlink(missing_ok=True)
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc
    _remove_other_generations(folder, keep=target.name)
    return generation


def _remove_other_generations(folder: Path, keep: str) -> None:
    for entry in folder.iterdir():
        if entry.name == keep:
            continue
        if entry.name.startswith(_OLD_FILE_PREFIXES) and entry.is_file():
            with contextlib.suppress(OSError):  # a leftover file only costs disk space
                entry.unlink()
        elif entry.name.startswith((_GENERATION_PREFIX, _OLD_FOLDER_PREFIX)) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


# -- opening -------------------------------------------------------------------------------------


def open_save(path: str | os.PathLike[str], model: str, dimensions: int) -> OpenedSave:
    """Map the generation saved in `path`, checking it was embedded with `model` of `dimensions`.

    The folder's lock is held while mapping, so a save by another process cannot remove the files
    half-way; a folder where no lock file can be made (read-only) is opened without.

    Raises:
        StoreNotFoundError: nothing is saved there.
        EmbeddingModelMismatchError: another model's vectors.
        StoreError: a damaged manifest, a missing or resized file, or a save of the first format
            (`stores.numpy.legacy` reads those).
    """
    folder = Path(path)
    try:
        lock = FolderLock(folder, LOCK_FILE)
        lock.acquire()
    except OSError:
        return _open_unlocked(folder, model, dimensions)
    with lock:
        return _open_unlocked(folder, model, dimensions)


def _open_unlocked(folder: Path, model: str, dimensions: int) -> OpenedSave:
    manifest = read_manifest(folder)
    check_model(folder, manifest, model, dimensions)
    if manifest["version"] != _VERSION:
        raise StoreError(
            f"the store in {str(folder)!r} is of the first format: read it with stores.numpy.legacy"
        )
    try:
        data = MappedFile.open(folder / manifest["folder"] / _DATA, manifest["data"])
        files = {name: data.part(name, start, stop) for name, (start, stop) in manifest["arrays"].items()}
        keys = [tuple(names) for names in manifest["keys"]]
        opened = OpenedSave(
            folder,
            model,
            dimensions,
            int(manifest["count"]),
            manifest["generation"],
            keys,
            files,
            manifest.get("lexical"),
            list(manifest.get("columns", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"the store manifest in {str(folder)!r} is incomplete: {exc}") from exc
    vectors = files["vectors.npy"].array()
    if vectors.dtype != np.float32 or vectors.shape != (opened.count, dimensions):
        raise StoreError(f"the saved store file {str(files['vectors.npy'].path)!r} does not hold the vectors")
    return opened


def is_legacy(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a save of the first format."""
    return bool(read_manifest(Path(path))["version"] == LEGACY_VERSION)
