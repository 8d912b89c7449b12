"""Saving the in-memory store to a folder and loading it back, crash-safely.

A folder holds `manifest.json` and the data it names: `vectors-<generation>.npy` (float32),
`documents-<generation>.json` (ids, texts and metadata) and the BM25 index in `bm25-<generation>/`
(`stores.lexical`). A save writes a new generation of all three, flushes them, then replaces the
manifest in one `os.replace`: a crash at any point leaves the manifest naming one complete generation,
old or new, so the vectors and the lexical index can never disagree. Other generations are removed
after the switch. A save without a lexical index (made before there was one), or one analysed with
another tokenizer, loads with `Snapshot.lexical` None: the store rebuilds the index from the texts.

Example:
    >>> import tempfile, numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> write(folder, Snapshot("m", 2, np.eye(2, dtype=np.float32), ["a", "b"], ["x", "y"], [{}, {}]))
    >>> read(folder, "m", 2).ids
    ['a', 'b']
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue, check_metadata
from rag.errors import EmbeddingModelMismatchError, StoreError, StoreNotFoundError
from stores.lexical import LexicalIndex
from stores.lexical_text import TOKENIZER

__all__ = ["MANIFEST", "Snapshot", "exists", "read", "write"]

MANIFEST = "manifest.json"
_FORMAT = "rag-advisors/inmemory-store"
_VERSION = 1
_DATA_PREFIXES = ("vectors-", "documents-", f".{MANIFEST}.")
_LEXICAL_PREFIX = "bm25-"


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


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a saved store."""
    return (Path(path) / MANIFEST).is_file()


def _write_file(path: Path, fill: Callable[[IO[bytes]], Any]) -> None:
    with open(path, "xb") as handle:
        fill(handle)
        handle.flush()
        os.fsync(handle.fileno())


def _encode_documents(snapshot: Snapshot) -> bytes:
    payload = {"ids": snapshot.ids, "texts": snapshot.texts, "metadata": snapshot.metadatas}
    # surrogatepass keeps texts with lone surrogates (valid Python strings) round-tripping.
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")


def write(path: str | os.PathLike[str], snapshot: Snapshot) -> None:
    """Save `snapshot` into the folder `path` (created if needed), replacing any earlier save atomically."""
    folder = Path(path)
    generation = uuid.uuid4().hex
    vectors_name = f"vectors-{generation}.npy"
    documents_name = f"documents-{generation}.json"
    manifest = {
        "format": _FORMAT,
        "version": _VERSION,
        "model": snapshot.model,
        "dimensions": snapshot.dimensions,
        "count": len(snapshot.ids),
        "vectors": vectors_name,
        "documents": documents_name,
    }
    staged = folder / f".{MANIFEST}.{generation}.tmp"
    lexical_name = f"{_LEXICAL_PREFIX}{generation}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_file(folder / vectors_name, lambda f: np.save(f, snapshot.vectors, allow_pickle=False))
        _write_file(folder / documents_name, lambda f: f.write(_encode_documents(snapshot)))
        if snapshot.lexical is not None:
            snapshot.lexical.save(folder / lexical_name)  # flushed before the manifest names it
            manifest["lexical"] = lexical_name
        _write_file(staged, lambda f: f.write(json.dumps(manifest, indent=1).encode("utf-8")))
        os.replace(staged, folder / MANIFEST)
        _sync_folder(folder)
    except OSError as exc:
        raise StoreError(f"could not save the store to {str(folder)!r}: {exc}") from exc
    _remove_other_generations(folder, keep={vectors_name, documents_name, lexical_name})


def _sync_folder(folder: Path) -> None:
    """Flush the folder entry so the renamed manifest survives a power loss (where the OS allows)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


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
        raise StoreNotFoundError(
            f"no saved in-memory store at {str(folder)!r} (no {MANIFEST})", path=str(folder)
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the store manifest {str(manifest_path)!r}: {exc}") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != _FORMAT
        or manifest.get("version") != _VERSION
    ):
        raise StoreError(f"{str(manifest_path)!r} is not an in-memory store manifest (format {_FORMAT!r})")
    return manifest


def read(path: str | os.PathLike[str], model: str, dimensions: int) -> Snapshot:
    """Load the store saved in `path`, checking it was embedded with `model` of `dimensions`."""
    folder = Path(path)
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
        or not len(ids) == len(texts) == count
    ):
        raise StoreError(f"the store saved in {str(folder)!r} is inconsistent: {count} documents expected")
    checked = [check_metadata(doc_id, metadata) for doc_id, metadata in zip(ids, metadatas, strict=True)]
    return Snapshot(model, dimensions, vectors, ids, texts, checked, _read_lexical(folder, manifest, ids))


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
