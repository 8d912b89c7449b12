"""Metadata as numpy columns, and filters evaluated over them without a Python loop per document.

Each metadata key has a column of encoded values, one slot per row of the store: a kind code, a number
(numbers, and booleans as 0/1: float64, or the narrowest of int8/16/32 while every number of the column
is whole and in its range, which compares with any operand exactly) and an int32 string code (an index
into one vocabulary shared by every key).
List values are flattened into a per-key posting list of (row, encoded item) so `CONTAINS` is vectorised
too. A filter becomes a boolean mask over the rows; its meaning is exactly `rag.filters.matches`.

Rows are dense: the store removes a row by moving the last rows into the holes (`remove`), so every
array covers only live rows and no compaction is ever pending.

Example:
    >>> import numpy as np
    >>> from rag.filters import key
    >>> columns = MetadataColumns()
    >>> rows = [{"year": 2020, "tags": ["a"]}, {"year": 2021.5}]
    >>> columns.write(np.arange(2), rows)
    >>> columns.mask(key("year") < 2021, 2, np.array(rows, dtype=object)).tolist()
    [True, False]
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from rag.filters import Comparison, Filter, Junction, Normal, Op, Scalar, matches, normalize
from rag.filters.evaluate import ORDERING, is_number
from stores.numpy.narrowing import narrowest

__all__ = ["MetadataColumns"]

BoolArray = npt.NDArray[np.bool_]


class MetadataRows(Protocol):
    """The metadata of a row by indexing: an object array of dicts, or the store's packed records."""

    def __getitem__(self, row: int, /) -> Any: ...


IntArray = npt.NDArray[np.int64]

# Kinds of an encoded value. BIGNUM is an int that float64 cannot hold exactly; rows holding one are
# settled by the reference evaluator (`rag.filters.matches`), so results stay exact for any int.
MISSING, NUM, BIGNUM, STR, BOOL, LIST = 0, 1, 2, 3, 4, 5
_EXACT_INT = 2**53


def _merge(junction: Junction, acc: BoolArray, part: BoolArray) -> None:
    """Combine an item's mask into its junction's mask, in place."""
    if junction.conjunction:
        acc &= part
    else:
        acc |= part


def _as_float(value: int | float) -> tuple[float, bool]:
    """The float64 nearest `value`, and whether it is exact (huge ints map to +-inf)."""
    if isinstance(value, float):
        return value, True
    try:
        as_float = float(value)
    except OverflowError:
        return (float("inf") if value > 0 else float("-inf")), False
    return as_float, -_EXACT_INT <= value <= _EXACT_INT


@dataclass
class _Batch:
    """Encoded values gathered in Python lists before they go into a column in one assignment."""

    rows: list[int] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    nums: list[float] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)

    def add(self, row: int, encoded: tuple[int, float, int]) -> None:
        self.rows.append(row)
        self.kinds.append(encoded[0])
        self.nums.append(encoded[1])
        self.codes.append(encoded[2])


@dataclass
class _Encoded:
    """Parallel arrays of encoded values with amortised growth; `size` slots are in use.

    Only `kind` is always there: `num` appears with the first number or bool, `code` with the first
    string, and `row` (the row each item belongs to) only in list postings. `num` is as narrow as its
    values allow (`stores.numpy.narrowing`), so a column of small ints costs 2 bytes a row, not 21.
    A slot's `num` and `code` mean something only where its kind says so.
    """

    kind: npt.NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, np.int8))
    num: npt.NDArray[np.floating[Any] | np.integer[Any]] | None = None
    code: npt.NDArray[np.int32] | None = None
    row: IntArray | None = None
    size: int = 0

    def __post_init__(self) -> None:
        if self.num is not None and self.num.dtype == np.float64:  # as saved: narrow it if it can be
            dtype = narrowest(np.zeros(0, np.int8), self.num[: self.size].astype(np.float64)).dtype
            self.num = self.num if dtype == np.float64 else self.num.astype(dtype)

    @classmethod
    def postings(cls) -> _Encoded:
        """Encoded list items, each with its row."""
        return cls(row=np.zeros(0, np.int64))

    def _arrays(self) -> Iterator[tuple[str, npt.NDArray[Any]]]:
        for name in ("kind", "num", "code", "row"):
            array = getattr(self, name)
            if array is not None:
                yield name, array

    def grow_to(self, size: int) -> None:
        """Use `size` slots (if more than now); the new ones are MISSING."""
        if size <= self.size:
            return
        if size > len(self.kind):
            capacity = max(size, len(self.kind) * 3 // 2, 16)
            for name, old in list(self._arrays()):
                grown = np.zeros(capacity, old.dtype)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        # Slots past `size` may hold stale values from rows removed earlier.
        self.kind[self.size : size] = MISSING
        self.size = size

    def put(self, slots: IntArray, batch: _Batch) -> None:
        kinds = np.asarray(batch.kinds, np.int8)
        self.kind[slots] = kinds
        if self.num is None and np.isin(kinds, (NUM, BIGNUM, BOOL)).any():
            self.num = np.zeros(len(self.kind), np.int8)
        if self.num is not None:
            nums = np.asarray(batch.nums, np.float64)
            self.num = narrowest(self.num, nums)
            self.num[slots] = nums
        if self.code is None and (kinds == STR).any():
            self.code = np.zeros(len(self.kind), np.int32)
        if self.code is not None:
            self.code[slots] = batch.codes

    def view(
        self,
    ) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.floating[Any] | np.integer[Any]], npt.NDArray[np.int32]]:
        """kind, num and code of the used slots (a missing array reads as 0.0 or -1 everywhere)."""
        size = self.size
        num = np.broadcast_to(np.float64(0.0), (size,)) if self.num is None else self.num[:size]
        code = np.broadcast_to(np.int32(-1), (size,)) if self.code is None else self.code[:size]
        return self.kind[:size], num, code

    def move(self, target: IntArray, source: IntArray) -> None:
        """Copy slots `source` into slots `target`."""
        for _, array in self._arrays():
            array[target] = array[source]

    def keep(self, kept: BoolArray) -> None:
        """Keep only the slots selected by a mask over the used ones, in order."""
        for name, array in list(self._arrays()):
            setattr(self, name, array[: self.size][kept])
        self.size = len(self.kind)

    def rows(self) -> IntArray:
        """The row of each used slot of list postings."""
        assert self.row is not None, "only list postings keep rows"
        return self.row[: self.size]


@dataclass
class _Column:
    """One metadata key: a value slot per row (rows past `values.size` lack the key) and list postings."""

    values: _Encoded = field(default_factory=_Encoded)
    items: _Encoded = field(default_factory=_Encoded.postings)


class MetadataColumns:
    """Per-key numpy columns over a store's rows, and vectorised filter masks (see the module docstring).

    Example:
        >>> columns = MetadataColumns()
        >>> columns.write(np.arange(1), [{"lang": "en"}])
        >>> sorted(columns.keys())
        ['lang']
    """

    def __init__(self) -> None:
        self._columns: dict[str, _Column] = {}
        self._codes: dict[str, int] = {}
        self._vocabulary: list[str] = []
        self._sorted: tuple[list[str], npt.NDArray[np.int64]] | None = None

    def keys(self) -> list[str]:
        """The metadata keys seen so far."""
        return list(self._columns)

    # -- writing ---------------------------------------------------------------------------------

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
        values: dict[str, _Batch] = {}
        items: dict[str, _Batch] = {}
        for row, metadata in zip(rows.tolist(), metadatas, strict=True):
            for name, value in metadata.items():
                if isinstance(value, list):
                    values.setdefault(name, _Batch()).add(row, (LIST, 0.0, -1))
                    posted = items.setdefault(name, _Batch())
                    for item in value:
                        posted.add(row, self._encode(item))
                else:
                    values.setdefault(name, _Batch()).add(row, self._encode(value))
        for name, batch in values.items():
            column = self._columns.setdefault(name, _Column()).values
            slots = np.asarray(batch.rows, np.int64)
            column.grow_to(int(slots.max()) + 1)
            column.put(slots, batch)
        for name, batch in items.items():
            posting = self._columns[name].items
            start = posting.size
            posting.grow_to(start + len(batch.rows))
            posting.put(np.arange(start, posting.size), batch)
            posting.rows()[start:] = batch.rows

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
            source = tails[inside]
            target = holes[inside]
            present = source < values.size
            values.move(target[present], source[present])
            values.kind[target[~present]] = MISSING
            values.size = min(values.size, new_size)
            items = column.items
            if items.size:
                items.keep(~dead[items.rows()])
                items.row = moved_to[items.rows()]

    # -- filtering -------------------------------------------------------------------------------

    def mask(self, node: Filter, size: int, metadatas: MetadataRows) -> BoolArray:
        """Which of the first `size` rows match `node`; `metadatas[row]` is each row's metadata dict.

        The filter is evaluated in its normal form (`rag.filters.normalize`: NOT applied to the
        comparisons, chains flattened) with an explicit stack, so no depth raises `RecursionError`.
        """
        normal = normalize(node)
        if isinstance(normal, Comparison):
            return self._comparison(normal, size, metadatas)
        # Each frame: a junction, its items still to combine, and the mask so far.
        frames: list[tuple[Junction, Iterator[Normal], BoolArray]] = [
            (normal, iter(normal.items), np.full(size, normal.conjunction))
        ]
        done: BoolArray | None = None
        while frames:
            junction, items, acc = frames[-1]
            if done is not None:
                _merge(junction, acc, done)
                done = None
            for item in items:
                if isinstance(item, Junction):
                    frames.append((item, iter(item.items), np.full(size, item.conjunction)))
                    break
                _merge(junction, acc, self._comparison(item, size, metadatas))
            else:
                frames.pop()
                done = acc
        assert done is not None
        return done

    def _comparison(self, node: Comparison, size: int, metadatas: MetadataRows) -> BoolArray:
        if node.op.is_positive:
            return self._positive(node, size, metadatas)
        # NOT is not a plain complement, but a negative operator is: `a != 1` is `~(a == 1)`.
        return ~self._positive(Comparison(node.key, node.op.opposite, node.value), size, metadatas)

    def _positive(self, node: Comparison, size: int, metadatas: MetadataRows) -> BoolArray:
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
            result[row] = matches(node, metadatas[row])
        return result

    def _match(self, encoded: _Encoded, op: Op, operand: tuple[Scalar, ...]) -> tuple[BoolArray, BoolArray]:
        """Slots whose value satisfies `op` (EQ/IN against `operand`, else ordering against its one
        value), and slots the float64 view cannot settle exactly."""
        kind, num, code = encoded.view()
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

    def _string_order(self, op: Op, value: str) -> BoolArray:
        """A lookup table over string codes: whether each vocabulary string satisfies `op value`.

        It has one extra False entry at the end, so code -1 (a slot without a string) looks up False.
        """
        if self._sorted is None:
            order = sorted(range(len(self._vocabulary)), key=self._vocabulary.__getitem__)
            rank = np.empty(len(order), np.int64)
            rank[order] = np.arange(len(order))
            self._sorted = ([self._vocabulary[i] for i in order], rank)
        ordered, rank = self._sorted
        if op is Op.LT:
            table = rank < bisect.bisect_left(ordered, value)
        elif op is Op.LE:
            table = rank < bisect.bisect_right(ordered, value)
        elif op is Op.GT:
            table = rank >= bisect.bisect_right(ordered, value)
        else:
            table = rank >= bisect.bisect_left(ordered, value)
        return np.append(table, False)
