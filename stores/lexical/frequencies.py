"""Term frequencies of a postings segment, packed four bits each.

Most postings of a chunk count a term once or a few times: on Zipf-like text 84% are 1 and nearly all
are under 16. So a segment keeps each frequency in a nibble (two a byte, the earlier posting in the
low four bits), half a byte a posting instead of a whole one; a frequency of 16 or more, rare, leaves
its nibble 0 (no frequency is 0) and sits in a short exception list of (position, value) sorted by
position. Reading a term's frequencies unpacks its bytes with one table lookup, then patches in its
exceptions, if the segment has any.

Example:
    >>> import numpy as np
    >>> packed = PackedFrequencies.pack(np.array([1, 2, 300, 15, 3]))
    >>> packed.nibbles.tolist(), packed.extra_at.tolist(), packed.extra.tolist()
    ([33, 240, 3], [2], [300])
    >>> packed.slice(1, 4).tolist(), packed.all().dtype
    ([2, 300, 15], dtype('uint16'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["PackedFrequencies", "narrow_tfs"]

_LARGEST = 15  # the largest frequency a nibble holds; 0 marks one kept in the exceptions
# Byte value -> its two nibbles, low first: unpacking is one lookup into this table.
_NIBBLES = np.stack([np.arange(256) & 0xF, np.arange(256) >> 4], axis=1).astype(np.uint8)
_NO_EXTRA_AT = np.zeros(0, np.uint32)
_NO_EXTRA = np.zeros(0, np.uint8)


def narrow_tfs(tfs: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.integer[Any]]:
    """`tfs` in the smallest unsigned type that holds them (a term rarely repeats 255 times in a chunk).

    Example:
        >>> narrow_tfs(np.array([1, 300])).dtype
        dtype('uint16')
    """
    top = int(tfs.max()) if tfs.size else 0
    dtype = np.uint8 if top <= 0xFF else np.uint16 if top <= 0xFFFF else np.int32
    return tfs if tfs.dtype == dtype else tfs.astype(dtype)


@dataclass(frozen=True)
class PackedFrequencies:
    """The frequencies of a segment's postings, in posting order (see the module docstring)."""

    nibbles: npt.NDArray[np.uint8]  # (size + 1) // 2 bytes
    extra_at: npt.NDArray[np.integer[Any]]  # positions of the frequencies over 15, ascending
    extra: npt.NDArray[np.integer[Any]]  # their values, in the narrowest type (`narrow_tfs`)
    size: int

    @classmethod
    def pack(cls, tfs: npt.NDArray[np.integer[Any]]) -> PackedFrequencies:
        """`tfs` (each >= 1) packed."""
        size = int(tfs.size)
        large = tfs > _LARGEST
        nibbles = np.zeros(size + (size & 1), np.uint8)
        nibbles[:size] = np.where(large, 0, tfs)
        packed: npt.NDArray[np.uint8] = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8, copy=False)
        if not large.any():
            return cls(packed, _NO_EXTRA_AT, _NO_EXTRA, size)
        at = np.flatnonzero(large)
        return cls(
            packed, at.astype(np.uint32 if size <= 0xFFFFFFFF else np.int64), narrow_tfs(tfs[at]), size
        )

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return self.nibbles.nbytes + self.extra_at.nbytes + self.extra.nbytes

    def slice(self, begin: int, end: int) -> npt.NDArray[np.integer[Any]]:
        """The frequencies of postings `begin:end`: uint8 unless an exception needs a wider type."""
        first = begin >> 1
        tfs = _NIBBLES[self.nibbles[first : (end + 1) >> 1]].reshape(-1)[begin - 2 * first : end - 2 * first]
        if self.extra_at.size:
            low, high = self.extra_at.searchsorted((begin, end)).tolist()
            if high > low:
                tfs = tfs.astype(self.extra.dtype)
                tfs[self.extra_at[low:high].astype(np.int64) - begin] = self.extra[low:high]
        return tfs

    def all(self) -> npt.NDArray[np.integer[Any]]:
        """Every frequency, in the narrowest type that holds them."""
        return self.slice(0, self.size)
