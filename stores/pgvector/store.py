"""`PgVectorStore`: the `VectorStore` protocol on PostgreSQL with pgvector, shared by many processes.

Tables and locking are described in `stores.pgvector.schema`, filters in `stores.pgvector.filters`,
search in `stores.pgvector.search`. Each `add` and `delete` is one transaction that first locks the
store's info row, so writers from any number of processes and machines run one after another and
each commits entirely or not at all (a killed writer leaves the previous state); readers run in one
REPEATABLE READ snapshot each and never wait for writers nor see half a batch. psycopg and pgvector are
imported when the first store is constructed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

import stores.pgvector.schema as tables
from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import Capabilities
from stores.lexical.index import DEFAULT_B, DEFAULT_K1
from stores.lexical.text import TOKENIZER
from stores.numpy.embed import document_vectors, embed_queries
from stores.pgvector.connection import Database
from stores.pgvector.encoding import check_text
from stores.pgvector.filters import compile_filter
from stores.pgvector.search import PgCandidates, SearchSettings, vector_array
from stores.pgvector.writes import delete_rows, rebuild_lexical, write_rows
from stores.query_vector import request_vector
from stores.ranking import rank_scored

__all__ = ["PgVectorStore"]

_EMBED_BATCH = 256


class PgVectorStore(GetMixin):
    """Documents in PostgreSQL (pgvector), searched by cosine exactly like the numpy store.

    `url` is any libpq URL or keyword string; the tables (`table`, `table_lexical`, `table_terms`,
    `table_info` in `schema`) are created on first use, and the pgvector extension too when the user
    may create it. Search is exact by default (a sequential scan ordered by inner product, re-scored
    like the numpy store); `approximate=True` reads vector candidates through the HNSW index with
    `ef_search` instead (faster on large tables, may miss a neighbour). Safe to share between threads
    and between processes. Call `close()` (or use `with`) to release the connections.

    Example:
        >>> from rag import Document, HashingEmbedding, SearchRequest
        >>> store = PgVectorStore(HashingEmbedding(), url="postgresql://app@localhost/rag")  # doctest: +SKIP
        >>> store.add([Document("a", "pgvector keeps vectors", {"lang": "en"})])  # doctest: +SKIP
        >>> request = SearchRequest("vectors", filter="lang == 'en'")
        >>> [d.id for d in store.similarity_search(request)]  # doctest: +SKIP
        ['a']

    Args:
        embedding: Embeds documents that arrive without an embedding, and queries.
        url: The database.
        table: The documents table's name (letters, digits, `_`).
        schema: The schema holding the tables (created if missing).
        approximate: Vector candidates from the HNSW index instead of an exact scan.
        ef_search: HNSW's search width when `approximate`.
        hnsw: Whether to create the HNSW index when creating the table (see `create_hnsw_index` for
            bulk loads).
    """

    kind = "pgvector"
    """The store's name in the CLI (`--store pgvector`), in a home's records and in traces."""
    capabilities = Capabilities(exact=True, lexical=True)

    def __init__(
        self,
        embedding: EmbeddingModel,
        *,
        url: str,
        table: str = "rag_documents",
        schema: str = "public",
        approximate: bool = False,
        ef_search: int = 100,
        hnsw: bool = True,
    ) -> None:
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= 1000:
            raise InvalidRequestError(f"ef_search must be an integer within [1, 1000], got {ef_search!r}")
        self._embedding = embedding
        self._names = schema_names = schema_module_names(schema, table)
        self._settings = SearchSettings(bool(approximate), ef_search)
        self._db = Database(url)
        wanted = schema_info(embedding)
        try:
            where = f"{schema_names.schema}.{schema_names.table}"
            with self._db.errors(f"open the table {where}"), self._db.transaction() as conn:
                self._info = tables.create(conn, schema_names, wanted, hnsw=hnsw)
                if self._info.tokenizer != TOKENIZER:
                    # Terms written by another text analysis cannot match this one's queries.
                    self._locked_info(conn)
                    rebuild_lexical(conn, schema_names, TOKENIZER)
        except BaseException:
            self._db.close()
            raise

    @property
    def embedding(self) -> EmbeddingModel:
        """The model that embeds documents and queries for this store."""
        return self._embedding

    @property
    def table(self) -> str:
        """The documents table, schema-qualified."""
        return f"{self._names.schema}.{self._names.table}"

    @property
    def url(self) -> str:
        """The database URL with its password masked."""
        return self._db.masked_url

    @property
    def approximate(self) -> bool:
        """Whether vector candidates come from the HNSW index."""
        return self._settings.approximate

    def create_hnsw_index(self, *, memory: str = "256MB") -> None:
        """Build the HNSW index now, if it does not exist (with `memory` of `maintenance_work_mem`).

        Keeping the index up to date slows writes many times over; for a bulk load, open the store with
        `hnsw=False`, add everything, then call this once (pgvector builds it in parallel, in memory).
        """
        if self._embedding.dimensions > tables.MAX_INDEXED_DIMENSIONS:
            raise InvalidRequestError(
                f"pgvector indexes vectors of at most {tables.MAX_INDEXED_DIMENSIONS} dimensions; "
                f"this store's have {self._embedding.dimensions}"
            )
        with self._db.errors(f"index {self.table}"), self._db.transaction() as conn:
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (memory,))
            conn.execute(tables.hnsw_index(self._names))

    def close(self) -> None:
        """Close the store's connections (it reconnects if used again)."""
        self._db.close()
        self._db.reopen()

    def __enter__(self) -> PgVectorStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PgVectorStore(table={self.table!r}, url={self.url!r}, model={self._embedding.name!r})"

    # -- writing --------------------------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins); a bad batch writes nothing."""
        if isinstance(documents, Document | str):
            raise InvalidRequestError(f"add() takes an iterable of Documents, got {documents!r}")
        latest: dict[str, Document] = {}
        for document in documents:
            if not isinstance(document, Document):
                raise InvalidRequestError(f"add() takes Document objects, got {document!r}")
            check_text(document.id, document.text, document.metadata)
            latest[document.id] = document
        if not latest:
            return
        batch = list(latest.values())
        vectors = document_vectors(batch, self._embedding, _EMBED_BATCH)
        with self._db.errors(f"write documents to {self.table}"), self._db.transaction() as conn:
            self._locked_info(conn)
            write_rows(conn, self._names, batch, vectors)

    def _locked_info(self, conn: Any) -> tables.StoreInfo:
        info = tables.read_info(conn, self._names, lock=True)
        if info is None:
            raise InvalidRequestError(f"the table {self.table} was dropped while this store was open")
        tables.check_model(info, schema_info(self._embedding), self._names)
        return info

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids (unknown ones ignored) or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes either ids or filter=..., not both and not neither")
        condition = compile_filter(as_filter(filter)) if filter is not None else None
        unique = unique_ids(ids) if ids is not None else None
        if unique == []:
            return 0
        with self._db.errors(f"delete documents from {self.table}"), self._db.transaction() as conn:
            self._locked_info(conn)
            return delete_rows(conn, self._names, unique, condition)

    # -- reading --------------------------------------------------------------------------------------

    def _get_documents(self, request: GetRequest) -> list[Document]:
        from psycopg import sql

        condition = compile_filter(request.filter)
        wanted, limit, include_embeddings = request.ids, request.limit, request.include_embeddings
        if wanted == [] or limit == 0:
            return []
        where, params = [condition.text], list(condition.params)
        if wanted is not None:
            where.append("id = ANY(%s)")
            params.append(wanted)
        columns = "id, text, metadata" + (", embedding" if include_embeddings else "")
        tail = " ORDER BY id" + (" LIMIT %s" if wanted is None and limit is not None else "")
        if wanted is None and limit is not None:
            params.append(limit)
        statement = sql.SQL("SELECT " + columns + " FROM {} WHERE {}" + tail).format(
            self._names.documents, sql.SQL(" AND ".join(where))
        )
        with self._db.errors(f"read from {self.table}"), self._db.transaction(read_only=True) as conn:
            rows = conn.execute(statement, params, binary=True).fetchall()
        documents = {row[0]: _document(row, include_embeddings) for row in rows}
        if wanted is None:
            return list(documents.values())
        return [documents[i] for i in wanted if i in documents][:limit]

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        from psycopg import sql

        condition = compile_filter(as_filter(filter))
        with self._db.errors(f"count {self.table}"), self._db.transaction(read_only=True) as conn:
            if condition.always:
                info = tables.read_info(conn, self._names)
                return 0 if info is None else int(info.documents)
            statement = sql.SQL("SELECT count(*) FROM {} WHERE {}").format(
                self._names.documents, sql.SQL(condition.text)
            )
            return int(conn.execute(statement, condition.params).fetchone()[0])

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set (exact, ties by id)."""
        req = request if isinstance(request, SearchRequest) else SearchRequest(request)
        if not isinstance(req, SearchRequest):
            raise InvalidRequestError(f"expected a SearchRequest or a query string, got {request!r}")
        condition = compile_filter(req.filter)
        if req.top_k == 0 or condition.text == "FALSE":
            return []
        # None for a lexical search without a threshold: nothing to embed.
        query = request_vector(req, self._embedding, lambda text: embed_queries(self._embedding, [text])[0])
        with self._db.errors(f"search {self.table}"), self._db.transaction(read_only=True) as conn:

            def info() -> tables.StoreInfo:
                found = tables.read_info(conn, self._names)
                if found is None:
                    raise InvalidRequestError(f"the table {self.table} was dropped while this store was open")
                return found

            source = PgCandidates(conn, self._names, condition, query, req.query, info, self._settings)
            ranked = rank_scored(req, source)
            rows = source.rows([hit.id for hit in ranked])
        return [
            Document(row.id, row.text, row.metadata, score=hit.score, scores=hit.scores)
            for row, hit in zip(rows, ranked, strict=True)
        ]


def schema_module_names(schema_name: str, table: str) -> tables.TableNames:
    """Checked table names."""
    return tables.TableNames(tables.check_name("schema", schema_name), tables.check_name("table", table))


def schema_info(embedding: EmbeddingModel) -> tables.StoreInfo:
    """The info row a new store records for `embedding`."""
    return tables.StoreInfo(
        str(embedding.name), int(embedding.dimensions), TOKENIZER, DEFAULT_K1, DEFAULT_B, 0, 0
    )


def _document(row: tuple[Any, ...], with_embedding: bool) -> Document:
    embedding: npt.NDArray[np.float32] | None = vector_array(row[3]) if with_embedding else None
    return Document(row[0], row[1], row[2], embedding=embedding)
