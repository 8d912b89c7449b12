"""Sweeps: every combination of top-k values, similarity thresholds and filters, in one retrieval pass.

For each filter setting and question the store is searched once, at the largest k with threshold 0.
Because a store returns the best matches first, the result of `SearchRequest(top_k=k,
similarity_threshold=t)` is exactly that list with scores below t dropped, cut to k: each (k, t) pair
is derived from it without searching again. Latency is measured on that one search, so it is reported
per filter setting (at the largest k) and repeated on each of its rows.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from rag.eval import evaluate, parse_questions
    >>> from stores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "the pump primes itself", {"source": "pump.md"}),
    ...            Document("2", "valves open at dawn", {"source": "valves.md"})])
    >>> qs = parse_questions(['{"question": "when do valves open", "relevant": [{"source": "valves.md"}]}'])
    >>> results = evaluate(store, qs, top_k=[1, 2], thresholds=[0.0, 0.9])
    >>> [(r.top_k, r.threshold, r.metrics["hit_rate"]) for r in results.rows]
    [(1, 0.0, 1.0), (2, 0.0, 1.0), (1, 0.9, 0.0), (2, 0.9, 0.0)]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rag.documents import Document, SearchRequest
from rag.errors import InvalidRequestError
from rag.eval.metrics import METRICS, latency_percentiles, score_ranking, units_of
from rag.eval.questions import Question, QuestionSet
from rag.eval.results import EvalResults, QuestionResult, SettingResult
from rag.filters import Filter, as_filter
from rag.vectorstore import VectorStore

__all__ = ["QUESTION_FILTER", "FilterSetting", "evaluate"]


class _QuestionFilter:
    """The sentinel for 'each question's own filter' (none where a question has none)."""

    def __repr__(self) -> str:
        return "QUESTION_FILTER"


QUESTION_FILTER = _QuestionFilter()
FilterSetting = str | Filter | _QuestionFilter | None


@dataclass(frozen=True)
class _Filter:
    label: str
    resolve: Callable[[Question], Filter | None]


def _filter_setting(setting: FilterSetting) -> _Filter:
    if setting is None:
        return _Filter("none", lambda _q: None)
    if isinstance(setting, _QuestionFilter):
        return _Filter("question", lambda q: as_filter(q.filter))
    tree = as_filter(setting)  # parse now: a syntax error must stop the sweep before any search
    return _Filter(str(tree), lambda _q: tree)


def _check_ks(top_k: Iterable[int]) -> list[int]:
    ks = sorted(set(top_k))
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise InvalidRequestError(f"top-k values must be integers >= 1, got {list(top_k)!r}")
    return ks


def _check_thresholds(thresholds: Iterable[float]) -> list[float]:
    values = sorted({float(t) for t in thresholds})
    if not values or any(not 0.0 <= t <= 1.0 for t in values):
        raise InvalidRequestError(f"thresholds must be within [0, 1], got {list(thresholds)!r}")
    return values


def _accepted(hits: Sequence[Document], threshold: float) -> list[Document]:
    # The same rule as SearchRequest.accepts: 0 keeps every hit, even negative scores.
    if threshold == 0.0:
        return list(hits)
    return [doc for doc in hits if doc.score is not None and doc.score >= threshold]


def _sweep_filter(
    store: VectorStore, questions: QuestionSet, setting: _Filter, ks: list[int], thresholds: list[float]
) -> tuple[list[SettingResult], list[QuestionResult]]:
    latencies: list[float] = []
    per_question: list[QuestionResult] = []
    for question in questions:
        request = SearchRequest(question.text, top_k=ks[-1], filter=setting.resolve(question))
        started = time.perf_counter()
        hits = store.similarity_search(request)
        latencies.append(time.perf_counter() - started)
        qrels = question.qrels()
        for threshold in thresholds:
            passing = _accepted(hits, threshold)
            for k in ks:
                units = units_of(passing[:k], qrels, questions.unit_field)
                scores = score_ranking(units, qrels, k)
                per_question.append(QuestionResult(setting.label, threshold, k, question.id, scores))
    p50, p95 = latency_percentiles(latencies)
    rows = []
    for threshold in thresholds:
        for k in ks:
            mine = [r.metrics for r in per_question if r.threshold == threshold and r.top_k == k]
            means = {name: sum(m[name] for m in mine) / len(mine) for name in METRICS}
            rows.append(SettingResult(setting.label, threshold, k, len(mine), means, p50, p95))
    return rows, per_question


def evaluate(
    store: VectorStore,
    questions: QuestionSet | Sequence[Question],
    *,
    top_k: Iterable[int] = (1, 3, 5, 10),
    thresholds: Iterable[float] = (0.0,),
    filters: Iterable[FilterSetting] = (None,),
) -> EvalResults:
    """Evaluate every (filter, threshold, top-k) combination, searching once per question and filter.

    Args:
        store: the store to search, filled with the labelled corpus.
        questions: a `QuestionSet` (its `unit_field` says which metadata names a chunk's source), or
            questions whose labels name the `source` metadata.
        top_k: chunk counts to evaluate (each >= 1); metrics are cut at the same k.
        thresholds: similarity thresholds in [0, 1] (0 accepts every hit).
        filters: None (no filter), filter text or a tree (applied to every question), or
            `QUESTION_FILTER` (each question's own `filter`).

    Raises:
        InvalidRequestError: bad k or threshold values, or no questions.
        FilterError: a filter that does not parse or that the store cannot evaluate.
    """
    qset = questions if isinstance(questions, QuestionSet) else QuestionSet(tuple(questions))
    if not len(qset):
        raise InvalidRequestError("no questions to evaluate")
    ks, values = _check_ks(list(top_k)), _check_thresholds(list(thresholds))
    settings = [_filter_setting(f) for f in filters] or [_filter_setting(None)]
    rows: list[SettingResult] = []
    details: list[QuestionResult] = []
    for setting in settings:
        setting_rows, setting_details = _sweep_filter(store, qset, setting, ks, values)
        rows.extend(setting_rows)
        details.extend(setting_details)
    return EvalResults(tuple(rows), tuple(details))
