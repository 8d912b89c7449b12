"""The shared conformance suite on PgVectorStore, against a real PostgreSQL with pgvector."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rag.embeddings import EmbeddingModel
from rag.vectorstore import VectorStore
from stores import PgVectorStore
from stores.testing.conformance import Reopen, VectorStoreConformance


class TestPgVectorConformance(VectorStoreConformance):
    @pytest.fixture
    def store(
        self, embedding: EmbeddingModel, postgres_server_url: str, fresh_name: Callable[[str], str]
    ) -> Iterator[PgVectorStore]:
        with PgVectorStore(embedding, url=postgres_server_url, table=fresh_name("conformance")) as store:
            yield store

    @pytest.fixture
    def reopen(self, postgres_server_url: str) -> Iterator[Reopen]:
        opened: list[PgVectorStore] = []

        def reopen(store: VectorStore, embedding: EmbeddingModel) -> VectorStore:
            assert isinstance(store, PgVectorStore)
            schema, table = store.table.split(".")
            opened.append(PgVectorStore(embedding, url=postgres_server_url, table=table, schema=schema))
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()
