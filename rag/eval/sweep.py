"""Sweeps: every combination of search modes, filters, similarity thresholds and top-k values.

For each mode, filter setting and question the store is searched once, at the largest k with threshold 0.
Because a store returns the best matches first, in vector mode the result of `SearchRequest(top_k=k,
similarity_threshold=t)` is exactly that list with scores below t dropped, cut to k: each (k, t) pair
is derived from it without searching again. Latency is measured on that one search, so it is reported
per mode and filter setting (at the largest k) and repeated on each of its rows.

In lexical and hybrid modes, and with MMR (`diversity` > 0), a hit's score is not the cosine similarity
the threshold applies to, so each threshold above 0 is searched by the store itself (one more search per
question and threshold). Smaller k are the first k hits of the search at the largest k; for fused or
diversified rankings a store may gather more candidates for a larger k, so these can differ slightly from
searching at that k directly.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from rag.eval import evaluate, parse_questions
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
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
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from rag.chat.model import ChatModel
from rag.documents import SEARCH_MODES, Document, SearchMode, SearchRequest
from rag.errors import InvalidRequestError
from rag.eval.answering import AnswerScorer
from rag.eval.judge import LLMJudge
from rag.eval.metrics import METRICS, latency_percentiles, score_ranking, units_of
from rag.eval.query_cache import QueryEmbeddingCache
from rag.eval.questions import Question, QuestionSet
from rag.eval.results import EvalResults, QuestionResult, SettingResult
from rag.filters import Filter, as_filter
from rag.retrieval.windows import widen
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


def _check_modes(modes: Iterable[str]) -> list[SearchMode]:
    chosen = list(dict.fromkeys(modes))
    if not chosen or any(mode not in SEARCH_MODES for mode in chosen):
        raise InvalidRequestError(
            f"modes must be among {', '.join(map(repr, SEARCH_MODES))}, got {list(modes)!r}"
        )
    return chosen  # type: ignore[return-value]  # each one checked against SEARCH_MODES


def _timed(store: VectorStore, request: SearchRequest, latencies: list[float]) -> list[Document]:
    started = time.perf_counter()
    hits = store.similarity_search(request)
    latencies.append(time.perf_counter() - started)
    return hits


def _vector_unused(store: VectorStore, request: SearchRequest) -> AbstractContextManager[None]:
    """No query embedding for a search whose ranking never reads the query vector (lexical mode,
    threshold 0, no diversity), when the store embeds through a `QueryEmbeddingCache`."""
    model = store.embedding
    unused = request.mode == "lexical" and request.similarity_threshold == 0.0 and request.diversity == 0.0
    if unused and isinstance(model, QueryEmbeddingCache):
        return model.query_vector_unused()
    return nullcontext()


def _rankings(
    store: VectorStore, request: SearchRequest, thresholds: list[float], latencies: list[float]
) -> dict[float, list[Document]]:
    """The hits at each threshold, from one search when the scores are the cosine the threshold reads."""
    if request.mode == "vector" and request.diversity == 0.0:
        hits = _timed(store, request, latencies)
        return {threshold: _accepted(hits, threshold) for threshold in thresholds}
    rankings: dict[float, list[Document]] = {}
    for threshold in thresholds:  # ascending: latency is measured on the first, widest search
        search = request.replace(similarity_threshold=threshold)
        with _vector_unused(store, search):
            rankings[threshold] = (
                store.similarity_search(search) if rankings else _timed(store, search, latencies)
            )
    return rankings


def _sweep_filter(
    store: VectorStore,
    questions: QuestionSet,
    setting: _Filter,
    base: SearchRequest,
    ks: list[int],
    thresholds: list[float],
    scorer: AnswerScorer | None,
    answer_window: int,
) -> tuple[list[SettingResult], list[QuestionResult]]:
    latencies: list[float] = []
    per_question: list[QuestionResult] = []
    for question in questions:
        request = base.replace(
            query=question.text, top_k=ks[-1], similarity_threshold=0.0, filter=setting.resolve(question)
        )
        rankings = _rankings(store, request, thresholds, latencies)
        qrels = question.qrels()
        for threshold in thresholds:
            for k in ks:
                hits = rankings[threshold][:k]
                scores = score_ranking(units_of(hits, qrels, questions.unit_field), qrels, k)
                answers: dict[str, float | None] = {}
                if scorer is not None and question.answer is not None:
                    # widened after the cut, so the k passages read are those `rag ask -k k` reads
                    passages = widen(store, hits, answer_window) if answer_window else hits
                    answers = scorer.score(question, passages)
                per_question.append(
                    QuestionResult(setting.label, threshold, k, question.id, scores, base.mode, answers)
                )
    p50, p95 = latency_percentiles(latencies)
    rows = []
    for threshold in thresholds:
        for k in ks:
            mine = [r for r in per_question if r.threshold == threshold and r.top_k == k]
            means = {name: sum(r.metrics[name] for r in mine) / len(mine) for name in METRICS}
            answers = _answer_means(mine, scorer.metric_names) if scorer is not None else {}
            rows.append(
                SettingResult(setting.label, threshold, k, len(mine), means, p50, p95, base.mode, answers)
            )
    return rows, per_question


def _answer_means(results: Sequence[QuestionResult], names: Sequence[str]) -> dict[str, float | None]:
    """Each answer metric's mean over the questions it applies to (None where it applies to none)."""
    means: dict[str, float | None] = {}
    for name in names:
        values = [v for r in results if (v := r.answers.get(name)) is not None]
        means[name] = sum(values) / len(values) if values else None
    return means


def evaluate(
    store: VectorStore,
    questions: QuestionSet | Sequence[Question],
    *,
    top_k: Iterable[int] = (1, 3, 5, 10),
    thresholds: Iterable[float] = (0.0,),
    filters: Iterable[FilterSetting] = (None,),
    modes: Iterable[SearchMode] | None = None,
    search_request: SearchRequest | None = None,
    answerer: ChatModel | None = None,
    judge: LLMJudge | None = None,
    answer_window: int = 0,
) -> EvalResults:
    """Evaluate every (mode, filter, threshold, top-k) setting, searching once per question, filter, mode.

    With a store whose model is a `QueryEmbeddingCache` (as `rag eval` opens it), each question is
    embedded once for the whole run, whatever the modes and thresholds, and lexical mode (threshold 0,
    no diversity) embeds nothing.

    Args:
        store: the store to search, filled with the labelled corpus.
        questions: a `QuestionSet` (its `unit_field` says which metadata names a chunk's source), or
            questions whose labels name the `source` metadata.
        top_k: chunk counts to evaluate (each >= 1); metrics are cut at the same k.
        thresholds: similarity thresholds in [0, 1] (0 accepts every hit).
        filters: None (no filter), filter text or a tree (applied to every question), or
            `QUESTION_FILTER` (each question's own `filter`).
        modes: search modes to compare ("vector", "lexical", "hybrid"); by default the mode of
            `search_request` (vector when there is none).
        search_request: the fusion, vector weight, RRF constant and diversity to search with (its query,
            top-k, threshold and filter are replaced by the sweep's).
        answerer: a chat model that answers each question with a gold `answer` from each setting's
            passages; its answers are scored (see `rag.eval.answers`) into the answer columns.
        judge: an `LLMJudge` grading those answers too (needs `answerer`).
        answer_window: neighbouring chunks each passage the answerer reads is widened by
            (`rag.retrieval.windows.widen`), applied to each setting's k hits: the passages `rag ask`
            reads at that k (`rag eval` passes `ANSWER_WINDOW`).

    Raises:
        InvalidRequestError: bad k, threshold or mode values, or no questions.
        FilterError: a filter that does not parse or that the store cannot evaluate.
    """
    qset = questions if isinstance(questions, QuestionSet) else QuestionSet(tuple(questions))
    if not len(qset):
        raise InvalidRequestError("no questions to evaluate")
    ks, values = _check_ks(list(top_k)), _check_thresholds(list(thresholds))
    base = search_request or SearchRequest("defaults")
    chosen = _check_modes([base.mode] if modes is None else list(modes))
    settings = [_filter_setting(f) for f in filters] or [_filter_setting(None)]
    if judge is not None and answerer is None:
        raise InvalidRequestError("a judge grades generated answers: pass answerer= as well")
    scorer = AnswerScorer(answerer, judge) if answerer is not None else None
    rows: list[SettingResult] = []
    details: list[QuestionResult] = []
    for mode in chosen:
        for setting in settings:
            setting_rows, setting_details = _sweep_filter(
                store, qset, setting, base.replace(mode=mode), ks, values, scorer, answer_window
            )
            rows.extend(setting_rows)
            details.extend(setting_details)
    answered = scorer is not None and any(q.answer is not None for q in qset)
    return EvalResults(
        tuple(rows),
        tuple(details),
        answer_metrics=scorer.metric_names if scorer is not None and answered else (),
        judge=judge.name if judge is not None else None,
    )
