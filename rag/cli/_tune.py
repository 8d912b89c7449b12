"""`rag eval QUESTIONS --tune`: sweep the search mode and vector weight, record the best in the home."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ingest.progress import CountProgress
from ingest.search_record import SearchRecord
from rag.cli._common import open_store, record_search
from rag.cli._eval_progress import CountedSearches, expected_searches
from rag.cli._labels import check_labels
from rag.config import Settings
from rag.documents import SEARCH_MODES, SearchMode
from rag.eval import QueryEmbeddingCache, QuestionSet
from rag.eval.sweep import FilterSetting
from rag.eval.tune import TuneResult, TuneRow, tune
from rag.retrieval.documents_view import DocumentsView

__all__ = ["check_tune_options", "run_tune"]


def check_tune_options(thresholds: list[float], filters: list[FilterSetting], **others: Any) -> None:
    """Refuse options that `--tune` cannot honour: several thresholds or filters, answers, plots.

    `others` maps each other option's flag (`--plot`) to its value; a value other than None or False
    was given.

    Raises:
        click.UsageError: naming the option.
    """
    if len(thresholds) > 1:
        raise click.UsageError(f"--tune searches at one --threshold; got {len(thresholds)}")
    if len(filters) > 1:
        raise click.UsageError(f"--tune searches with one --filter setting; got {len(filters)}")
    for flag, value in others.items():
        if value is not None and value is not False:
            raise click.UsageError(f"--tune measures retrieval only; it cannot be combined with {flag}")


def _describe(row: TuneRow, weight: float, k: int) -> str:
    fused = f", vector weight {weight:g}" if row.mode == "hybrid" else ""
    return f"{row.mode}{fused} (nDCG@{k} {row.metrics['ndcg']:.3f})"


def _current(result: TuneResult, mode: str) -> TuneRow | None:
    """The sweep's row for the setting in effect before tuning, if the sweep holds it."""
    for row in result.rows:
        if row.mode == mode and (row.vector_weight in (None, result.current_weight)):
            return row
    return None


def _print(result: TuneResult, mode: str, as_json: bool) -> None:
    """The sweep table and the choice (and the setting it replaces), or all of it as JSON."""
    if as_json:
        click.echo(result.to_json())
        return
    click.echo(result.table())
    click.echo(f"best: {_describe(result.best, result.chosen_weight, result.top_k)}")
    before = _current(result, mode)
    if before is not None and before is not result.best:
        click.echo(f"was:  {_describe(before, result.current_weight, result.top_k)}")


def _record(settings: Settings, result: TuneResult, path: Path) -> None:
    """Record the choice as the store's search settings, with the questions file and the time."""
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
    best = result.best
    tuned = SearchRecord(
        result.chosen_weight,
        best.mode,
        str(path.resolve()),
        when,
        result.top_k,
        round(best.metrics["ndcg"], 4),
    )
    record_search(settings, tuned)
    click.echo(
        f"recorded in {settings.home / 'stores.json'} for {settings.store} collection "
        f"{settings.collection!r}: rag query, ask, chat and serve now search this way "
        "(--mode, --vector-weight and RAG_* still override)",
        err=True,
    )


def run_tune(
    settings: Settings,
    questions: QuestionSet,
    path: Path,
    *,
    top_k: list[int],
    threshold: float,
    filter_setting: FilterSetting,
    modes: list[str] | None,
    weights: list[float],
    record: bool,
    as_json: bool,
) -> TuneResult:
    """Run the sweep at the largest k, print the table and the choice, and record it unless told not to."""
    k = max(top_k)
    base = settings.search_request()
    chosen: list[SearchMode] = list(modes or SEARCH_MODES)  # type: ignore[arg-type]  # checked by --mode
    hybrids = len(weights) if "hybrid" in chosen else 0
    click.echo(
        f"tuning on {len(questions)} questions at top-k {k}: {len(chosen) - (hybrids > 0)} single mode(s) "
        f"and hybrid at {hybrids} vector weight(s), {base.fusion} fusion",
        err=True,
    )
    opened = open_store(settings, wrap_model=QueryEmbeddingCache)  # each question embedded once
    try:
        view = DocumentsView(opened.store)  # what ask and query show: no chat memory, each page once
        questions = check_labels(view, questions, lambda m: click.echo(f"warning: {m}", err=True))
        singles: list[str] = [mode for mode in chosen if mode != "hybrid"]
        runs = expected_searches(len(questions), 1, singles, 1, base.diversity)
        runs += hybrids * expected_searches(len(questions), 1, ["hybrid"], 1, base.diversity)
        progress = CountProgress("eval", "searches", runs)
        result = tune(
            CountedSearches(view, progress),  # a VectorStore by delegation
            questions,
            top_k=k,
            weights=weights,
            modes=chosen,
            search_request=base,
            filter=filter_setting,
            threshold=threshold,
        )
        progress.close()
    finally:
        opened.close()
    _print(result, base.mode, as_json)
    if record:
        _record(settings, result, path)
    else:
        click.echo("dry run: nothing recorded", err=True)
    return result
