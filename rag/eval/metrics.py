"""Ranking metrics at document level: hit rate, recall, precision, MRR, nDCG and MAP at a cutoff k.

The unit of relevance is what a label names (a source, or a source's page), not a chunk: retrieved chunks
are mapped to units and several chunks of one unit count once, at the rank of the first (best) of them.
Ranks are positions in that de-duplicated list, as if the store had returned one entry per unit scored by
its best chunk. Definitions follow trec_eval, so every value lies in [0, 1]:

- `hit_rate`: 1 when any relevant unit is in the top k (trec_eval `success`).
- `recall`: relevant units in the top k / all relevant units.
- `precision`: relevant units in the top k / k (k, not the number retrieved, as trec_eval `P`).
- `mrr`: 1 / rank of the first relevant unit in the top k, else 0.
- `ndcg`: DCG with linear gain (the grade) and a log2(rank + 1) discount, over the ideal DCG at k.
- `map`: average precision cut at k, divided by all relevant units (trec_eval `map_cut`).

A unit is relevant when its grade is >= 1; questions without relevant units are not scored.

Example:
    >>> scores = score_ranking(["b", "x", "a"], {"a": 2, "b": 1}, k=3)
    >>> scores["recall"], scores["mrr"], round(scores["ndcg"], 4)
    (1.0, 1.0, 0.7602)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from rag.documents import Document
from rag.errors import InvalidRequestError

__all__ = ["METRICS", "dedupe", "latency_percentiles", "score_ranking", "units_of"]

METRICS = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
K = TypeVar("K", bound=Hashable)


def dedupe(keys: Iterable[K]) -> list[K]:
    """The keys in order of first appearance, each once."""
    return list(dict.fromkeys(keys))


def units_of(
    documents: Iterable[Document], qrels: Mapping[tuple[str, int | None], int], unit_field: str = "source"
) -> list[tuple[str, int | None]]:
    """The de-duplicated units of ranked chunks, as keys of `qrels` where a label covers them.

    A chunk belongs to `(source, page)` when that page is labelled, else to `(source, None)` when the whole
    source is, else to its own `(source, page)`. A chunk without `unit_field` is a unit of its own.
    """
    keys = []
    for doc in documents:
        raw = doc.metadata.get(unit_field)
        source = str(raw) if raw is not None else f"\x00chunk:{doc.id}"
        page = doc.metadata.get("page")
        page_key = page if isinstance(page, int) and not isinstance(page, bool) else None
        if (source, page_key) in qrels:
            keys.append((source, page_key))
        elif (source, None) in qrels:
            keys.append((source, None))
        else:
            keys.append((source, page_key))
    return dedupe(keys)


def _dcg(gains: Iterable[float]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def score_ranking(ranking: Sequence[K], qrels: Mapping[K, int], k: int) -> dict[str, float]:
    """Every metric in `METRICS` for one ranked list of distinct units at cutoff `k`.

    Raises:
        InvalidRequestError: `k` < 1, a repeated unit in `ranking`, or no relevant unit in `qrels`.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidRequestError(f"cutoff k must be an integer >= 1, got {k!r}")
    top = list(ranking[:k])
    if len(set(top)) != len(top):
        raise InvalidRequestError(f"ranking repeats a unit; de-duplicate it first: {top!r}")
    relevant = {unit: grade for unit, grade in qrels.items() if grade >= 1}
    if not relevant:
        raise InvalidRequestError(f"no relevant unit (grade >= 1) in {dict(qrels)!r}")
    hits = [rank for rank, unit in enumerate(top, start=1) if unit in relevant]
    ideal = _dcg(sorted(relevant.values(), reverse=True)[:k])
    precisions = [found / rank for found, rank in enumerate(hits, start=1)]
    return {
        "hit_rate": 1.0 if hits else 0.0,
        "recall": len(hits) / len(relevant),
        "precision": len(hits) / k,
        "mrr": 1.0 / hits[0] if hits else 0.0,
        "ndcg": _dcg(float(relevant.get(unit, 0)) for unit in top) / ideal,
        "map": sum(precisions) / len(relevant),
    }


def latency_percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    """The median and 95th percentile of durations, in milliseconds (NaN, NaN when empty)."""
    if not seconds:
        return (math.nan, math.nan)
    p50, p95 = np.percentile(np.asarray(seconds, dtype=np.float64) * 1000.0, [50, 95])
    return (float(p50), float(p95))
