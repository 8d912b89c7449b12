"""How removing rows keeps a dense table dense: the last live rows move into the holes below the new size.

The numpy store's matrix, records, metadata columns and row map, and the Chroma sidecar's filter columns
and kept records all follow this one plan, so their rows stay aligned after a delete.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["Compaction", "compaction"]


class Compaction(NamedTuple):
    """Rows `tails[i]` move to `holes[i]`; afterwards rows `[0, new_size)` are the live ones."""

    dead: npt.NDArray[np.bool_]  # of the old size: True for each removed row
    holes: npt.NDArray[np.intp]
    tails: npt.NDArray[np.intp]
    new_size: int


def compaction(size: int, rows: Sequence[int] | npt.NDArray[np.integer[Any]]) -> Compaction:
    """The plan that removes distinct `rows` from a table of `size` rows."""
    new_size = size - len(rows)
    dead = np.zeros(size, np.bool_)
    dead[rows] = True
    holes = np.flatnonzero(dead[:new_size])
    tails = new_size + np.flatnonzero(~dead[new_size:])
    return Compaction(dead, holes, tails, new_size)
