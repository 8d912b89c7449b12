"""Composition helpers shared by the commands: settings, stores, error handling.

This module and the command modules are the only code in `rag` that imports `stores` and `ingest`.
Each store a command opens is recorded in `RAG_HOME/stores.json` with its kind, the embedder spec and
chunk settings it was built with, so later commands reuse them and a different model is a clear error,
and with its search settings (`ingest.search_record`), which every command's settings start from.
Opening a store is the library's `ingest.open_home`: the CLI has no second way. The home is resolved
once per command: `settings_from` reads the records (`ingest.home.resolve_home`) and keeps what it
read in the command's context, and `open_store` opens the store from it instead of reading again.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ingest.embedders import DEFAULT_EMBEDDER, build_embedder
from ingest.home import Home, HomeRecord, resolve_home
from ingest.records import (
    pg_table_name,
    record_search,
    resolve_store,
)
from ingest.search_record import resolve_search
from rag.config import Settings
from rag.embeddings import EmbeddingModel
from rag.errors import ConfigError, FilterError, InvalidRequestError, MissingDependencyError, RagError

__all__ = [
    "DEFAULT_EMBEDDER",
    "OpenedStore",
    "RagGroup",
    "build_embedder",
    "command_settings",
    "common_options",
    "open_store",
    "pg_table_name",
    "record_search",
    "require",
    "settings_from",
]

_USAGE_ERRORS = (ConfigError, FilterError, InvalidRequestError)
_RESOLVED = "rag.resolved_home"  # ctx.meta key: the HomeRecord `settings_from` read
F = TypeVar("F", bound=Callable[..., Any])


# -- options and errors ------------------------------------------------------------------------------


def _remember(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        # ctx.meta is shared by the group and its command, so either may set these.
        if value:
            ctx.meta[name] = value

    return callback


def common_options(func: F) -> F:
    """Add `--home` and `--debug` to a command (the group has them too)."""
    func = click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        expose_value=False,
        callback=_remember("rag.home"),
        help="Folder of the embedded store and manifests [env RAG_HOME; default ./.rag].",
    )(func)
    return click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_remember("rag.debug"),
        help="Show tracebacks on errors.",
    )(func)


class RagGroup(click.Group):
    """A click group that turns toolkit errors into one line on stderr and an exit code.

    Exit 2 for settings, filters and arguments that cannot work; 1 for runtime failures; 130 on Ctrl-C.
    `--debug` lets the traceback through.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RagError as exc:
            if ctx.meta.get("rag.debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            # A missing extra is the installation's fault, not the command line's: exit 1, not 2.
            usage = isinstance(exc, _USAGE_ERRORS) and not isinstance(exc, MissingDependencyError)
            ctx.exit(2 if usage else 1)
        except KeyboardInterrupt:
            if ctx.meta.get("rag.debug"):
                raise
            click.echo("interrupted (the next run resumes where this one stopped)", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            from rag.cli._pipes import quiet_broken_pipe

            quiet_broken_pipe()  # `rag info | head -2`: the reader has all it wanted
            ctx.exit(0)


def require(module: str, extra: str, feature: str) -> None:
    """Import `module` now, so a feature's missing extra stops a command before any work is done.

    Raises:
        MissingDependencyError: `module` cannot be imported; the message gives the `pip install` line.

    Example:
        >>> require("json", "notebooks", "--plot")
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{feature} needs {module.partition('.')[0]}, which is not installed: "
            f'pip install "rag-advisors[{extra}]"',
            package=module,
            extra=extra,
        ) from exc


def settings_from(ctx: click.Context, **options: Any) -> Settings:
    """The settings from the environment, with `--home` and the given command options applied.

    The store kind that neither `--store` nor `RAG_STORE` sets is the one the home holds the collection
    in (`ingest.records.resolve_store`). The search mode and vector weight that neither an option nor a
    `RAG_*` variable sets are the ones the home recorded for the store (see `ingest.search_record`),
    else the defaults for its embedder.
    """
    settings = Settings.from_env().replace(
        home=ctx.meta.get("rag.home"), database_url=ctx.meta.get("rag.database_url"), **options
    )
    try:
        resolved: HomeRecord | None = resolve_home(settings)
    except ConfigError:
        resolved = None  # no database URL yet, say: opening the store says so, with the whole story
    ctx.meta[_RESOLVED] = resolved
    if resolved is None:
        settings, known = resolve_store(settings), None
    else:
        settings, known = resolved.settings, resolved.record
    return resolve_search(settings, known.embedder if known else None, known.search if known else None)


_SETTING_PARAMS = {
    "store": "store",
    "collection": "collection",
    "embedder": "embedder",
    "chat_model": "chat_model",
    "base_url": "openai_base_url",
    "mode": "search_mode",
    "fusion": "fusion",
    "vector_weight": "vector_weight",
    "diversity": "diversity",
    "chunk_size": "chunk_size",
    "chunk_overlap": "chunk_overlap",
}
"""Command parameter -> `Settings` field, for the options that mirror settings (`store_options`,
`chat_model_options`, `search_options`, `--embedder`, chunking)."""


def command_settings(ctx: click.Context) -> Settings:
    """`settings_from` with every settings option the running command has, read from `ctx.params`.

    So a command lists its options once, in its decorators: `--store`, `--collection`, `--embedder`,
    `--model`, `--base-url`, `--mode` (one mode; `rag eval`'s list is not a setting), `--fusion`,
    `--vector-weight`, `--diversity`, `--chunk-size` and `--chunk-overlap`, whichever it takes.
    """
    params = ctx.params
    options = {field: params[name] for name, field in _SETTING_PARAMS.items() if name in params}
    return settings_from(ctx, **options)


# -- stores ------------------------------------------------------------------------------------------


OpenedStore = Home
"""An opened home store (`ingest.home.Home`): the commands' name for it."""


def open_store(
    settings: Settings,
    *,
    create: bool = False,
    wrap_model: Callable[[EmbeddingModel], EmbeddingModel] | None = None,
) -> Home:
    """Open the store the settings name, with the embedder it was built with (`ingest.open_home`).

    `wrap_model` wraps that embedder for this opening (`rag eval` caches query vectors with it). The
    home's records are the ones `settings_from` read for the running command when they name the same
    store; else they are read now.

    Raises:
        StoreNotFoundError: `create` is False and no store was built for these settings.
        ConfigError: the embedder given is not the one the store was built with.
        StoreConnectionError: the settings name a Chroma server that does not answer (or a bad URL).
    """
    ctx = click.get_current_context(silent=True)
    resolved = ctx.meta.get(_RESOLVED) if ctx is not None else None
    return Home.open(settings, create=create, wrap_model=wrap_model, resolved=resolved)
