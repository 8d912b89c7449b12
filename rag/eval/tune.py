"""Tuning: the search mode and vector weight that rank a user's labelled questions best.

`tune` evaluates vector and lexical search once each and hybrid search at every vector weight of a sweep
(0, 0.1, ..., 1 by default), all at one top-k, and picks the setting with the best nDCG@k. Ties go to the
simpler mode (lexical, then vector, then hybrid: fewer moving parts, and lexical search embeds nothing),
then to the weight closest to the one in effect (then the lower one), so a sweep that cannot tell
settings apart changes nothing. With a store whose model is a `QueryEmbeddingCache` each question is
embedded once per run.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from rag.eval import parse_questions, tune
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "the pump primes itself", {"source": "pump.md"}),
    ...            Document("2", "valves open at dawn", {"source": "valves.md"})])
    >>> qs = parse_questions(['{"question": "when do valves open", "relevant": [{"source": "valves.md"}]}'])
    >>> result = tune(store, qs, top_k=2, weights=[0.0, 0.5, 1.0])
    >>> result.best.mode, len(result.rows)
    ('lexical', 5)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rag.documents import SearchMode, SearchRequest
from rag.errors import InvalidRequestError
from rag.eval.questions import Question, QuestionSet
from rag.eval.results import SettingResult
from rag.eval.sweep import FilterSetting, evaluate
from rag.vectorstore import VectorStore

__all__ = ["DEFAULT_TUNE_WEIGHTS", "TuneResult", "TuneRow", "pick_best", "tune"]

# 0.15 is the hashing embedder's default (`rag.config`): a sweep should measure the setting in effect.
DEFAULT_TUNE_WEIGHTS = (0.0, 0.05, 0.1, 0.15, *(step / 10 for step in range(2, 11)))
"""The vector weights `tune` tries for hybrid search: 0, 0.05, 0.1, 0.15, 0.2, 0.3, ..., 1."""
_SIMPLER_FIRST: tuple[SearchMode, ...] = ("lexical", "vector", "hybrid")
_TIE = 1e-9  # nDCG means that differ by less are the same ranking quality (float summation noise)
_SHOWN = ("ndcg", "recall", "mrr", "hit_rate")


@dataclass(frozen=True)
class TuneRow:
    """One setting of the sweep: a mode, its vector weight (None where the mode does not fuse), metrics.

    Example:
        >>> TuneRow("hybrid", 0.5, {"ndcg": 0.7}).label
        'hybrid 0.5'
    """

    mode: SearchMode
    vector_weight: float | None
    metrics: dict[str, float]

    @property
    def label(self) -> str:
        """`vector`, `lexical` or `hybrid W`."""
        return self.mode if self.vector_weight is None else f"{self.mode} {self.vector_weight:g}"

    def to_dict(self) -> dict[str, Any]:
        """Mode, weight and every metric, flat."""
        return {"mode": self.mode, "vector_weight": self.vector_weight, **self.metrics}


@dataclass(frozen=True)
class TuneResult:
    """A sweep's rows in the order searched, the best one, and the cutoff and weight it was judged with.

    `best.vector_weight` is None when a single mode won; `vector_weight` is then the weight to keep
    (the one in effect before tuning), as `chosen_weight` says.
    """

    top_k: int
    questions: int
    rows: tuple[TuneRow, ...]
    best: TuneRow
    current_weight: float

    @property
    def chosen_weight(self) -> float:
        """The vector weight to record: the winner's, or the current one when a single mode won."""
        return self.current_weight if self.best.vector_weight is None else self.best.vector_weight

    def table(self) -> str:
        """The sweep as an aligned text table, the chosen row marked with `*`."""
        names = [f"{name}@{self.top_k}" for name in _SHOWN]
        lines = [f"  {'mode':<8}{'weight':>7}" + "".join(f"{name:>12}" for name in names)]
        for row in self.rows:
            mark = "*" if row is self.best else " "
            weight = "-" if row.vector_weight is None else f"{row.vector_weight:g}"
            cells = "".join(f"{row.metrics[name]:>12.3f}" for name in _SHOWN)
            lines.append(f"{mark} {row.mode:<8}{weight:>7}{cells}")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The sweep and the choice as JSON: `top_k`, `questions`, `rows`, `best`, `vector_weight`."""
        return json.dumps(
            {
                "top_k": self.top_k,
                "questions": self.questions,
                "rows": [row.to_dict() for row in self.rows],
                "best": self.best.to_dict(),
                "vector_weight": self.chosen_weight,
            },
            indent=2,
        )


def _check_weights(weights: Iterable[float]) -> list[float]:
    values = sorted({float(w) for w in weights})
    if not values or any(not 0.0 <= w <= 1.0 for w in values):
        raise InvalidRequestError(f"vector weights must be within [0, 1], got {list(weights)!r}")
    return values


def _row(result: SettingResult, weight: float | None) -> TuneRow:
    return TuneRow(result.mode, weight, dict(result.metrics))  # type: ignore[arg-type]  # a sweep mode


def pick_best(rows: Sequence[TuneRow], current_weight: float) -> TuneRow:
    """The row with the best nDCG; ties: the simpler mode, then the weight closest to `current_weight`,
    then the lower weight.

    Example:
        >>> rows = [TuneRow("hybrid", w, {"ndcg": 0.5}) for w in (0.1, 0.4)]
        >>> pick_best(rows, 0.5).vector_weight
        0.4
    """
    if not rows:
        raise InvalidRequestError("no settings to choose from")
    top = max(row.metrics["ndcg"] for row in rows)
    tied = [row for row in rows if row.metrics["ndcg"] >= top - _TIE]

    def preference(row: TuneRow) -> tuple[int, float, float]:
        weight = current_weight if row.vector_weight is None else row.vector_weight
        # Rounded: 0.7 and 0.9 are equally far from 0.8, though not in binary floating point.
        return _SIMPLER_FIRST.index(row.mode), round(abs(weight - current_weight), 9), weight

    return min(tied, key=preference)


def tune(
    store: VectorStore,
    questions: QuestionSet | Sequence[Question],
    *,
    top_k: int = 10,
    weights: Iterable[float] = DEFAULT_TUNE_WEIGHTS,
    modes: Iterable[SearchMode] = ("vector", "lexical", "hybrid"),
    search_request: SearchRequest | None = None,
    filter: FilterSetting = None,
    threshold: float = 0.0,
) -> TuneResult:
    """Sweep the modes and hybrid's vector weight on labelled questions; pick the best by nDCG@`top_k`.

    Args:
        store: the store to search, filled with the labelled corpus.
        questions: the labelled questions (as for `evaluate`).
        top_k: the cutoff of every metric, and how many chunks each search returns.
        weights: the vector weights hybrid search tries, each in [0, 1].
        modes: the modes to compare; hybrid is searched once per weight.
        search_request: the fusion, RRF constant, diversity and current vector weight (ties go to the
            weight closest to it); its query, top-k, threshold and filter are the sweep's.
        filter: one filter setting for every search, as in `evaluate` (None: no filter).
        threshold: the similarity threshold of every search.

    Raises:
        InvalidRequestError: bad modes, weights or top-k, or no questions.
    """
    base = search_request or SearchRequest("defaults")
    chosen = list(dict.fromkeys(modes))
    values = _check_weights(weights) if "hybrid" in chosen else []

    def sweep(mode_list: Sequence[SearchMode], request: SearchRequest) -> list[SettingResult]:
        found = evaluate(
            store,
            questions,
            top_k=[top_k],
            thresholds=[threshold],
            filters=[filter],
            modes=mode_list,
            search_request=request,
        )
        return list(found.rows)

    rows: list[TuneRow] = []
    single = [mode for mode in chosen if mode != "hybrid"]
    if single or not chosen:  # an empty list: evaluate says what is wrong
        rows.extend(_row(result, None) for result in sweep(single, base))
    for weight in values:
        rows.extend(_row(result, weight) for result in sweep(["hybrid"], base.replace(vector_weight=weight)))
    count = len(questions)
    return TuneResult(top_k, count, tuple(rows), pick_best(rows, base.vector_weight), base.vector_weight)
