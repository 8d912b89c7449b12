"""`rag eval QUESTIONS`: measure retrieval on labelled questions over mode, filter, threshold and top-k."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ingest.progress import CountProgress
from rag.chat.model import ChatModel
from rag.cli._common import command_settings, common_options, open_store, require
from rag.cli._eval_progress import CountedSearches, expected_searches
from rag.cli._labels import check_labels
from rag.cli._models import build_chat_model
from rag.cli._options import checked_filter, search_options, store_options
from rag.cli._tune import check_tune_options, run_tune
from rag.config import Settings
from rag.eval import (
    QUESTION_FILTER,
    QueryEmbeddingCache,
    QuestionSet,
    evaluate,
    load_beir,
    load_questions,
)
from rag.eval.judge import LLMJudge
from rag.eval.sweep import FilterSetting
from rag.filters import as_filter
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.windows import ANSWER_WINDOW

__all__ = ["answer_models", "eval_command", "parse_filter_options"]


def _number_list(
    kind: type[int] | type[float], low: float, high: float | None
) -> Callable[[click.Context, click.Parameter, str], list[Any]]:
    """A callback parsing a comma-separated list of numbers, such as `1,3,5,10`, within [low, high]."""
    name = "integers" if kind is int else "numbers"

    def parse(_ctx: click.Context, _param: click.Parameter, value: str) -> list[Any]:
        try:
            numbers = [kind(part) for part in value.split(",") if part.strip()]
        except ValueError:
            raise click.BadParameter(f"expected comma-separated {name}, got {value!r}") from None
        bad = [n for n in numbers if n < low or (high is not None and n > high)]
        if not numbers or bad:
            upper = "" if high is None else f" and <= {high:g}"
            raise click.BadParameter(f"expected {name} >= {low:g}{upper}, got {value!r}")
        return numbers

    return parse


def parse_filter_options(values: tuple[str, ...], questions: QuestionSet) -> list[FilterSetting]:
    """`--filter` values as sweep settings: `none`, `question` (each question's own) or an expression.

    Without any `--filter`: no filter, plus the questions' own filters when some question has one.
    """
    if not values:
        own = any(q.filter for q in questions)
        return [None, QUESTION_FILTER] if own else [None]
    settings: list[FilterSetting] = []
    for value in values:
        word = value.strip().lower()
        if word in ("none", "question"):
            settings.append(None if word == "none" else QUESTION_FILTER)
        else:
            settings.append(as_filter(value))  # a syntax error stops here, before the store opens
    return settings


@click.command("eval")
@click.argument("questions", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--top-k",
    "-k",
    "top_k",
    callback=_number_list(int, 1, None),
    metavar="K,...",
    default="1,3,5,10",
    show_default=True,
    help="Chunk counts to evaluate, comma-separated.",
)
@click.option(
    "--threshold",
    "thresholds",
    callback=_number_list(float, 0.0, 1.0),
    metavar="T,...",
    default="0",
    show_default=True,
    help="Similarity thresholds in [0, 1], comma-separated (0 accepts everything).",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="EXPR",
    callback=checked_filter,
    help="A filter setting (repeatable): an expression, 'none', or 'question' (each question's own filter). "
    "Default: none, plus question when any question has a filter.",
)
@click.option(
    "--beir", is_flag=True, help="QUESTIONS is a BEIR folder (queries.jsonl, qrels/); implied by a folder."
)
@click.option("--split", default="test", show_default=True, help="BEIR qrels split (qrels/SPLIT.tsv).")
@store_options()
@click.option(
    "--embedder", metavar="SPEC", help="Override the embedder the store was built with (must match)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
@click.option(
    "--wide",
    is_flag=True,
    help="Print every column under its full name (precision, map and p95_ms too); the default table has "
    "short headers and fits about 100 columns.",
)
@click.option(
    "--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write the rows as CSV."
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help='Draw recall@k, nDCG@k (PNG); needs matplotlib: pip install "rag-advisors[notebooks]".',
)
@click.option(
    "--answers/--no-answers",
    "answers",
    default=None,
    help="Generate and score an answer per question and setting (containment, token F1, citations, quotes). "
    "Default: on when some question has an 'answer'.",
)
@click.option(
    "--answer-with",
    type=click.Choice(["chat", "extractive"]),
    default="chat",
    show_default=True,
    help="'chat': the configured chat model (extractive when none is); 'extractive': always the offline one.",
)
@click.option(
    "--judge",
    "judge_model",
    metavar="MODEL",
    help="Also grade answers (faithfulness, relevance) with MODEL on the OpenAI-compatible endpoint "
    "(OPENAI_BASE_URL, OPENAI_API_KEY).",
)
@click.option(
    "--tune",
    "tune_search",
    is_flag=True,
    help="Sweep the modes and hybrid's vector weight at the largest --top-k, pick the best nDCG and record "
    "it in the home, so rag query, ask, chat and serve use it.",
)
@click.option(
    "--weights",
    callback=_number_list(float, 0.0, 1.0),
    metavar="W,...",
    default="0,0.05,0.1,0.15,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
    show_default=True,
    help="Vector weights --tune tries in hybrid mode, comma-separated.",
)
@click.option(
    "--dry-run",
    "--no-record",
    "dry_run",
    is_flag=True,
    help="With --tune: print the sweep and the choice, record nothing.",
)
@search_options(several_modes=True)
@common_options
@click.pass_context
def eval_command(
    ctx: click.Context,
    /,
    questions: Path,
    top_k: list[int],
    thresholds: list[float],
    filters: tuple[str, ...],
    beir: bool,
    split: str,
    as_json: bool,
    wide: bool,
    csv_path: Path | None,
    plot_path: Path | None,
    modes: list[str] | None,
    answers: bool | None,
    answer_with: str,
    judge_model: str | None,
    tune_search: bool,
    weights: list[float],
    dry_run: bool,
    **_settings: Any,  # the store, embedder and search options: command_settings reads them
) -> None:
    """Evaluate retrieval on labelled QUESTIONS for every mode x filter x threshold x top-k setting.

    QUESTIONS is a JSON Lines file of labelled questions, or a BEIR folder. Ingest the corpus first:
    `rag ingest data/docs` for the sample questions; for BEIR,
    `rag ingest FOLDER/corpus.jsonl --id-field _id --text-field title,text`.
    Metrics are computed per source (or labelled page): several chunks of one source count once.

    \b
    One question a line; "page" (PDF), "answer" and "filter" are optional:
      {"question": "How do I install it?", "relevant": [{"source": "guide/install.md", "page": 2}]}

    A source is the file's path inside the folder you ingested; with the root's label in front
    (`docs/guide/install.md`, as `rag query` and `rag ask` name it) it is read as that path. A source
    no chunk carries is named on stderr: its questions cannot score.

    With --tune: vector and lexical search, and hybrid search at each of --weights, at the largest
    --top-k; the best nDCG wins (ties: the simpler mode, then the weight closest to the current one)
    and is recorded in the home as the store's search mode and vector weight (not with --dry-run).

    \b
    Example:
        rag ingest data/docs
        rag eval data/questions.jsonl --top-k 1,5,10 --threshold 0,0.3 --plot eval.png
        rag eval scifact/ --top-k 10,100 --filter none --mode vector,lexical,hybrid
        rag eval data/questions.jsonl --top-k 3 --judge gpt-4o-mini
        rag eval data/questions.jsonl --top-k 5 --tune --dry-run
    """
    if dry_run and not tune_search:
        raise click.UsageError("--dry-run goes with --tune")
    if tune_search:
        options = {"--plot": plot_path, "--csv": csv_path, "--answers": answers, "--judge": judge_model}
        check_tune_options(thresholds, list(filters), **options)
    if plot_path is not None:  # before the work: a missing extra must not cost a whole evaluation
        require("matplotlib.figure", "notebooks", "--plot")
    qset = load_beir(questions, split) if beir or questions.is_dir() else load_questions(questions)
    for warning in qset.warnings:
        click.echo(f"warning: {warning}", err=True)
    filter_settings = parse_filter_options(filters, qset) if filters or not tune_search else [None]
    settings = command_settings(ctx)
    if tune_search:
        run_tune(
            settings,
            qset,
            questions,
            top_k=top_k,
            threshold=thresholds[0],
            filter_setting=filter_settings[0],
            modes=modes,
            weights=weights,
            record=not dry_run,
            as_json=as_json,
        )
        return
    chosen = modes or [settings.search_request().mode]
    opened = open_store(settings, wrap_model=QueryEmbeddingCache)  # first: an unreachable store is one line
    # (the cache embeds each question once per run)
    answerer: ChatModel | None = None
    judge: LLMJudge | None = None
    try:
        # what ask reads: no chat memory, each page once; answers widen each hit by its neighbours
        view = DocumentsView(opened.store)
        qset = check_labels(view, qset, _warn)
        answerer, judge = answer_models(settings, qset, answers, answer_with, judge_model)
        if answerer is not None:
            labelled = sum(q.answer is not None for q in qset)
            graded = f", graded by {judge.name!r}" if judge is not None else ""
            using = f"using {answerer!r}{graded}"
            click.echo(f"answering the {labelled} questions with an answer {using}", err=True)
        click.echo(
            f"evaluating {len(qset)} questions x {len(filter_settings)} filter setting(s) x {len(chosen)} "
            f"mode(s) ({', '.join(chosen)}) against {opened.location}",
            err=True,
        )
        base = settings.search_request()
        total = expected_searches(len(qset), len(filter_settings), chosen, len(thresholds), base.diversity)
        progress = CountProgress("eval", "searches", total)
        results = evaluate(
            CountedSearches(view, progress),  # a VectorStore by delegation
            qset,
            top_k=top_k,
            thresholds=thresholds,
            filters=filter_settings,
            modes=chosen,  # type: ignore[arg-type]  # checked by the --mode callback
            search_request=base,
            answerer=answerer,
            judge=judge,
            answer_window=ANSWER_WINDOW,
        )
        progress.close()
    finally:
        opened.close()
        for model in (answerer, judge.model if judge is not None else None):
            close = getattr(model, "close", None)
            if callable(close):
                close()  # an endpoint's model holds an HTTP connection pool
    click.echo(results.to_json() if as_json else results.table(full=wide))
    if results.judge is not None:
        click.echo(f"faithfulness and relevance graded by judge {results.judge!r}", err=True)
    if csv_path is not None:
        results.to_csv(csv_path)
        click.echo(f"wrote {csv_path}", err=True)
    if plot_path is not None:
        results.plot(plot_path)
        click.echo(f"wrote {plot_path}", err=True)


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def answer_models(
    settings: Settings,
    questions: QuestionSet,
    answers: bool | None,
    answer_with: str,
    judge_model: str | None,
) -> tuple[ChatModel | None, LLMJudge | None]:
    """The answering model (None: answers are not scored) and the judge, from the command's options.

    Raises:
        click.UsageError: `--judge` with `--no-answers`, or with no question holding an answer.
    """
    labelled = any(q.answer is not None for q in questions)
    wanted = labelled if answers is None else answers
    if judge_model is not None and not (wanted and labelled):
        raise click.UsageError("--judge grades generated answers: it needs questions with an 'answer'")
    if not wanted:
        return None, None
    if answer_with == "extractive":
        from rag.models import ExtractiveChatModel

        answerer: ChatModel = ExtractiveChatModel()
    else:
        answerer = build_chat_model(settings)
    judge = None
    if judge_model is not None:
        from rag.models import OpenAIChatModel

        judge = LLMJudge(
            OpenAIChatModel(
                base_url=settings.openai_base_url, api_key=settings.openai_api_key, model=judge_model
            )
        )
    return answerer, judge
