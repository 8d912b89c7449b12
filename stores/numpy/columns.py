"""Metadata as numpy columns, and filters evaluated over them without a Python loop per document.

Each key has one value slot per row: a kind, a number (bools as 0/1; the narrowest int type that
holds the key's numbers exactly, else float64) and an int32 code into one string vocabulary. List
values are per-key postings of (row, item). Ints beyond float64's exact range are settled by
`rag.filters.matches`, so a mask means exactly what `matches` means.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.filters import Comparison, Filter, Junction, Normal, Op, Scalar, matches, normalize
from rag.filters.evaluate import ORDERING, is_number

__all__ = ["MetadataColumns", "narrowest"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
Number = npt.NDArray[np.floating[Any] | np.integer[Any]]
MISSING, NUM, BIGNUM, STR, BOOL, LIST = 0, 1, 2, 3, 4, 5  # BIGNUM: an int float64 cannot hold exactly
_EXACT_INT = 2**53
_ARRAYS = ("kind", "num", "code", "row")
_Slot = tuple[int, int, float, int]  # row, kind, num, code
_COMBINE = {True: np.logical_and, False: np.logical_or}  # a junction's items, by `conjunction`
MetadataOf = Callable[[int], Mapping[str, Any]]  # a row's metadata, for the rows settled in Python


def narrowest(held: Number, values: npt.NDArray[np.float64]) -> Number:
    """`held`, widened to hold `values` too: the narrowest int type that holds them exactly, else float64."""
    if held.dtype == np.float64 or not values.size:
        return held
    low, high = float(values.min()), float(values.max())  # NaN only where some value is NaN
    dtype: type[np.generic] = np.float64
    if np.isfinite(low) and np.isfinite(high) and bool((values == np.trunc(values)).all()):
        for candidate in (np.int8, np.int16, np.int32):
            limits = np.iinfo(candidate)
            if candidate(0).itemsize >= held.itemsize and limits.min <= low and high <= limits.max:
                dtype = candidate
                break
    return held if held.dtype == dtype else held.astype(dtype)


def _as_float(value: int | float) -> tuple[float, bool]:
    """The float64 nearest `value`, and whether it is exact (huge ints map to +-inf)."""
    if isinstance(value, float):
        return value, True
    try:
        return float(value), -_EXACT_INT <= value <= _EXACT_INT
    except OverflowError:
        return (float("inf") if value > 0 else float("-inf")), False


@dataclass
class _Encoded:
    """Parallel arrays of encoded values, `size` slots in use: `num` appears with the first number or
    bool, `code` with the first string, `row` (each item's row) only in list postings."""

    kind: npt.NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, np.int8))
    num: Number | None = None
    code: npt.NDArray[np.int32] | None = None
    row: IntArray | None = None
    size: int = 0

    def arrays(self) -> Iterator[tuple[str, npt.NDArray[Any]]]:
        for name in _ARRAYS:
            array = getattr(self, name)
            if array is not None:
                yield name, array

    def grow_to(self, size: int) -> None:
        """Use `size` slots (if more than now); the new ones are MISSING."""
        if size <= self.size:
            return
        if size > len(self.kind):
            capacity = max(size, len(self.kind) * 3 // 2, 16)
            for name, old in list(self.arrays()):
                grown = np.zeros(capacity, old.dtype)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        self.kind[self.size : size] = MISSING  # slots past `size` may hold stale values
        self.size = size

    def put(self, slots: IntArray, kinds: Sequence[int], nums: Sequence[float], codes: Sequence[int]) -> None:
        kind = np.asarray(kinds, np.int8)
        self.kind[slots] = kind
        if self.num is None and np.isin(kind, (NUM, BIGNUM, BOOL)).any():
            self.num = np.zeros(len(self.kind), np.int8)
        if self.num is not None:
            values = np.asarray(nums, np.float64)
            self.num = narrowest(self.num, values)
            self.num[slots] = values
        if self.code is None and (kind == STR).any():
            self.code = np.zeros(len(self.kind), np.int32)
        if self.code is not None:
            self.code[slots] = codes

    def keep(self, kept: BoolArray) -> None:
        """Keep only the slots selected by a mask over the used ones, in order."""
        for name, array in list(self.arrays()):
            setattr(self, name, array[: self.size][kept])
        self.size = len(self.kind)

    def rows(self) -> IntArray:
        """The row of each used slot of list postings."""
        assert self.row is not None, "only list postings keep rows"
        return self.row[: self.size]


@dataclass
class _Column:
    """One key: a value slot per row (rows past `values.size` lack the key) and its list postings."""

    values: _Encoded = field(default_factory=_Encoded)
    items: _Encoded = field(default_factory=lambda: _Encoded(row=np.zeros(0, np.int64)))


class MetadataColumns:
    """Per-key numpy columns over a store's rows, and vectorised filter masks.

    Example:
        >>> from rag.filters import key
        >>> columns, rows = MetadataColumns(), [{"year": 2020, "tags": ["a"]}, {"year": 2021.5}]
        >>> columns.write(np.arange(2), rows)
        >>> columns.mask(key("year") < 2021, 2, rows.__getitem__).tolist()
        [True, False]
    """

    def __init__(self) -> None:
        self._columns: dict[str, _Column] = {}
        self._codes: dict[str, int] = {}
        self._vocabulary: list[str] = []
        self._sorted: tuple[list[str], IntArray] | None = None  # the strings in order, each code's rank

    def _encode(self, value: Scalar) -> tuple[int, float, int]:
        if isinstance(value, bool):
            return BOOL, float(value), -1
        if isinstance(value, str):
            code = self._codes.get(value)
            if code is None:
                code = self._codes[value] = len(self._vocabulary)
                self._vocabulary.append(value)
                self._sorted = None
            return STR, 0.0, code
        as_float, exact = _as_float(value)
        return (NUM if exact else BIGNUM), as_float, -1

    def write(self, rows: IntArray, metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Record the metadata of `rows` (new rows, or rows emptied by `clear`)."""
        values: dict[str, list[_Slot]] = {}
        items: dict[str, list[_Slot]] = {}
        for row, metadata in zip(rows.tolist(), metadatas, strict=True):
            for name, value in metadata.items():
                if isinstance(value, list):
                    values.setdefault(name, []).append((row, LIST, 0.0, -1))
                    for item in value:
                        items.setdefault(name, []).append((row, *self._encode(item)))
                else:
                    values.setdefault(name, []).append((row, *self._encode(value)))
        for name, batch in values.items():
            slots, kinds, nums, codes = zip(*batch, strict=True)
            column = self._columns.setdefault(name, _Column()).values
            at = np.asarray(slots, np.int64)
            column.grow_to(int(at.max()) + 1)
            column.put(at, kinds, nums, codes)
        for name, batch in items.items():
            item_rows, kinds, nums, codes = zip(*batch, strict=True)
            posting = self._columns[name].items
            start = posting.size
            posting.grow_to(start + len(item_rows))
            posting.put(np.arange(start, posting.size), kinds, nums, codes)
            posting.rows()[start:] = item_rows

    def clear(self, rows: IntArray, metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Forget the metadata `rows` hold (their old `metadatas`), before they are written again."""
        touched: dict[str, list[int]] = {}
        for row, metadata in zip(rows.tolist(), metadatas, strict=True):
            for name in metadata:
                touched.setdefault(name, []).append(row)
        for name, row_list in touched.items():
            column = self._columns[name]
            column.values.kind[np.asarray(row_list, np.int64)] = MISSING
            if column.items.size:
                column.items.keep(~np.isin(column.items.rows(), row_list))

    def remove(self, holes: IntArray, tails: IntArray, dead: BoolArray, new_size: int) -> None:
        """Drop the `dead` rows: row `tails[i]` moves to `holes[i]` and the rows shrink to `new_size`."""
        moved_to = np.arange(len(dead), dtype=np.int64)
        moved_to[tails] = holes
        for column in self._columns.values():
            values = column.values
            inside = holes < values.size
            source, target = tails[inside], holes[inside]
            present = source < values.size
            for _, array in values.arrays():
                array[target[present]] = array[source[present]]
            values.kind[target[~present]] = MISSING
            values.size = min(values.size, new_size)
            items = column.items
            if items.size:
                items.keep(~dead[items.rows()])
                items.row = moved_to[items.rows()]

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Every array of the columns, cut to the slots in use (`from_arrays` reads them back)."""
        names = list(self._columns)
        header = json.dumps({"version": 1, "keys": names}).encode("ascii")
        joined = "\x00".join(self._vocabulary).encode("utf-8", "surrogatepass")
        lengths = np.fromiter(map(len, self._vocabulary), np.int64, len(self._vocabulary)) + 1
        arrays: dict[str, npt.NDArray[Any]] = {
            "columns.header": np.frombuffer(header, np.uint8),
            "vocabulary": np.frombuffer(joined, np.uint8),
            "vocabulary_ends": np.cumsum(lengths, dtype=np.int64) - 1,  # each string's end, in characters
            "vocabulary_order": np.argsort(self._order()[1]),  # the codes in string order
        }
        for number, name in enumerate(names):
            column = self._columns[name]
            for part, encoded in (("values", column.values), ("items", column.items)):
                for array_name, array in encoded.arrays():
                    arrays[f"k{number}.{part}.{array_name}"] = array[: encoded.size]
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]], rows: int) -> MetadataColumns:
        """The columns `to_arrays` gave, for `rows` rows (`ValueError` or `KeyError` when they do not fit;
        their bytes are checked by the save's checksums)."""
        header = json.loads(arrays["columns.header"].tobytes().decode("ascii"))
        if not isinstance(header, dict) or header.get("version") != 1:
            raise ValueError("not a metadata columns header of this version")
        joined = arrays["vocabulary"].tobytes().decode("utf-8", "surrogatepass")
        ends = arrays["vocabulary_ends"].tolist()
        vocabulary = [joined[a + 1 : b] for a, b in itertools.pairwise([-1, *ends])]
        columns = cls()
        columns._vocabulary = vocabulary
        columns._codes = dict(zip(vocabulary, range(len(vocabulary)), strict=True))
        order = arrays["vocabulary_order"]
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        columns._sorted = ([vocabulary[i] for i in order.tolist()], rank)
        for number, name in enumerate(header["keys"]):
            found = [
                {n: arrays[f"k{number}.{part}.{n}"] for n in _ARRAYS if f"k{number}.{part}.{n}" in arrays}
                for part in ("values", "items")
            ]
            values, items = (_Encoded(**part, size=len(part["kind"])) for part in found)
            if values.size > rows or items.row is None:
                raise ValueError(f"the saved column {name!r} does not fit the store")
            columns._columns[name] = _Column(values, items)
        return columns

    def mask(self, node: Filter, size: int, metadata_of: MetadataOf) -> BoolArray:
        """Which of the first `size` rows match `node`, in normal form with an explicit stack (no
        `RecursionError`)."""
        normal = normalize(node)
        if isinstance(normal, Comparison):
            return self._comparison(normal, size, metadata_of)
        # Each frame: a junction, its items still to combine, and the mask so far.
        frames: list[tuple[Junction, Iterator[Normal], BoolArray]] = [
            (normal, iter(normal.items), np.full(size, normal.conjunction))
        ]
        done: BoolArray | None = None
        while frames:
            junction, items, acc = frames[-1]
            if done is not None:
                _COMBINE[junction.conjunction](acc, done, out=acc)
                done = None
            for item in items:
                if isinstance(item, Junction):
                    frames.append((item, iter(item.items), np.full(size, item.conjunction)))
                    break
                _COMBINE[junction.conjunction](acc, self._comparison(item, size, metadata_of), out=acc)
            else:
                frames.pop()
                done = acc
        assert done is not None
        return done

    def _comparison(self, node: Comparison, size: int, metadata_of: MetadataOf) -> BoolArray:
        if node.op.is_positive:
            return self._positive(node, size, metadata_of)
        # NOT is not a plain complement, but a negative operator is: `a != 1` is `~(a == 1)`.
        return ~self._positive(Comparison(node.key, node.op.opposite, node.value), size, metadata_of)

    def _positive(self, node: Comparison, size: int, metadata_of: MetadataOf) -> BoolArray:
        result = np.zeros(size, np.bool_)
        column = self._columns.get(node.key)
        if column is None:
            return result
        if node.op is Op.CONTAINS:
            hit, settle = self._match(column.items, Op.EQ, (node.value,))  # type: ignore[arg-type]
            item_rows = column.items.rows()
            result[item_rows[hit]] = True
            settle_rows = np.unique(item_rows[settle])
        else:
            width = min(column.values.size, size)
            if node.op is Op.IS_NOT_NULL:
                result[:width] = column.values.kind[:width] != MISSING
                return result
            operand = node.value if node.op is Op.IN else (node.value,)
            hit, settle = self._match(column.values, node.op, operand)  # type: ignore[arg-type]
            result[:width] = hit[:width]
            settle_rows = np.flatnonzero(settle[:width])
        for row in settle_rows.tolist():
            # Only rows holding ints beyond float64's exact range (or tied with such a value) get here.
            result[row] = matches(node, metadata_of(row))
        return result

    def _match(self, encoded: _Encoded, op: Op, operand: tuple[Scalar, ...]) -> tuple[BoolArray, BoolArray]:
        """Slots whose value satisfies `op` (EQ/IN against `operand`, else ordering against its one
        value), and slots the float64 view cannot settle exactly."""
        size, kind = encoded.size, encoded.kind[: encoded.size]  # a missing array reads as 0.0 or -1
        num = np.broadcast_to(np.float64(0.0), (size,)) if encoded.num is None else encoded.num[:size]
        code = np.broadcast_to(np.int32(-1), (size,)) if encoded.code is None else encoded.code[:size]
        hit = np.zeros(len(kind), np.bool_)
        settle = np.zeros(len(kind), np.bool_)
        numbers = [v for v in operand if is_number(v)]
        if numbers:
            settle |= kind == BIGNUM
            converted = [_as_float(v) for v in numbers]  # type: ignore[arg-type]
            inexact = [f for f, exact in converted if not exact]
            numeric = (kind == NUM) | (kind == BIGNUM)
            if inexact:
                settle |= numeric & np.isin(num, inexact)
            if op in ORDERING:
                hit |= numeric & ORDERING[op](num, converted[0][0])
            else:
                hit |= numeric & np.isin(num, [f for f, _ in converted])
        if op in ORDERING:
            if isinstance(operand[0], str):
                hit |= (kind == STR) & self._string_order(op, operand[0])[code]
            return hit, settle
        flags = [float(v) for v in operand if isinstance(v, bool)]
        if flags:
            hit |= (kind == BOOL) & np.isin(num, flags)
        codes = [self._codes[v] for v in operand if isinstance(v, str) and v in self._codes]
        if codes:
            hit |= (kind == STR) & np.isin(code, codes)
        return hit, settle

    def _order(self) -> tuple[list[str], IntArray]:
        """The vocabulary in string order, and each code's rank in it."""
        if self._sorted is None:
            order = sorted(range(len(self._vocabulary)), key=self._vocabulary.__getitem__)
            rank = np.empty(len(order), np.int64)
            rank[order] = np.arange(len(order))
            self._sorted = ([self._vocabulary[i] for i in order], rank)
        return self._sorted

    def _string_order(self, op: Op, value: str) -> BoolArray:
        """Whether each vocabulary string satisfies `op value`, by code, with one extra False entry at
        the end so code -1 (a slot without a string) looks up False."""
        ordered, rank = self._order()
        bound = (bisect.bisect_left if op in (Op.LT, Op.GE) else bisect.bisect_right)(ordered, value)
        table = rank < bound if op in (Op.LT, Op.LE) else rank >= bound
        return np.append(table, False)
