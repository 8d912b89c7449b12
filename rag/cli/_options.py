"""Click options shared by the commands that search: search mode and fusion, threshold and filter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rag.config import DEFAULT_FUSION, DEFAULT_SEARCH_MODE, DEFAULT_VECTOR_WEIGHT
from rag.documents import FUSIONS, SEARCH_MODES

__all__ = ["search_options", "threshold_and_filter_options"]

F = TypeVar("F", bound=Callable[..., Any])


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
            f"[env RAG_SEARCH_MODE; default {DEFAULT_SEARCH_MODE}].",
        )
    return click.option(
        "--mode",
        type=click.Choice(SEARCH_MODES, case_sensitive=False),
        help=f"Search mode: {what}, e.g. --mode lexical for an error code "
        f"[env RAG_SEARCH_MODE; default {DEFAULT_SEARCH_MODE}].",
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
            f"[env RAG_VECTOR_WEIGHT; default {DEFAULT_VECTOR_WEIGHT}].",
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


def threshold_and_filter_options(func: F) -> F:
    """`--threshold` and `--filter` for `rag query` and `rag ask` (parameters `threshold`, `filter_text`)."""
    func = click.option(
        "--filter", "filter_text", metavar="EXPR", help="Metadata filter, e.g. \"source == 'guide.md'\"."
    )(func)
    return click.option(
        "--threshold",
        type=click.FloatRange(0.0, 1.0),
        default=0.0,
        show_default=True,
        help="Minimum cosine similarity (0 accepts everything).",
    )(func)
