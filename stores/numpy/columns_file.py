"""Metadata columns as plain arrays, and the `.npz` file that keeps them, so a load re-encodes nothing.

`MetadataColumns` encodes every metadata value once, when it is written; building them again from the
metadata of 100,000 records costs about a second and a half of Python, which every new process paid
before its first filtered query. Saving the encoded arrays themselves makes a load one `np.load`:

- each key's value slots (`kind`, and `num`, `code` where present) and list postings (the same plus
  `row`), cut to the slots in use, named `k<i>.values.<array>` and `k<i>.items.<array>` where `i` is
  the key's place in the header's key list (keys may hold any character, file member names may not);
- the string vocabulary packed (`pack_strings`: one UTF-8 buffer, NUL-separated, and each string's
  end, so a load splits it in one call), and its sorted order, so the first string ordering does not
  sort it again;
- a header (`columns.header`: JSON with the format version and the keys).

This module reads and sets the internals of `stores.numpy.columns` (the two are one unit, split for
size; that module does not import this one). `columns_from_arrays` checks every array's type and
shape and that each code, row and kind is in range before anything uses them, and raises
`ValueError` otherwise: the caller then rebuilds the columns from the metadata, so a damaged save
costs time, never a wrong answer. `write_arrays` writes a file atomically (staged, flushed, renamed
over the old one) and `read_arrays` answers None for a missing, truncated or damaged file (the zip
format's CRC covers every member).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> columns = MetadataColumns()
    >>> columns.write(np.arange(2), [{"lang": "en"}, {"lang": "de", "n": 2}])
    >>> path = Path(tempfile.mkdtemp()) / "columns.npz"
    >>> write_arrays(path, columns_to_arrays(columns))
    >>> sorted(columns_from_arrays(read_arrays(path) or {}, rows=2).keys())
    ['lang', 'n']
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from stores.durable import sync_folder, write_new
from stores.numpy.columns import LIST, STR, MetadataColumns, _Column, _Encoded

__all__ = [
    "columns_from_arrays",
    "columns_to_arrays",
    "pack_strings",
    "read_arrays",
    "read_text_array",
    "savez",
    "unpack_strings",
    "write_arrays",
]

Arrays = dict[str, npt.NDArray[Any]]
_HEADER = "columns.header"
_VERSION = 1
_KINDS = 6  # MISSING .. LIST
_SEPARATOR = "\x00"
# The arrays an encoded column may have, and their dtypes.
_DTYPES = {"kind": np.int8, "num": np.float64, "code": np.int32, "row": np.int64}


def pack_strings(strings: Sequence[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """`strings` as one UTF-8 buffer (lone surrogates kept), NUL between each two, and where each one
    ends (in characters of the decoded buffer)."""
    joined = _SEPARATOR.join(strings)
    data = np.frombuffer(joined.encode("utf-8", "surrogatepass"), np.uint8)
    lengths = np.fromiter(map(len, strings), np.int64, len(strings)) + 1
    ends = np.cumsum(lengths, dtype=np.int64) - 1  # each string's end, before its separator
    return data, ends


def unpack_strings(data: npt.NDArray[Any], ends: npt.NDArray[Any]) -> list[str]:
    """The strings `pack_strings` packed; `ValueError` when the two arrays do not fit together."""
    if data.dtype != np.uint8 or data.ndim != 1 or ends.dtype != np.int64 or ends.ndim != 1:
        raise ValueError("packed strings need a uint8 buffer and int64 ends")
    joined = data.tobytes().decode("utf-8", "surrogatepass")
    count = len(ends)
    if count == 0:
        if joined:
            raise ValueError("packed strings: characters beyond the last string")
        return []
    starts = np.empty(count, np.int64)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    if int(ends[-1]) != len(joined) or bool((ends < starts).any()):
        raise ValueError("packed strings: the ends do not match the buffer")
    parts = joined.split(_SEPARATOR)
    if len(parts) == count:  # no string holds a NUL: splitting (in C) gives them all
        return parts
    bounds = list(zip(starts.tolist(), ends.tolist(), strict=True))
    if any(joined[end] != _SEPARATOR for _, end in bounds[:-1]):
        raise ValueError("packed strings: a separator is missing")
    return [joined[start:end] for start, end in bounds]


def _text_array(value: Any) -> npt.NDArray[np.uint8]:
    return np.frombuffer(json.dumps(value).encode("ascii"), np.uint8)


def read_text_array(arrays: Mapping[str, npt.NDArray[Any]], name: str) -> Any:
    """The JSON value kept as the uint8 array `name` (`ValueError` when absent or not JSON)."""
    array = arrays.get(name)
    if array is None or array.dtype != np.uint8 or array.ndim != 1:
        raise ValueError(f"no {name!r} array")
    return json.loads(array.tobytes().decode("ascii"))


def columns_to_arrays(columns: MetadataColumns) -> Arrays:
    """Every array of `columns`, cut to the slots in use (see the module docstring)."""
    names = columns.keys()
    arrays: Arrays = {_HEADER: _text_array({"version": _VERSION, "keys": names})}
    arrays["vocabulary"], arrays["vocabulary_ends"] = pack_strings(columns._vocabulary)
    vocabulary = columns._vocabulary
    arrays["vocabulary_order"] = np.asarray(
        sorted(range(len(vocabulary)), key=vocabulary.__getitem__), np.int64
    )
    for number, name in enumerate(names):
        column = columns._columns[name]
        for part, encoded in (("values", column.values), ("items", column.items)):
            for array_name, array in encoded._arrays():
                # Saved in the types `_DTYPES` names (memory may hold numbers narrower).
                used = array[: encoded.size].astype(_DTYPES[array_name], copy=False)
                arrays[f"k{number}.{part}.{array_name}"] = used
    return arrays


def _encoded(arrays: Mapping[str, npt.NDArray[Any]], prefix: str, postings: bool) -> _Encoded:
    """One encoded column read back, its arrays checked for type and shape."""
    found: dict[str, npt.NDArray[Any]] = {}
    for array_name, dtype in _DTYPES.items():
        array = arrays.get(f"{prefix}.{array_name}")
        if array is None:
            continue
        if array.dtype != dtype or array.ndim != 1:
            raise ValueError(f"{prefix}.{array_name} is not a column of {np.dtype(dtype)}")
        found[array_name] = array
    kind = found.get("kind")
    if kind is None or ("row" in found) != postings:
        raise ValueError(f"{prefix}: missing arrays")
    if any(len(array) != len(kind) for array in found.values()):
        raise ValueError(f"{prefix}: arrays of different lengths")
    return _Encoded(kind, found.get("num"), found.get("code"), found.get("row"), len(kind))


def _check_encoded(encoded: _Encoded, prefix: str, words: int, rows: int, postings: bool) -> None:
    """Every kind, string code and posting row of `encoded` in range (ValueError otherwise)."""
    kind, _, code = encoded.view()
    problems = [
        bool(kind.size) and (int(kind.min()) < 0 or int(kind.max()) >= _KINDS),
        postings and bool((kind == LIST).any()),
        # Codes index a table of `words` + 1 entries (-1: no string); a string slot must name a string.
        bool(code.size) and (int(code.min()) < -1 or int(code.max()) >= words),
        bool((code[kind == STR] < 0).any()),
        encoded.num is None and bool(((kind != STR) & (kind != LIST) & (kind != 0)).any()),
        not postings and encoded.size > rows,
        postings
        and bool(encoded.size)
        and (int(encoded.rows().min()) < 0 or int(encoded.rows().max()) >= rows),
    ]
    if any(problems):
        raise ValueError(f"{prefix}: values out of range")


def _vocabulary(arrays: Mapping[str, npt.NDArray[Any]], columns: MetadataColumns) -> None:
    """Give `columns` the saved string vocabulary, its codes and its sorted order, all checked."""
    vocabulary = unpack_strings(arrays["vocabulary"], arrays["vocabulary_ends"])
    size = len(vocabulary)
    order = arrays["vocabulary_order"]
    if order.dtype != np.int64 or order.shape != (size,):
        raise ValueError("the vocabulary order does not fit the vocabulary")
    if size and not np.array_equal(np.bincount(order, minlength=size), np.ones(size)):
        raise ValueError("the vocabulary order is not a permutation")
    ordered = list(map(vocabulary.__getitem__, order.tolist()))
    if ordered != sorted(ordered):  # linear on sorted input; a wrong order would answer orderings wrong
        raise ValueError("the vocabulary order is not sorted")
    codes = dict(zip(vocabulary, range(size), strict=True))
    if len(codes) != size:
        raise ValueError("the vocabulary repeats a string")
    rank = np.empty(size, np.int64)
    rank[order] = np.arange(size)
    columns._vocabulary, columns._codes, columns._sorted = vocabulary, codes, (ordered, rank)


def columns_from_arrays(arrays: Mapping[str, npt.NDArray[Any]], rows: int) -> MetadataColumns:
    """The columns `columns_to_arrays` gave, for an owner of `rows` rows; `ValueError` if inconsistent."""
    header = read_text_array(arrays, _HEADER)
    if not isinstance(header, dict) or header.get("version") != _VERSION:
        raise ValueError("not a metadata columns header of this version")
    names = header.get("keys")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError("the header lists no keys")
    columns = MetadataColumns()
    _vocabulary(arrays, columns)
    words = len(columns._vocabulary)
    for number, name in enumerate(names):
        values = _encoded(arrays, f"k{number}.values", postings=False)
        items = _encoded(arrays, f"k{number}.items", postings=True)
        _check_encoded(values, name, words, rows, postings=False)
        _check_encoded(items, name, words, rows, postings=True)
        columns._columns[name] = _Column(values, items)
    if len(columns._columns) != len(names):
        raise ValueError("the header repeats a key")
    return columns


def savez(handle: IO[bytes], arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    """Write `arrays` as an uncompressed `.npz` into the open file `handle`."""
    # numpy's stubs type `**kwds` as if `allow_pickle` might be among them; every value is an array.
    np.savez(handle, **arrays)  # type: ignore[arg-type]


def write_arrays(path: Path, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    """Write `arrays` into the `.npz` file `path` atomically: a crash leaves the old file or the new one.

    Raises:
        OSError: the folder cannot be written (nothing is left behind).
    """
    staged = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        write_new(staged, lambda handle: savez(handle, arrays))
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def read_arrays(path: Path) -> Arrays | None:
    """Every array in the `.npz` file `path`, or None when it is missing, truncated or damaged."""
    try:
        # The file is opened here, not by np.load, which leaves it open when the zip cannot be read.
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except Exception:  # derived data: whatever zipfile or numpy make of a damaged file means rebuild
        return None
