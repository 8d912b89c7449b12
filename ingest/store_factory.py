"""One way to open a store by kind: where it lives (`StorePlace`) and the store itself (`build_store`).

A home's documents store and `rag chat`'s long-term memory store are both built here, so a kind's
constructor arguments are written once: a numpy store is the folder `ROOT/numpy/COLLECTION`, an
embedded Chroma store the collection `COLLECTION` of the client folder `ROOT/chroma` (or of a Chroma
server), a pgvector store the table `pg_table_name(COLLECTION)` of a PostgreSQL database. Opening a
place imports the backend (chromadb, psycopg) only then.

Example:
    >>> from pathlib import Path
    >>> place = StorePlace("numpy", Path("home"), "docs")
    >>> place.location, place.needs_save
    ('home/numpy/docs', True)
    >>> StorePlace("pgvector", Path("home"), "docs", url="postgresql://app:pw@db/rag").location
    'postgresql://app:***@db/rag table docs'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ingest.records import database_url, pg_table_name
from rag.config import STORE_KINDS, Settings
from rag.database_url import mask_url
from rag.embeddings import EmbeddingModel
from rag.errors import ConfigError
from rag.vectorstore import VectorStore

__all__ = ["StorePlace", "build_store"]


@dataclass(frozen=True)
class StorePlace:
    """Where a store lives: its kind, the folder local stores go under, its collection and server.

    `url` is a Chroma server's URL (`chroma`; None: the embedded folder) or the PostgreSQL URL
    (`pgvector`, required). `documents_of` gives the place of a home's documents store.
    """

    kind: str
    root: Path
    collection: str
    url: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in STORE_KINDS:
            raise ConfigError(f"unknown store kind {self.kind!r}; use {', '.join(map(repr, STORE_KINDS))}")
        if self.kind == "pgvector" and not self.url:
            raise ConfigError(
                "--store pgvector needs a database: set RAG_DATABASE_URL or pass --database-url"
            )

    @classmethod
    def documents_of(cls, settings: Settings) -> StorePlace:
        """The place of the documents store the settings name (their store kind decided).

        Raises:
            ConfigError: a pgvector store without a database URL.
        """
        kind = str(settings.store)
        if kind == "pgvector":
            return cls(kind, settings.home, settings.collection, database_url(settings))
        return cls(
            kind, settings.home, settings.collection, settings.chroma_url if kind == "chroma" else None
        )

    @property
    def location(self) -> str:
        """A folder, a Chroma URL, or a masked database URL and table (never a password)."""
        if self.kind == "numpy":
            return str(self.root / "numpy" / self.collection)
        if self.kind == "pgvector":
            return f"{mask_url(str(self.url))} table {pg_table_name(self.collection)}"
        return self.url or str(self.root / "chroma")

    @property
    def needs_save(self) -> bool:
        """Whether writes become durable only when the store is saved (the numpy folder)."""
        return self.kind == "numpy"


def build_store(place: StorePlace, embedding: EmbeddingModel) -> VectorStore:
    """The store at `place`, embedding with `embedding` (a numpy store loads what was saved there)."""
    if place.kind == "numpy":
        from stores import NumpyVectorStore

        return NumpyVectorStore(embedding, path=place.root / "numpy" / place.collection)
    if place.kind == "pgvector":
        from stores import PgVectorStore

        return PgVectorStore(embedding, url=str(place.url), table=pg_table_name(place.collection))
    from stores import ChromaVectorStore

    if place.url:
        return ChromaVectorStore(embedding, collection=place.collection, url=place.url)
    return ChromaVectorStore(embedding, collection=place.collection, path=str(place.root / "chroma"))
