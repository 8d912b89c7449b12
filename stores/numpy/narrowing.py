"""The number column of `stores.numpy.columns` in the narrowest type its values allow.

A metadata key's numbers (and booleans, as 0 and 1) sit in one array per key. Most keys hold small
whole numbers (a page, a year, a bucket), which int8, int16 or int32 hold exactly, and a whole-number
array compares with a float or int operand exactly in numpy (it is converted to float64 for the
comparison, which represents every int32). So the array starts as int8 and widens only when a value
needs it: to the next int type for a larger whole number, to float64 for a fraction, a NaN or an
infinity, or an int beyond int32 (ints beyond float64's exact range are settled by the reference
evaluator either way). A column of small ints takes one byte a row instead of eight.

Example:
    >>> import numpy as np
    >>> narrowest(np.zeros(2, np.int8), np.array([1.0, 300.0])).dtype
    dtype('int16')
    >>> narrowest(np.zeros(2, np.int8), np.array([0.5])).dtype
    dtype('float64')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["narrowest"]

_WHOLE_TYPES = (np.int8, np.int16, np.int32)


def narrowest(
    held: npt.NDArray[np.floating[Any] | np.integer[Any]], values: npt.NDArray[np.float64]
) -> npt.NDArray[np.floating[Any] | np.integer[Any]]:
    """`held`, widened if need be to hold `values` too: the narrowest int type while every number is
    whole and in its range, else float64 (which every value given here, a float64, fits)."""
    if held.dtype == np.float64 or not values.size:
        return held
    low, high = float(values.min()), float(values.max())  # NaN only where some value is NaN
    whole = np.isfinite(low) and np.isfinite(high) and bool((values == np.trunc(values)).all())
    dtype: type[np.generic] = np.float64
    if whole:
        for candidate in _WHOLE_TYPES:
            limits = np.iinfo(candidate)
            if candidate(0).itemsize >= held.itemsize and limits.min <= low and high <= limits.max:
                dtype = candidate
                break
    return held if held.dtype == dtype else held.astype(dtype)
