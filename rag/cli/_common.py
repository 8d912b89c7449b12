"""Composition helpers shared by the commands: settings, embedders from specs, stores, error handling.

This module and the command modules are the only code in `rag` that imports `stores` and `ingest`.
Each store a command opens is recorded in `RAG_HOME/stores.json` with the embedder spec and chunk
settings it was built with, so later commands reuse them and a different model is a clear error, and with
its search settings (`rag.cli._search`), which every command's settings start from.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rag.cli._records import (
    StoreRecord,
    database_url,
    load_records,
    pg_table_name,
    record_from,
    record_search,
    save_record,
    store_key,
)
from rag.cli._search import SearchRecord, resolve_search
from rag.config import Settings, default_vector_weight
from rag.database_url import mask_url
from rag.documents import Document, SearchRequest
from rag.embeddings import EmbeddingModel, HashingEmbedding
from rag.errors import (
    ConfigError,
    FilterError,
    InvalidRequestError,
    MissingDependencyError,
    RagError,
    StoreNotFoundError,
)
from rag.filters import Filter
from rag.vectorstore import VectorStore

if TYPE_CHECKING:
    from ingest.manifest import Manifest

__all__ = [
    "DEFAULT_EMBEDDER",
    "LazyStore",
    "OpenedStore",
    "RagGroup",
    "StoreRecord",
    "build_embedder",
    "common_options",
    "open_store",
    "pg_table_name",
    "record_search",
    "require",
    "settings_from",
]

DEFAULT_EMBEDDER = "hashing"
_USAGE_ERRORS = (ConfigError, FilterError, InvalidRequestError)
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

    The search mode and vector weight that neither an option nor a `RAG_*` variable sets are the ones
    the home recorded for the store (see `rag.cli._search`), else the defaults for its embedder.
    """
    settings = Settings.from_env().replace(
        home=ctx.meta.get("rag.home"), database_url=ctx.meta.get("rag.database_url"), **options
    )
    try:
        raw = load_records(settings).get(store_key(settings))
    except ConfigError:
        raw = None  # no database URL yet: opening the store says so, with the whole story
    known = record_from(raw) if isinstance(raw, dict) else None
    return resolve_search(settings, known.embedder if known else None, known.search if known else None)


# -- embedders ---------------------------------------------------------------------------------------


def build_embedder(spec: str, settings: Settings | None = None) -> EmbeddingModel:
    """An embedding model from a spec: `hashing`, `hashing:2048`, `st:NAME_OR_PATH`, `openai:MODEL`.

    Raises:
        ConfigError: an unknown or malformed spec.
    """
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "hashing":
        if not arg:
            return HashingEmbedding()
        if not arg.isdigit():
            raise ConfigError(f"embedder spec {spec!r}: the hashing dimension must be an integer")
        return HashingEmbedding(int(arg))
    if kind in ("st", "sentence-transformers") and arg:
        from rag.embeddings import SentenceTransformerEmbedding

        return SentenceTransformerEmbedding(arg)
    if kind == "openai" and arg:
        from rag.embeddings.openai import OpenAIEmbedding

        settings = settings or Settings()
        return OpenAIEmbedding(arg, base_url=settings.openai_base_url, api_key=settings.openai_api_key)
    raise ConfigError(
        f"unknown embedder spec {spec!r}; use 'hashing', 'hashing:DIM', 'st:MODEL_OR_PATH' or 'openai:MODEL'"
    )


# -- stores ------------------------------------------------------------------------------------------


@dataclass
class OpenedStore:
    """An open store with what goes with it: its record, manifest file, and how to make it durable."""

    store: VectorStore
    settings: Settings
    record: StoreRecord
    location: str
    manifest_path: Path
    flush: Callable[[], None] | None = None
    close: Callable[[], None] = field(default=lambda: None)

    def open_manifest(self) -> Manifest:
        """The ingestion manifest: a SQLite file beside the store, or a table in the store's database."""
        if self.settings.store == "pgvector":
            from ingest.manifest_postgres import PostgresManifest

            url = database_url(self.settings)
            return PostgresManifest(url, table=pg_table_name(self.settings.collection))
        from ingest.manifest import Manifest

        return Manifest(self.manifest_path)


def _resolve_embedder(settings: Settings, known: StoreRecord | None) -> tuple[str, EmbeddingModel]:
    spec = settings.embedder or (known.embedder if known else DEFAULT_EMBEDDER)
    model = build_embedder(spec, settings)
    if known is not None and model.name != known.model:
        raise ConfigError(
            f"collection {settings.collection!r} was built with embedder {known.embedder!r} (model "
            f"{known.model!r}); {spec!r} gives model {model.name!r}. "
            "Use the same embedder or another --collection"
        )
    return spec, model


class LazyStore:
    """A store opened on first use, so a run with nothing to write never loads it (or imports chromadb).

    Example:
        >>> lazy = LazyStore(HashingEmbedding(), lambda: None)  # doctest: +SKIP
        >>> lazy.embedding.name, lazy.opened  # doctest: +SKIP
        ('hashing-...', False)
    """

    def __init__(self, embedding: EmbeddingModel, factory: Callable[[], VectorStore]) -> None:
        self._embedding = embedding
        self._factory = factory
        self._store: VectorStore | None = None

    @property
    def embedding(self) -> EmbeddingModel:
        return self._embedding

    @property
    def opened(self) -> bool:
        return self._store is not None

    @property
    def kind(self) -> str:
        """The family of the store behind this one (`chroma`, `numpy`, `pgvector`), for traces; opens it."""
        from rag.observability.steps import store_kind

        return store_kind(self.real)

    @property
    def real(self) -> VectorStore:
        """The store itself, opened now if it was not yet."""
        if self._store is None:
            self._store = self._factory()
        return self._store

    def add(self, documents: Iterable[Document]) -> None:
        self.real.add(documents)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        return self.real.delete(ids, filter=filter)

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        return self.real.get(ids, filter, limit, include_embeddings=include_embeddings)

    def count(self, filter: str | Filter | None = None) -> int:
        return self.real.count(filter)

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        return self.real.similarity_search(request)

    def call_if_opened(self, method: str) -> None:
        """Call `method` on the store if it was opened (`save`, `close`)."""
        if self._store is not None and callable(func := getattr(self._store, method, None)):
            func()


def _factory(settings: Settings, model: EmbeddingModel) -> tuple[Callable[[], VectorStore], str, bool]:
    """How to open the store, its location, and whether it must be saved to be durable."""
    if settings.store == "numpy":
        folder = settings.home / "numpy" / settings.collection

        def numpy_store() -> VectorStore:
            from stores import NumpyVectorStore

            return NumpyVectorStore(model, path=folder)  # loads what an earlier run saved there

        return numpy_store, str(folder), True
    if settings.store == "pgvector":
        url, table = database_url(settings), pg_table_name(settings.collection)

        def pg_store() -> VectorStore:
            from stores import PgVectorStore

            return PgVectorStore(model, url=url, table=table)

        return pg_store, f"{mask_url(url)} table {table}", False
    location = settings.chroma_url or str(settings.home / "chroma")

    def chroma_store() -> VectorStore:
        from stores import ChromaVectorStore

        if settings.chroma_url:
            return ChromaVectorStore(model, collection=settings.collection, url=settings.chroma_url)
        return ChromaVectorStore(model, collection=settings.collection, path=location)

    return chroma_store, location, False


def open_store(
    settings: Settings,
    *,
    create: bool = False,
    wrap_model: Callable[[EmbeddingModel], EmbeddingModel] | None = None,
) -> OpenedStore:
    """Open the store the settings name, with the embedder it was built with (or the one given).

    `wrap_model` wraps that embedder for this opening (`rag eval` caches query vectors with it).

    Raises:
        StoreNotFoundError: `create` is False and no store was built for these settings.
        ConfigError: the embedder given is not the one the store was built with.
        StoreConnectionError: the settings name a Chroma server that does not answer (or a bad URL).
    """
    if settings.store == "chroma" and settings.chroma_url:
        from stores.chroma.client import reach_server

        reach_server(settings.chroma_url)  # else a server that is down reads as "no collection"
    records = load_records(settings)
    raw = records.get(store_key(settings))
    known = record_from(raw) if isinstance(raw, dict) else None
    if known is None and not create:
        raise StoreNotFoundError(
            f"no {settings.store} collection {settings.collection!r} in {str(settings.home)!r}; "
            "run `rag ingest` first",
            path=str(settings.home),
        )
    spec, model = _resolve_embedder(settings, known)
    record = StoreRecord(
        spec,
        model.name,
        model.dimensions,
        settings.chunk_size if settings.chunk_size is not None else (known.chunk_size if known else None),
        settings.chunk_overlap
        if settings.chunk_overlap is not None
        else (known.chunk_overlap if known else None),
        # A new store records the weight that suits its embedder; an old home without one keeps none.
        known.search if known else SearchRecord(default_vector_weight(spec)),
    )
    if wrap_model is not None:
        model = wrap_model(model)
    factory, location, needs_save = _factory(settings, model)
    store = LazyStore(model, factory)
    if create and record != known:
        save_record(settings, record)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", store_key(settings))
    manifest = settings.home / "manifests" / f"{safe}.sqlite"
    flush = (lambda: store.call_if_opened("save")) if needs_save else None
    return OpenedStore(store, settings, record, location, manifest, flush, lambda: _close(store, model))


def _close(store: LazyStore, model: EmbeddingModel) -> None:
    """Close the store if it was opened, then the model's HTTP client if it has one."""
    try:
        store.call_if_opened("close")
    finally:
        closer = getattr(model, "close", None)
        if callable(closer):
            closer()
