"""Open a home folder from Python: the store `rag ingest` built there, with everything it recorded.

A home (`RAG_HOME`, default `./.rag`) holds one or more stores, each recorded in `stores.json` with its
kind, embedder, chunking and search settings (`ingest.records`). `open_home` reads the record, so a
notebook opens what the CLI built (and the CLI opens what a notebook built) without repeating a setting.

Example:
    >>> import tempfile
    >>> from rag import Document
    >>> folder = tempfile.mkdtemp()
    >>> with open_home(folder, store="numpy", create=True) as home:
    ...     home.store.add([Document("1", "the pump runs at night")])
    ...     home.save()
    >>> with open_home(folder) as home:  # the kind and the embedder come from the home's record
    ...     home.kind, home.embedder, home.store.count()
    ('numpy', 'hashing', 1)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ingest.embedders import DEFAULT_EMBEDDER, build_embedder, make_splitter
from ingest.lazy_store import LazyStore
from ingest.lock import HomeLock
from ingest.manifest import Manifest
from ingest.records import (
    StoreRecord,
    database_url,
    load_records,
    not_found,
    pg_table_name,
    record_from,
    resolve_store,
    save_record,
    store_key,
)
from ingest.search_record import SearchRecord, resolve_search
from ingest.store_factory import StorePlace, build_store
from rag.config import Settings, default_vector_weight
from rag.documents import SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import ConfigError

if TYPE_CHECKING:
    from ingest.pipeline import IngestPipeline

__all__ = ["Home", "HomeRecord", "home_lock", "open_home", "resolve_home"]


def home_lock(
    home: Path, *, timeout_s: float | None = None, on_wait: Callable[[str], None] | None = None
) -> HomeLock:
    """The lock one ingestion into the home folder `home` holds (`rag ingest`, `Home.lock`)."""
    return HomeLock(home / "ingest.lock", timeout_s=timeout_s, on_wait=on_wait)


@dataclass(frozen=True)
class HomeRecord:
    """A home's store resolved once: the settings with the store kind decided, and the store's record
    as `stores.json` holds it (None: the home holds no such store yet).

    A command resolves the home once (`resolve_home`) and opens the store from it (`Home.open`), so
    the records file is read once per command.
    """

    settings: Settings
    record: StoreRecord | None

    def names(self, settings: Settings) -> bool:
        """Whether `settings` name this record's store (same home, kind, collection and server)."""
        mine = self.settings
        return (settings.home, settings.store, settings.collection) == (
            mine.home,
            mine.store,
            mine.collection,
        ) and (settings.chroma_url, settings.database_url) == (mine.chroma_url, mine.database_url)


def resolve_home(settings: Settings) -> HomeRecord:
    """The settings' store kind decided and its record, from one read of the home's `stores.json`.

    Raises:
        ConfigError: the records cannot be read, the home holds the collection in several stores and
            none was chosen, or a pgvector store has no database URL.
    """
    records = load_records(settings)
    settings = resolve_store(settings, records)
    raw = records.get(store_key(settings))
    return HomeRecord(settings, record_from(raw) if isinstance(raw, dict) else None)


def open_home(
    path: str | os.PathLike[str] | None = None,
    *,
    store: str | None = None,
    collection: str | None = None,
    embedder: str | None = None,
    settings: Settings | None = None,
    create: bool = False,
) -> Home:
    """Open the store a home folder holds, as `rag ingest` recorded it.

    Args:
        path: the home folder (`~` is expanded); default `RAG_HOME`, else `./.rag`.
        store: `chroma`, `numpy` or `pgvector`; default `RAG_STORE`, else the kind the home holds the
            collection in (a new home: `chroma`).
        collection: default `RAG_COLLECTION`, else `rag`.
        embedder: an embedder spec (`hashing`, `st:MODEL`, `openai:MODEL`); default the recorded one.
            A different model than the one the store was built with is an error.
        settings: the other settings (Chroma or database URL, chunking, search); default from the
            environment (`Settings.from_env()`). The arguments above override them.
        create: make a new store (and record it) when the home has none for these settings.

    Raises:
        StoreNotFoundError: `create` is False and the home holds no such store (the message names the
            stores it does hold for the collection).
        ConfigError: the embedder differs from the recorded one, the home holds the collection in
            several stores and none was chosen, or a pgvector store has no database URL.
        StoreConnectionError: a Chroma server that does not answer.
    """
    base = settings if settings is not None else Settings.from_env()
    home = Path(path).expanduser() if path is not None else None
    changes = {"home": home, "store": store, "collection": collection, "embedder": embedder}
    return Home.open(base.replace(**changes), create=create)


class Home:
    """A home's store, opened lazily, with its record, its manifest and an ingest pipeline into it.

    Build one with `open_home`. `store` is a `VectorStore` (the real one opens on first use, so a numpy
    home never imports chromadb); `settings` are the settings in effect: the kind, the embedder spec,
    the chunking and the search mode and weight the home recorded, under any given explicitly.
    Writes through `pipeline()` are saved by the pipeline; after `store.add`/`delete` on a numpy home,
    call `save()`. Close the home (or use `with`) to release the store and the model's HTTP client.

    Example:
        >>> with open_home("~/.rag") as home:  # doctest: +SKIP
        ...     report = home.pipeline().run(["docs/"])
        ...     hits = home.store.similarity_search(home.search_request("error E-214", top_k=3))
    """

    def __init__(
        self,
        store: LazyStore,
        settings: Settings,
        record: StoreRecord,
        location: str,
        *,
        needs_save: bool,
    ) -> None:
        self.store = store
        self.settings = settings
        self.record = record
        self.location = location
        """Where the store is: a folder, a Chroma URL, or a masked database URL and table."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", store_key(settings))
        self.manifest_path = settings.home / "manifests" / f"{safe}.sqlite"
        self._needs_save = needs_save
        self._manifests: list[Manifest] = []

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        create: bool = False,
        wrap_model: Callable[[EmbeddingModel], EmbeddingModel] | None = None,
        resolved: HomeRecord | None = None,
    ) -> Home:
        """Open the store `settings` name (see `open_home`); `wrap_model` wraps its embedder for this
        opening (`rag eval` caches query vectors with it). `resolved` is the home as already resolved
        for these settings (`resolve_home`): its record is used instead of reading `stores.json` again.
        """
        if resolved is None or not resolved.names(settings):
            resolved = resolve_home(settings)
            settings = resolved.settings  # the given settings with the store kind decided
        if settings.store == "chroma" and settings.chroma_url:
            from stores.chroma.client import reach_server

            reach_server(settings.chroma_url)  # else a server that is down reads as "no collection"
        known = resolved.record
        if known is None and not create:
            raise not_found(settings)
        spec, model = _resolve_embedder(settings, known)
        record = _record(settings, spec, model, known, create=create)
        keyed = settings
        settings = resolve_search(
            settings.replace(embedder=spec, chunk_size=record.chunk_size, chunk_overlap=record.chunk_overlap),
            spec,
            record.search,
        )
        if wrap_model is not None:
            model = wrap_model(model)
        place = StorePlace.documents_of(settings)
        store = LazyStore(model, lambda: build_store(place, model))
        if create and record != known:
            if known is None:
                _ = store.real  # a new store exists before the home records it (a missing extra, a
                # server that does not answer: nothing recorded, the next command is not misled)
            save_record(keyed, record)
        return cls(store, settings, record, place.location, needs_save=place.needs_save)

    @property
    def path(self) -> Path:
        """The home folder."""
        return self.settings.home

    @property
    def kind(self) -> str:
        """The store kind: `chroma`, `numpy` or `pgvector`."""
        return str(self.settings.store)

    @property
    def collection(self) -> str:
        """The collection name."""
        return self.settings.collection

    @property
    def embedder(self) -> str:
        """The embedder spec the store was built with (`hashing`, `st:all-MiniLM-L6-v2`, ...)."""
        return self.record.embedder

    @property
    def embedding(self) -> EmbeddingModel:
        """The embedding model built from `embedder`."""
        return self.store.embedding

    @property
    def flush(self) -> Callable[[], None] | None:
        """What makes writes durable (numpy: save the folder), or None when every write already is."""
        return self.save if self._needs_save else None

    def save(self) -> None:
        """Make writes durable: saves a numpy store's folder if it was opened; nothing for the others."""
        if self._needs_save:
            self.store.call_if_opened("save")

    def search_request(self, query: str = "defaults", **changes: Any) -> SearchRequest:
        """A `SearchRequest` with the home's search settings; `changes` set `top_k`, `filter`, ...

        Without a query it is a template of defaults, as `QuestionAnswerAdvisor(store, search_request)`
        takes: the advisor searches with each request's user text."""
        return self.settings.search_request(query, **changes)

    def open_manifest(self) -> Manifest:
        """The ingestion manifest: a SQLite file in the home, or a table in the store's database."""
        if self.settings.store == "pgvector":
            from ingest.manifest_postgres import PostgresManifest

            url = database_url(self.settings)
            return PostgresManifest(url, table=pg_table_name(self.settings.collection))
        return Manifest(self.manifest_path)

    def pipeline(self, **options: Any) -> IngestPipeline:
        """An `IngestPipeline` into this store, with the recorded chunking and the home's manifest.

        `options` go to `IngestPipeline` (`reader_options`, `extra_metadata`, `on_progress`,
        `embed_context`, ...). Take `lock()` around a run when another process may ingest too.
        """
        from ingest.pipeline import IngestPipeline

        splitter = make_splitter(self.embedding, self.record.chunk_size, self.record.chunk_overlap)
        manifest = self.open_manifest()
        self._manifests.append(manifest)
        return IngestPipeline(self.store, splitter, manifest=manifest, flush=self.flush, **options)

    def lock(self, timeout_s: float | None = None) -> HomeLock:
        """The lock `rag ingest` holds while it writes this home (a context manager)."""
        return home_lock(self.path, timeout_s=timeout_s)

    def close(self) -> None:
        """Close the pipelines' manifests, the store if it was opened, then the model's HTTP client."""
        try:
            while self._manifests:
                self._manifests.pop().close()
            self.store.call_if_opened("close")
        finally:
            closer = getattr(self.store.embedding, "close", None)
            if callable(closer):
                closer()

    def __enter__(self) -> Home:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Home(path={str(self.path)!r}, kind={self.kind!r}, collection={self.collection!r}, "
            f"embedder={self.embedder!r}, location={self.location!r})"
        )


def _resolve_embedder(settings: Settings, known: StoreRecord | None) -> tuple[str, EmbeddingModel]:
    spec = settings.embedder or (known.embedder if known else DEFAULT_EMBEDDER)
    # The recorded width and input limit spare an OpenAI-compatible model the request that would learn
    # the one, and a local model its loading; a model of another name is refused below before it is used.
    model = build_embedder(
        spec,
        settings,
        known_dimensions=known.dimensions if known else None,
        known_max_tokens=known.max_tokens if known else None,
    )
    if known is not None and model.name != known.model:
        raise ConfigError(
            f"collection {settings.collection!r} was built with embedder {known.embedder!r} (model "
            f"{known.model!r}); {spec!r} gives model {model.name!r}. "
            "Use the same embedder or another --collection"
        )
    return spec, model


def _record(
    settings: Settings, spec: str, model: EmbeddingModel, known: StoreRecord | None, *, create: bool
) -> StoreRecord:
    """The store's record: the given chunking over the recorded one; search settings as recorded.

    The model's input limit is asked only by an opening that may record it (`create`): asking may load
    the model, and a home recorded before the limit was gets it on its next ingest.
    """
    size = settings.chunk_size if settings.chunk_size is not None else (known.chunk_size if known else None)
    overlap = (
        settings.chunk_overlap
        if settings.chunk_overlap is not None
        else (known.chunk_overlap if known else None)
    )
    # A new store records the weight that suits its embedder; an old home without one keeps none.
    search = known.search if known else SearchRecord(default_vector_weight(spec))
    limit = getattr(model, "max_tokens", None) if create else (known.max_tokens if known else None)
    return StoreRecord(spec, model.name, model.dimensions, size, overlap, search, limit)
