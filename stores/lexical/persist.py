"""Saving a lexical index to a folder and reading it back, crash-safely.

The folder holds `lexical.json` (format, version, settings, sizes) and an uncompressed
`lexical-<generation>.npz` of `to_arrays`: the postings segments as searched, with their bounds, the
document lengths, and the ids and terms with their hash maps. A load maps the file, checks each array's
CRC-32 and slices: nothing is decoded. A save writes a new generation, then switches the manifest with
one `os.replace`, so a crash leaves a complete generation named. The numpy store keeps the same arrays
in its own files. Version 1 saves (one merged segment) are read and converted.

Example:
    >>> import tempfile, numpy as np
    >>> from stores.lexical.segments import build
    >>> folder, ids, terms = tempfile.mkdtemp(), PackedIds(), PackedIds()
    >>> ids.append(["a"]), terms.append(["x", "y"])
    (None, None)
    >>> segment = build(np.array([0, 1], np.int32), np.array([0, 0]), 1, first_row=0)
    >>> write(folder, Saved(LexicalSettings(0.9, 0.4, "t"), terms, ids, np.array([2]), [segment]))
    >>> read(folder, "t").ids.live_ids(), read(folder, "t").settings.k1
    (['a'], 0.9)
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import mmap
import os
import struct
import uuid
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.errors import InvalidRequestError, StoreError, StoreNotFoundError
from stores.durable import sync_folder, write_new
from stores.lexical.idmap import PackedIds
from stores.lexical.segments import Segment, narrow_tfs, split
from stores.lexical.text import TOKENIZER

__all__ = ["MANIFEST", "LexicalSettings", "Saved", "from_arrays", "read", "to_arrays", "write"]

# Chosen on BEIR SciFact, beside Lucene's k1=1.2, b=0.75 (docs/retrieval.md).
DEFAULT_K1 = 1.0
DEFAULT_B = 0.6
MANIFEST = "lexical.json"
_FORMAT = "rag-advisors/lexical-index"
_VERSION = 2
_SEGMENT_ARRAYS = ("terms", "starts", "rows", "tfs")
_DATA_PREFIX = "lexical-"
_STAGED_PREFIX = f".{MANIFEST}."


@dataclass(frozen=True)
class LexicalSettings:
    """What a saved index records and checks on load: BM25 parameters and the text analysis name.

    Example:
        >>> LexicalSettings(k1=1.2).b
        0.6
    """

    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    tokenizer: str = TOKENIZER

    def __post_init__(self) -> None:
        if isinstance(self.k1, bool) or not isinstance(self.k1, int | float) or not 0 <= self.k1 < math.inf:
            raise InvalidRequestError(f"BM25 k1 must be a finite number >= 0, got {self.k1!r}")
        if isinstance(self.b, bool) or not isinstance(self.b, int | float) or not 0 <= self.b <= 1:
            raise InvalidRequestError(f"BM25 b must be within [0, 1], got {self.b!r}")


@dataclass
class Saved:
    """Everything a saved index holds; rows are `0..len(ids) - 1`, all live."""

    settings: LexicalSettings
    terms: PackedIds
    ids: PackedIds
    lengths: npt.NDArray[np.integer[Any]]
    segments: list[Segment]


def to_arrays(saved: Saved) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The saved index as a small description (settings and sizes) and its arrays."""
    parts = saved.segments
    table = [(part.first_row, part.end_row, part.terms.size, part.size) for part in parts]
    arrays: dict[str, npt.NDArray[Any]] = {
        "segments": np.array(table, np.int64).reshape(-1, 4),
        **{
            name: np.concatenate([np.zeros(0, dtype), *(getattr(part, name) for part in parts)])
            for name, dtype in zip(_SEGMENT_ARRAYS, (np.int32, np.int64, np.uint16, np.uint8), strict=True)
        },
        "lengths": saved.lengths,
        **saved.ids.to_arrays("id"),
        **saved.terms.to_arrays("term"),
    }
    sizes = {"documents": len(saved.ids), "terms": len(saved.terms), "postings": arrays["rows"].size}
    return {"settings": dataclasses.asdict(saved.settings), **sizes}, arrays


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
    for entry in folder.iterdir():  # earlier generations and staged leftovers of a crashed save
        name = entry.name
        if name.startswith(_STAGED_PREFIX) or (
            name.startswith(_DATA_PREFIX) and name.endswith(".npz") and name != data_name
        ):
            with contextlib.suppress(OSError):  # a leftover file only costs disk space
                entry.unlink()


def _mapped(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The arrays of an uncompressed `.npz` (as `np.savez` writes), mapped copy-on-write, each checked
    against the zip's CRC-32 of its member."""
    arrays = {}
    with path.open("rb") as handle, zipfile.ZipFile(handle) as archive:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        for info in archive.infolist():
            name_size, extra_size = struct.unpack_from("<HH", buffer, info.header_offset + 26)
            start = info.header_offset + 30 + name_size + extra_size  # past the member's local header
            member = memoryview(buffer)[start : start + info.file_size]
            if info.compress_type != zipfile.ZIP_STORED or zlib.crc32(member) != info.CRC:
                raise ValueError(f"{info.filename!r} is compressed or fails its CRC-32")
            stream, fmt = io.BytesIO(member[: 1 << 16]), np.lib.format
            header = (
                fmt.read_array_header_1_0 if fmt.read_magic(stream) == (1, 0) else fmt.read_array_header_2_0
            )
            shape, fortran, dtype = header(stream)
            if fortran or dtype.hasobject:
                raise ValueError(f"{info.filename!r} is not a plain array")
            array = np.frombuffer(buffer, dtype, math.prod(shape), offset=start + stream.tell())
            arrays[info.filename.removesuffix(".npy")] = array.reshape(shape)
    return arrays


def read(path: str | os.PathLike[str], tokenizer: str) -> Saved:
    """The index saved in `path`, which must have been analysed with `tokenizer`."""
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise StoreNotFoundError(
            f"no lexical index saved in {str(folder)!r} (no {MANIFEST})", path=str(folder)
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the lexical index manifest {str(manifest_path)!r}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise StoreError(f"{str(manifest_path)!r} is not a lexical index manifest (format {_FORMAT!r})")
    if manifest.get("version") not in (1, _VERSION):
        raise StoreError(
            f"the lexical index in {str(folder)!r} has format version {manifest.get('version')!r}; "
            f"this version reads 1 and {_VERSION}: rebuild it from the documents"
        )
    try:
        arrays = _mapped(folder / manifest["data"])
    except (OSError, ValueError, KeyError, TypeError, struct.error, zipfile.BadZipFile) as exc:
        raise StoreError(f"cannot read the lexical index saved in {str(folder)!r}: {exc}") from exc
    return from_arrays(manifest, arrays, tokenizer, str(folder))


def from_arrays(
    described: dict[str, Any], arrays: Mapping[str, npt.NDArray[Any]], tokenizer: str, where: str
) -> Saved:
    """The index `to_arrays` described, analysed with `tokenizer`; `where` names the save in errors.

    Raises:
        StoreError: another tokenizer, or a description that does not fit the arrays.
    """
    settings = described["settings"]
    if settings.get("tokenizer") != tokenizer:
        raise StoreError(
            f"the lexical index in {where!r} was built with tokenizer {settings.get('tokenizer')!r}, "
            f"not {tokenizer!r}: rebuild it from the documents"
        )
    try:
        chosen = LexicalSettings(settings["k1"], settings["b"], tokenizer)
        if "segments" in arrays:
            terms, ids = PackedIds.saved(arrays, "term"), PackedIds.saved(arrays, "id")
            segments = _segments(arrays)
        else:
            terms, ids, segments = _first_format(arrays)
        # The arrays pass checksums (the zip's, or the numpy store's): only the manifest may not fit them.
        sizes = (described["documents"], described["terms"], described["postings"])
        inconsistent = (len(ids), len(terms), sum(part.size for part in segments)) != sizes
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read the lexical index saved in {where!r}: {exc}") from exc
    if inconsistent:
        raise StoreError(f"the lexical index saved in {where!r} is inconsistent: rebuild it")
    return Saved(chosen, terms, ids, arrays["lengths"], segments)


def _segments(arrays: Mapping[str, npt.NDArray[Any]]) -> list[Segment]:
    """The segments `to_arrays` concatenated, as slices of its arrays."""
    terms, starts, rows, tfs = (arrays[name] for name in _SEGMENT_ARRAYS)
    table = arrays["segments"].tolist()
    segments, term_at, posting_at = [], 0, 0
    for number, (first_row, end_row, term_count, posting_count) in enumerate(table):
        term_end, posting_end = term_at + term_count, posting_at + posting_count
        held, postings = slice(term_at, term_end), slice(posting_at, posting_end)
        offsets = starts[term_at + number : term_end + number + 1]  # each segment's own, from 0
        segments.append(Segment(first_row, end_row, terms[held], offsets, rows[postings], tfs[postings]))
        term_at, posting_at = term_end, posting_end
    return segments


def _first_format(arrays: Mapping[str, npt.NDArray[Any]]) -> tuple[PackedIds, PackedIds, list[Segment]]:
    """The terms, ids and segments of a version 1 save: one segment, ids as JSON, terms as lines."""
    terms, ids = PackedIds(), PackedIds()
    ids.append(json.loads(arrays["ids"].tobytes().decode("utf-8", "surrogatepass")))
    vocabulary = arrays["vocabulary"].tobytes().decode("utf-8", "surrogatepass")
    terms.append(vocabulary.split("\n") if vocabulary else [])
    held, starts, rows, tfs = (arrays[name] for name in _SEGMENT_ARRAYS)
    return terms, ids, split(Segment(0, len(ids), held, starts, rows, narrow_tfs(tfs)))
