"""The shared conformance suite on ChromaVectorStore: in-process, embedded in a folder, and on a server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.embeddings import EmbeddingModel, HashingEmbedding
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore
from stores.chroma.client import close_client
from stores.testing.conformance import Reopen, VectorStoreConformance

MODEL = HashingEmbedding(dimensions=64)


class _ReopenFixture:
    """Opens the same collection again through the first store's client; closes what it opened."""

    def __init__(self) -> None:
        self.opened: list[ChromaVectorStore] = []

    def __call__(self, store: VectorStore, embedding: EmbeddingModel) -> VectorStore:
        assert isinstance(store, ChromaVectorStore)
        again = ChromaVectorStore(embedding, collection=store.collection_name, client=store.chroma_client)
        self.opened.append(again)
        return again

    def close(self) -> None:
        for store in self.opened:
            store.close()


class _ChromaConformance(VectorStoreConformance):
    @pytest.fixture
    def reopen(self) -> Iterator[Reopen]:
        fixture = _ReopenFixture()
        yield fixture
        fixture.close()


class TestEphemeralConformance(_ChromaConformance):
    @pytest.fixture
    def store(self, embedding: EmbeddingModel) -> Iterator[ChromaVectorStore]:
        with ChromaVectorStore(embedding, collection="conformance") as store:
            yield store


def _drop(store: ChromaVectorStore) -> None:
    """Delete the collection, its records first: chromadb 1.5.9 leaves a dropped collection's metadata
    rows behind, and records written later to another collection can inherit them."""
    ids = store.chroma_collection.get(include=[])["ids"]
    if ids:
        store.chroma_collection.delete(ids=ids)
    store.chroma_client.delete_collection(store.collection_name)


def _fresh_name() -> str:
    return f"conformance-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def chroma_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One embedded folder for the persistent suite; a store kept open spares re-opening SQLite per test."""
    folder = tmp_path_factory.mktemp("chroma-folder")
    with ChromaVectorStore(MODEL, collection="keeper", path=folder):
        yield folder


class TestPersistentConformance(VectorStoreConformance):
    @pytest.fixture
    def store(self, embedding: EmbeddingModel, chroma_folder: Path) -> Iterator[ChromaVectorStore]:
        with ChromaVectorStore(embedding, collection=_fresh_name(), path=chroma_folder) as store:
            yield store
            _drop(store)

    @pytest.fixture
    def reopen(self, chroma_folder: Path) -> Iterator[Reopen]:
        opened: list[ChromaVectorStore] = []

        def reopen(store: VectorStore, embedding: EmbeddingModel) -> VectorStore:
            assert isinstance(store, ChromaVectorStore)
            opened.append(ChromaVectorStore(embedding, collection=store.collection_name, path=chroma_folder))
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()


@pytest.fixture(scope="module")
def server_client(chroma_server: str) -> Iterator[Any]:
    """One HTTP client for the server suite (each store opening its own would cost a connection each)."""
    import chromadb
    from chromadb.config import Settings

    host, port = chroma_server.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
    yield client
    close_client(client)


@pytest.mark.server
class TestServerConformance(_ChromaConformance):
    @pytest.fixture
    def store(self, embedding: EmbeddingModel, server_client: Any) -> Iterator[ChromaVectorStore]:
        with ChromaVectorStore(embedding, collection=_fresh_name(), client=server_client) as store:
            yield store
            _drop(store)
