"""BM25 sums for one query over the lexical index's postings: per-posting weights, then per-row sums.

`LexicalIndex` gathers the query terms' live postings (`term_postings`), weighs every posting at once
(`weights`), and sums the weights of each row, either into an array over every row (`dense_scores`)
or over the rows that hold a term only (`hit_scores`). Both sums add each row's weights onto 0.0 in
the same order, so they agree to the last bit, and so does any store that follows the same formula.

Example:
    >>> import numpy as np
    >>> rows, scores = hit_scores(np.array([4, 1, 4], np.int32), np.array([0.5, 1.0, 0.25]), 2, 10)
    >>> rows.tolist(), scores.tolist()
    ([1, 4], [1.0, 0.75])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from stores.lexical.segments import Segment, postings_of

__all__ = ["dense_scores", "hit_scores", "term_postings", "weights"]

Rows = npt.NDArray[np.integer[Any]]
Floats = npt.NDArray[np.float64]
TermPostings = tuple[list[Rows], list[npt.NDArray[np.integer[Any]]], list[float]]


def term_postings(
    segments: Sequence[Segment],
    term_counts: Mapping[int, float],
    live: npt.NDArray[np.bool_] | None,
    count: int,
    k1: float,
    within: npt.NDArray[np.bool_] | None = None,
) -> TermPostings:
    """The rows and frequencies of each query term held by a live row (`live`: None when all rows
    are), and each such term's `qtf * idf * (k1 + 1)`, over `count` live documents. With `within`,
    only those rows count, for df as for the postings kept (`count` is then how many are live)."""
    row_parts: list[Rows] = []
    tf_parts: list[npt.NDArray[np.integer[Any]]] = []
    factors: list[float] = []
    found = postings_of(segments, list(term_counts))
    for query_tf, (rows, tfs) in zip(term_counts.values(), found, strict=True):
        if live is not None and rows.size:
            kept = live[rows]
            rows, tfs = rows[kept], tfs[kept]
        if within is not None and rows.size:
            kept = within[rows]
            rows, tfs = rows[kept], tfs[kept]
        if not rows.size:
            continue
        df = rows.size
        idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        factors.append(query_tf * idf * (k1 + 1.0))
        row_parts.append(rows)
        tf_parts.append(tfs)
    return row_parts, tf_parts, factors


def weights(found: TermPostings, norm: Floats) -> tuple[Rows, Floats]:
    """Every posting of `term_postings` (term after term) and its weight `factor * tf / (tf + K(d))`,
    `norm` holding K(d) by row. All terms are weighed at once, each posting by the same operations
    as one term at a time."""
    row_parts, tf_parts, factors = found
    factor: float | Floats
    if len(row_parts) == 1:
        rows, tfs, factor = row_parts[0], tf_parts[0], factors[0]
    else:
        rows, tfs = np.concatenate(row_parts), np.concatenate(tf_parts)
        factor = np.repeat(factors, [part.size for part in row_parts])
    tf = tfs.astype(np.float64)
    weighed: Floats = factor * tf / (tf + norm[rows])
    return rows, weighed


def dense_scores(rows: npt.NDArray[np.integer[Any]], weighed: Floats, size: int) -> Floats:
    """The sum of the weights of each row in `range(size)`, each added onto 0.0 in input order."""
    return cast(Floats, np.bincount(rows, weighed, minlength=size))


def hit_scores(rows: Rows, weighed: Floats, terms: int, size: int) -> tuple[npt.NDArray[np.int64], Floats]:
    """The distinct `rows` (ascending) and their sums, as `dense_scores` computes them.

    A query's postings are usually far fewer than the rows, so they are summed per distinct row;
    `terms` (how many query terms the postings come from) tells when they are distinct already, and
    posting-heavy queries are summed over every row instead.
    """
    if terms == 1:  # one term's rows are distinct and ascending already
        return rows.astype(np.int64), weighed
    if 4 * rows.size >= size:
        scores = dense_scores(rows, weighed, size)
        hits = np.flatnonzero(scores > 0)
        return hits, scores[hits]
    # A stable sort keeps each row's postings in input order, so bincount adds each row's weights
    # onto 0.0 in the order `dense_scores` does: the same sums (np.unique, which does this and more,
    # costs twice as much for a few hundred postings).
    order = rows.argsort(kind="stable")
    ordered = rows[order]
    new = ordered[1:] != ordered[:-1]
    slots = np.concatenate(([0], new.cumsum()))
    hits = ordered[np.concatenate(([True], new))].astype(np.int64)
    return hits, dense_scores(slots, weighed[order], hits.size)
