"""Best-first order of scored keys, equal scores by ascending id (code points), looking up only the ids
of ties: decoding ids is what ranking a hundred rows spends most on, and scores are rarely equal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

__all__ = ["best_first"]

Keys = TypeVar("Keys", bound=npt.NDArray[np.integer[Any]])


def best_first(
    keys: Keys, scores: npt.NDArray[np.float64], ids_of: Callable[[Keys], list[str]], limit: int | None = None
) -> tuple[Keys, npt.NDArray[np.float64]]:
    """`keys` and `scores` by score descending then id ascending, cut at `limit` (None: all); only the
    keys whose score equals a neighbour's are passed to `ids_of`."""
    order = (-scores).argsort(kind="stable")
    keys, scores = cast(Keys, keys[order]), scores[order]
    same = scores[1:] == scores[:-1]
    if same.any():
        linked = same.nonzero()[0].tolist()  # position p ties with p + 1: few, so sets beat numpy here
        tied = sorted({*linked, *(position + 1 for position in linked)})
        follows = set(linked)
        run, runs = 0, []
        for position in tied:  # a new run starts wherever the score differs from the previous one
            if position - 1 not in follows:
                run += 1
            runs.append(run)
        # Sorting (run, id, position) keeps each run within its own positions: runs ascend along `tied`.
        ordered = sorted(zip(runs, ids_of(cast(Keys, keys[tied])), tied, strict=True))
        keys = keys.copy()
        keys[tied] = keys[[position for _, _, position in ordered]]
    return cast(Keys, keys[:limit]), scores[:limit]
