"""Opening Chroma clients (embedded, ephemeral, server) and collections; chromadb errors as `StoreError`s."""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rag.embeddings.base import EmbeddingModel
from rag.errors import (
    EmbeddingModelMismatchError,
    InvalidRequestError,
    RagError,
    StoreConnectionError,
    StoreError,
)

__all__ = ["Connection", "close_client", "connect", "open_collection", "parse_url", "reach_server"]

_MODEL = "rag:embedding_model"
_DIMENSIONS = "rag:dimensions"


@dataclass
class Connection:
    """A chromadb client, where it points, and how to release it."""

    client: Any
    location: str
    key: tuple[str, ...]
    """What identifies the client's data in this process."""
    url: str | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Re-raise chromadb's exceptions as `StoreError`s that name the location (ours pass through)."""
        try:
            yield
        except RagError:
            raise
        except Exception as exc:
            if self.url is not None and _is_connection_error(exc):
                raise StoreConnectionError(
                    f"cannot {action}: the Chroma server at {self.url!r} is closed or unreachable ({exc})",
                    url=self.url,
                ) from exc
            raise StoreError(f"cannot {action} in Chroma at {self.location}: {exc}") from exc

    def close(self) -> None:
        """Release the client (and an ephemeral store's data); safe to call twice."""
        while self.cleanups:
            self.cleanups.pop()()


def _is_connection_error(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, httpx.TransportError | ConnectionError | TimeoutError):
        return True
    # chromadb reports a failed first contact as a ValueError with this text.
    return "could not connect" in str(exc).lower()


def _settings() -> Any:
    from chromadb.config import Settings

    # Identical settings everywhere: chromadb shares one system per path (or one for all ephemeral
    # clients) and refuses a second client with different settings.
    return Settings(anonymized_telemetry=False)


def parse_url(url: str) -> tuple[str, int, bool]:
    """Host, port and TLS flag of a Chroma server URL such as `http://127.0.0.1:8000`."""
    parts = urlsplit(url)
    extra = parts.path not in ("", "/") or parts.query or parts.fragment
    if parts.scheme not in ("http", "https") or not parts.hostname or extra:
        raise InvalidRequestError(f"Chroma server URL must look like 'http://host:port', got {_shown(url)!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidRequestError(f"Chroma server URL has an invalid port: {_shown(url)!r}") from exc
    ssl = parts.scheme == "https"
    return parts.hostname, port or (443 if ssl else 8000), ssl


def _shown(url: str) -> str:
    """The URL without any user and password, fit to quote in an error."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def reach_server(url: str, timeout: float = 5.0) -> None:
    """Check that a Chroma server answers at `url` (its heartbeat), so that a server down or a mistyped
    URL is reported at once (`StoreConnectionError`), not later as a missing collection."""
    shown = _shown(url)
    try:
        parse_url(url)
    except InvalidRequestError as exc:
        raise StoreConnectionError(
            f"cannot reach the Chroma server at {shown!r}: not a valid server URL, expected "
            "'http://host:port' (check RAG_CHROMA_URL)",
            url=shown,
        ) from exc
    import httpx

    try:
        httpx.get(f"{url.rstrip('/')}/api/v2/heartbeat", timeout=timeout)
    except httpx.HTTPError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__  # one line, whatever the transport says
        raise StoreConnectionError(
            f"cannot reach the Chroma server at {shown!r} ({reason}); start it "
            "(`chroma run --path DIR --port N`) or fix RAG_CHROMA_URL",
            url=shown,
        ) from exc


def connect(path: str | Path | None, url: str | None, client: Any = None) -> Connection:
    """A client for a folder (`path`), a server (`url`), a chromadb `client`, or none: a private store."""
    given = [name for name, value in (("path", path), ("url", url), ("client", client)) if value is not None]
    if len(given) > 1:
        raise InvalidRequestError(f"give at most one of path, url and client, got {' and '.join(given)}")
    if client is not None:
        name = type(client).__name__
        return Connection(client, f"the given client {name}", ("chroma-client", str(id(client))))
    import chromadb

    if url is not None:
        host, port, ssl = parse_url(url)
        shown = _shown(url)
        conn = Connection(None, f"the server {shown!r}", ("chroma-url", url), url=shown)
        with conn.errors("connect"):
            conn.client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_settings())
        conn.cleanups.append(functools.partial(close_client, conn.client))
        return conn
    if path is None:
        return _ephemeral(chromadb)
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"Chroma store path {str(path)!r} is a file, not a folder")
    conn = Connection(None, f"the folder {str(path)!r}", ("chroma-path", os.path.realpath(path)))
    with conn.errors("open the store"):
        conn.client = chromadb.PersistentClient(path=str(folder), settings=_settings())
    conn.cleanups.append(conn.client.close)
    return conn


def close_client(client: Any) -> None:
    """Close a chromadb `HttpClient` and the httpx pools its `close()` leaves open (chromadb 1.5.9)."""
    for each in (client, getattr(client, "_admin_client", None)):
        session = getattr(getattr(each, "_server", None), "_session", None)
        if session is not None:
            session.close()
    client.close()


def _ephemeral(chromadb: Any) -> Connection:
    # All ephemeral clients of a process share one in-memory system; a database of its own keeps each
    # store's collections apart, and dropping it on close frees the memory.
    database = f"rag-{uuid.uuid4().hex}"
    conn = Connection(None, "an in-process (ephemeral) store", ("chroma-ephemeral", database))
    with conn.errors("create an in-process store"):
        admin = chromadb.AdminClient(_settings())
        admin.create_database(database)
        conn.client = client = chromadb.EphemeralClient(_settings(), database=database)
    conn.cleanups += [client.close, lambda: admin.delete_database(database), lambda: _purge(client)]
    return conn


def _purge(client: Any) -> None:
    """Delete every record of an in-process database before it is dropped: chromadb 1.5.9 leaves a
    dropped database's metadata rows behind for later records to inherit (test_chroma.py)."""
    batch = int(client.get_max_batch_size())
    for collection in client.list_collections():
        ids = collection.get(include=[])["ids"]
        for start in range(0, len(ids), batch):
            collection.delete(ids=ids[start : start + batch])


def open_collection(conn: Connection, name: str, embedding: EmbeddingModel, ef_search: int) -> Any:
    """Get or create the collection `name` for unit vectors of `embedding`; refuse another model's."""
    model = {_MODEL: embedding.name, _DIMENSIONS: int(embedding.dimensions)}
    # Inner product over unit vectors is cosine; Chroma's "cosine" space would alter stored vectors.
    config = {"hnsw": {"space": "ip", "ef_search": ef_search, "ef_construction": 200}}
    with conn.errors(f"open the collection {name!r}"):
        collection = conn.client.get_or_create_collection(
            name, embedding_function=None, metadata=model, configuration=config
        )
        recorded = dict(collection.metadata or {})
        if _MODEL not in recorded and collection.count() == 0:
            collection.modify(metadata={**recorded, **model})
            recorded.update(model)
    space = (collection.configuration_json.get("hnsw") or {}).get("space", recorded.get("hnsw:space"))
    if space not in (None, "ip", "cosine"):
        raise StoreError(
            f"collection {name!r} in {conn.location} uses {space!r} distance, not cosine or inner product"
        )
    if (recorded.get(_MODEL), recorded.get(_DIMENSIONS)) != (model[_MODEL], model[_DIMENSIONS]):
        raise EmbeddingModelMismatchError(
            f"collection {name!r} in {conn.location} holds vectors from the embedding "
            f"model {recorded.get(_MODEL)!r} ({recorded.get(_DIMENSIONS)!r} dimensions); it cannot be "
            f"used with {model[_MODEL]!r} ({model[_DIMENSIONS]} dimensions)"
        )
    return collection
