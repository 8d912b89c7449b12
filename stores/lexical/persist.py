"""Saving a lexical index to a folder and reading it back, crash-safely.

The folder gets `lexical.json` (format, version, BM25 settings, tokenizer, sizes, data file name) and
one `lexical-<generation>.npz` holding the postings, document lengths, ids and vocabulary. A save writes
and flushes a new generation, then switches the manifest with one `os.replace`: a crash at any moment
leaves the manifest naming a complete generation, old or new. These names do not collide with the
numpy store's files, so an index can be saved inside a store's folder.

Example:
    >>> import tempfile, numpy as np
    >>> from stores.lexical.segments import build
    >>> folder = tempfile.mkdtemp()
    >>> segment = build(np.array([0, 1], np.int32), np.array([0, 0]), 1, first_row=0)
    >>> settings = {"k1": 0.9, "b": 0.4, "tokenizer": "t"}
    >>> write(folder, Saved(settings, ["x", "y"], ["a"], np.array([2]), segment))
    >>> read(folder, "t").ids
    ['a']
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError, StoreNotFoundError
from stores.durable import sync_folder, write_new
from stores.lexical.segments import Segment

__all__ = ["MANIFEST", "Saved", "from_arrays", "read", "read_settings", "to_arrays", "write"]

MANIFEST = "lexical.json"
_FORMAT = "rag-advisors/lexical-index"
_VERSION = 1
_DATA_PREFIX = "lexical-"
_STAGED_PREFIX = f".{MANIFEST}."


@dataclass
class Saved:
    """Everything a saved index holds; rows are `0..len(ids) - 1`, all live."""

    settings: dict[str, Any]
    terms: list[str]
    ids: list[str]
    lengths: npt.NDArray[np.int64]
    segment: Segment


def _encode(text: str) -> npt.NDArray[np.uint8]:
    # surrogatepass: ids are any Python str, lone surrogates included.
    return np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _decode(data: npt.NDArray[np.uint8]) -> str:
    return data.tobytes().decode("utf-8", "surrogatepass")


def to_arrays(saved: Saved) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The saved index as a small description (settings and sizes) and its arrays, as `write` saves
    them; `from_arrays` reads them back (a numpy store keeps them among its own files)."""
    arrays: dict[str, npt.NDArray[Any]] = {
        "terms": saved.segment.terms.astype(np.int32),  # memory may hold them narrower (`narrow_terms`)
        "starts": saved.segment.starts.astype(np.int64),  # memory holds them narrower (`narrow_starts`)
        "rows": saved.segment.absolute_rows(),  # memory may hold them as narrower offsets
        "tfs": saved.segment.tfs.astype(np.int32),  # memory may hold them narrower (`narrow_tfs`)
        "lengths": saved.lengths.astype(np.int64),
        "ids": _encode(json.dumps(saved.ids, ensure_ascii=False)),
        # Terms are runs of word characters: a newline never occurs inside one.
        "vocabulary": _encode("\n".join(saved.terms)),
    }
    described: dict[str, Any] = {
        "settings": saved.settings,
        "documents": len(saved.ids),
        "terms": len(saved.terms),
        "postings": saved.segment.size,
    }
    return described, arrays


def write(path: str | os.PathLike[str], saved: Saved) -> None:
    """Save into the folder `path` (created if needed), replacing an earlier save atomically."""
    folder = Path(path)
    generation = uuid.uuid4().hex
    data_name = f"{_DATA_PREFIX}{generation}.npz"
    described, arrays = to_arrays(saved)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    manifest = {"format": _FORMAT, "version": _VERSION, **described, "data": data_name}
    staged = folder / f"{_STAGED_PREFIX}{generation}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_new(folder / data_name, buffer.getvalue())
        write_new(staged, json.dumps(manifest, indent=1).encode("utf-8"))
        os.replace(staged, folder / MANIFEST)
        sync_folder(folder)
    except OSError as exc:
        raise StoreError(f"could not save the lexical index to {str(folder)!r}: {exc}") from exc
    _remove_other_generations(folder, keep=data_name)


def _remove_other_generations(folder: Path, keep: str) -> None:
    for entry in folder.iterdir():
        stale = entry.name.startswith(_STAGED_PREFIX) or (
            entry.name.startswith(_DATA_PREFIX) and entry.name.endswith(".npz") and entry.name != keep
        )
        if stale and entry.is_file():
            with contextlib.suppress(OSError):  # a leftover file only costs disk space
                entry.unlink()


def _manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the lexical index manifest {str(path)!r}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise StoreError(f"{str(path)!r} is not a lexical index manifest (format {_FORMAT!r})")
    if manifest.get("version") != _VERSION:
        raise StoreError(
            f"the lexical index in {str(folder)!r} has format version {manifest.get('version')!r}; "
            f"this version reads {_VERSION}: rebuild it from the documents"
        )
    return manifest


def read_settings(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The recorded settings (`k1`, `b`, `tokenizer`) of the index saved in `path`, or None."""
    manifest = _manifest(Path(path))
    return None if manifest is None else dict(manifest["settings"])


def read(path: str | os.PathLike[str], tokenizer: str) -> Saved:
    """The index saved in `path`, which must have been analysed with `tokenizer`."""
    folder = Path(path)
    manifest = _manifest(folder)
    if manifest is None:
        raise StoreNotFoundError(
            f"no lexical index saved in {str(folder)!r} (no {MANIFEST})", path=str(folder)
        )
    try:
        # Opened here, not by np.load, which leaves the file open when the zip cannot be read.
        with (folder / manifest["data"]).open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        raise StoreError(f"cannot read the lexical index saved in {str(folder)!r}: {exc}") from exc
    return from_arrays(manifest, arrays, tokenizer, str(folder))


def from_arrays(
    described: dict[str, Any], arrays: Mapping[str, npt.NDArray[Any]], tokenizer: str, where: str
) -> Saved:
    """The index `to_arrays` described, which must have been analysed with `tokenizer`; `where` names
    the save in errors.

    Raises:
        StoreError: another tokenizer, or arrays that do not fit together.
    """
    settings = described["settings"]
    if settings.get("tokenizer") != tokenizer:
        raise StoreError(
            f"the lexical index in {where!r} was built with tokenizer {settings.get('tokenizer')!r}, "
            f"not {tokenizer!r}: rebuild it from the documents"
        )
    try:
        ids = json.loads(_decode(arrays["ids"]))
        vocabulary = _decode(arrays["vocabulary"])
        terms = vocabulary.split("\n") if vocabulary else []
        _check(where, described, arrays, ids, terms)
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read the lexical index saved in {where!r}: {exc}") from exc
    # Frequencies are packed only once the arrays are known to be consistent.
    segment = Segment.of(0, len(ids), arrays["terms"], arrays["starts"], arrays["rows"], arrays["tfs"])
    return Saved(settings, terms, ids, arrays["lengths"], segment)


def _check(
    where: str, manifest: dict[str, Any], arrays: Mapping[str, Any], ids: list[str], terms: list[str]
) -> None:
    count = len(ids)
    held, starts, rows, tfs, lengths = (
        arrays[name] for name in ("terms", "starts", "rows", "tfs", "lengths")
    )
    problems = [
        count != manifest["documents"] or len(set(ids)) != count,
        len(terms) != manifest["terms"] or rows.shape != (manifest["postings"],),
        lengths.dtype != np.int64 or lengths.shape != (count,),
        held.dtype != np.int32 or rows.dtype != np.int32 or tfs.dtype != np.int32,
        starts.dtype != np.int64 or starts.shape != (held.size + 1,),
        tfs.shape != rows.shape or int(starts[-1]) != rows.size,
        bool(rows.size) and (int(rows.max()) >= count or int(rows.min()) < 0),
        bool(tfs.size) and int(tfs.min()) < 1,
        bool(held.size) and int(held.max()) >= len(terms),
    ]
    if any(problems):
        raise StoreError(f"the lexical index saved in {where!r} is inconsistent: rebuild it")
