"""Click options shared by several commands: the store, the chat model, search mode and fusion, threshold
and filter, `--keep-duplicates`; `answering_options` bundles what `rag ask`, `chat` and `serve` share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rag.cli._common import common_options
from rag.config import DEFAULT_FUSION, DEFAULT_SEARCH_MODE, STORE_KINDS, VECTOR_WEIGHT_BY_EMBEDDER
from rag.documents import FUSIONS, SEARCH_MODES
from rag.errors import FilterError, InvalidRequestError
from rag.filters import parse

__all__ = [
    "answering_options",
    "chat_model_options",
    "check_exact",
    "checked_filter",
    "distinct_option",
    "exact_option",
    "not_blank",
    "search_options",
    "store_options",
    "threshold_and_filter_options",
]

F = TypeVar("F", bound=Callable[..., Any])
_WEIGHTS = ", ".join(f"{family} {weight:g}" for family, weight in VECTOR_WEIGHT_BY_EMBEDDER.items())


def _mode_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[str] | None:
    """`vector,lexical,hybrid` as a list (repeats dropped), each one checked."""
    if value is None:
        return None
    modes = list(dict.fromkeys(part.strip().lower() for part in value.split(",") if part.strip()))
    if not modes or any(mode not in SEARCH_MODES for mode in modes):
        raise click.BadParameter(
            f"expected a comma-separated list of {', '.join(SEARCH_MODES)}; got {value!r}"
        )
    return modes


def _mode_option(several: bool) -> Callable[[F], F]:
    what = (
        "vector (cosine similarity of embeddings), lexical (BM25 on the words: names, codes, error "
        "messages) or hybrid (both rankings fused)"
    )
    if several:
        return click.option(
            "--mode",
            "modes",
            metavar="MODE,...",
            callback=_mode_list,
            help=f"Search modes to compare, comma-separated: {what}, e.g. --mode vector,lexical,hybrid "
            f"[env RAG_SEARCH_MODE; default: the home's record, else {DEFAULT_SEARCH_MODE}].",
        )
    return click.option(
        "--mode",
        type=click.Choice(SEARCH_MODES, case_sensitive=False),
        help=f"Search mode: {what}, e.g. --mode lexical for an error code "
        f"[env RAG_SEARCH_MODE; default: the home's record, else {DEFAULT_SEARCH_MODE}].",
    )


def search_options(*, several_modes: bool = False) -> Callable[[F], F]:
    """Add `--mode`, `--fusion`, `--vector-weight` and `--diversity` to a command.

    The command receives `mode` (or, with `several_modes`, `modes`: a list from `vector,lexical,...`),
    `fusion`, `vector_weight` and `diversity`, each None when not given, so the settings (`RAG_*`)
    decide; pass them to `settings_from(ctx, search_mode=..., ...)`.

    Example:
        >>> @click.command()
        ... @search_options()
        ... def find(mode: str | None, fusion: str | None, vector_weight: float | None,
        ...          diversity: float | None) -> None: ...
    """

    def decorate(func: F) -> F:
        func = click.option(
            "--diversity",
            type=click.FloatRange(0.0, 1.0),
            metavar="0..1",
            help="MMR diversity in [0, 1]: 0 ranks by relevance only, higher values skip near-duplicate "
            "passages, e.g. --diversity 0.3 [env RAG_DIVERSITY; default 0].",
        )(func)
        func = click.option(
            "--vector-weight",
            type=click.FloatRange(0.0, 1.0),
            metavar="0..1",
            help="Share of the vector ranking in hybrid fusion, in [0, 1], e.g. --vector-weight 0.7 "
            "[env RAG_VECTOR_WEIGHT; default: the home's record (rag eval --tune), else the embedder's: "
            f"{_WEIGHTS}].",
        )(func)
        func = click.option(
            "--fusion",
            type=click.Choice(FUSIONS, case_sensitive=False),
            help="How hybrid mode fuses the two rankings: rrf (reciprocal rank fusion) or weighted "
            "(a blend of normalised scores, see --vector-weight) "
            f"[env RAG_FUSION; default {DEFAULT_FUSION}].",
        )(func)
        return _mode_option(several_modes)(func)

    return decorate


def not_blank(_ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A click callback for a question argument: blank text is a usage error naming the argument
    (`error: QUESTION must not be blank`, exit 2)."""
    if not value.strip():
        raise InvalidRequestError(f"{param.human_readable_name} must not be blank")
    return value


def checked_filter(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    """A click callback for `--filter`: the text (or each text of a repeatable option) parsed once, so a
    syntax error names the option (`error: --filter: ...`, exit 2) before any store opens. `none` and
    `question` pass (`rag eval`'s words); the value is returned unchanged."""
    several = isinstance(value, tuple)
    for text in value if several else () if value is None else (value,):
        if several and text.strip().lower() in ("none", "question"):
            continue
        try:
            parse(text)
        except FilterError as exc:
            raise FilterError(f"--filter: {exc}") from exc
    return value


def check_exact(store: object, exact: bool) -> None:
    """Refuse `--exact` on a store that searches an approximate index, naming the flag (exit 2).

    `store` may be a home's lazy store (`real` is the store behind it).
    """
    real = getattr(store, "real", store)
    capabilities = getattr(real, "capabilities", None)
    if exact and capabilities is not None and not capabilities.exact:
        from rag.observability.steps import store_kind

        raise InvalidRequestError(
            f"--exact: the {store_kind(real)} store searches an approximate index; exact top-k needs a "
            "numpy or pgvector home (rag ingest --store numpy)"
        )


def threshold_and_filter_options(func: F) -> F:
    """`--threshold` and `--filter` for `rag query` and `rag ask` (parameters `threshold`, `filter_text`)."""
    func = click.option(
        "--filter",
        "filter_text",
        metavar="EXPR",
        callback=checked_filter,
        help="Metadata filter, e.g. \"source == 'guide.md'\".",
    )(func)
    return click.option(
        "--threshold",
        type=click.FloatRange(0.0, 1.0),
        default=0.0,
        show_default=True,
        help="Minimum cosine similarity, in every search mode (0 accepts everything). It compares the "
        "cosine shown beside each hit, not the rank score (BM25 or fused in lexical and hybrid mode).",
    )(func)


def exact_option(func: F) -> F:
    """`--exact` for `rag query` and `rag ask` (parameter `exact`): `SearchRequest(exact=True)`."""
    return click.option(
        "--exact",
        is_flag=True,
        help="Exact vector top-k: every matching vector is scored, so no near neighbour is missed. The "
        "numpy and pgvector stores answer it; a Chroma home (an approximate index) refuses it "
        "(docs/exactness.md).",
    )(func)


def _remember_url(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    # Kept in ctx.meta (as --home is), so every command that opens a store sees it through settings_from.
    if value:
        ctx.meta["rag.database_url"] = value


def store_options(*, defaults: bool = False) -> Callable[[F], F]:
    """`--store`, `--collection` (parameters `store`, `collection`) and `--database-url` (read by
    `settings_from`); `defaults` names the defaults in the help."""
    store_default = ", else chroma" if defaults else ""
    collection_default = "; default rag" if defaults else ""

    def decorate(func: F) -> F:
        func = click.option(
            "--database-url",
            metavar="URL",
            expose_value=False,
            callback=_remember_url,
            help="PostgreSQL for --store pgvector, e.g. postgresql://user:pass@host/db "
            "[env RAG_DATABASE_URL].",
        )(func)
        func = click.option(
            "--collection", help=f"Collection name [env RAG_COLLECTION{collection_default}]."
        )(func)
        return click.option(
            "--store",
            type=click.Choice(STORE_KINDS),
            help="Store kind [env RAG_STORE; default: the kind the home holds the collection in"
            f"{store_default}].",
        )(func)

    return decorate


def chat_model_options(func: F) -> F:
    """`--model` and `--base-url` for `rag ask` and `rag chat` (parameters `chat_model`, `base_url`)."""
    func = click.option(
        "--base-url", metavar="URL", help="OpenAI-compatible endpoint [env OPENAI_BASE_URL]."
    )(func)
    return click.option(
        "--model", "chat_model", metavar="NAME", help="Chat model name [env RAG_CHAT_MODEL]."
    )(func)


def distinct_option(func: F) -> F:
    """`--keep-duplicates` (parameter `keep_duplicates`): `DocumentsView(store, distinct=False)`."""
    return click.option(
        "--keep-duplicates",
        is_flag=True,
        help="Also use chunks whose text nearly repeats a better-ranked hit (a page copied into another "
        "file); by default each text is used once and the list filled from further down.",
    )(func)


def answering_options(func: F) -> F:
    """What `rag ask`, `chat` and `serve` share, in one order: `--keep-duplicates`, the store, the chat
    model and the search options, then `--home` and `--debug`. Goes above `click.pass_context`."""
    for decorate in (common_options, search_options(), chat_model_options, store_options(), distinct_option):
        func = decorate(func)
    return func
