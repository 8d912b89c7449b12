"""`PgVectorStore`: the `VectorStore` protocol on PostgreSQL with pgvector, shared by many processes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter
from rag.retrieval.ranking import rank_scored
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import Capabilities
from stores.lexical.index import DEFAULT_B, DEFAULT_K1
from stores.lexical.text import TOKENIZER
from stores.numpy.embed import document_vectors, embed_queries
from stores.pgvector.connection import Database
from stores.pgvector.filters import Condition, compile_filter
from stores.pgvector.search import PgCandidates
from stores.pgvector.tables import (
    HNSW_INDEX,
    MAX_INDEXED_DIMENSIONS,
    StoreInfo,
    Tables,
    check_text,
    delete_rows,
    rebuild_lexical,
    write_rows,
)
from stores.query_vector import request_vector

__all__ = ["PgVectorStore"]

_EMBED_BATCH = 256


class PgVectorStore(GetMixin):
    """Documents in PostgreSQL (pgvector), searched by cosine exactly like the numpy store.

    The tables (`table`, `table_lexical`, `table_terms`, `table_info` in `schema`) and the pgvector
    extension (when the user may create it) are created on first use. `close()` (or `with`) releases
    the connections. Safe to share between threads, processes and machines: each `add` and `delete` is
    one transaction that first locks the store's info row, so writers run one after another and each
    commits entirely or not at all; each read runs in one REPEATABLE READ snapshot, never waits for
    writers and never sees half a batch.

    Example:
        >>> from rag import Document, HashingEmbedding, SearchRequest
        >>> store = PgVectorStore(HashingEmbedding(), url="postgresql://app@localhost/rag")  # doctest: +SKIP
        >>> store.add([Document("a", "pgvector keeps vectors", {"lang": "en"})])  # doctest: +SKIP
        >>> request = SearchRequest("vectors", filter="lang == 'en'")
        >>> [d.id for d in store.similarity_search(request)]  # doctest: +SKIP
        ['a']

    Args:
        embedding: Embeds documents that arrive without an embedding, and queries.
        url: A libpq URL (`postgresql://user:password@host:5432/db`) or keyword string.
        table: The documents table's name (letters, digits, `_`).
        schema: The schema holding the tables (created if missing).
        approximate: Vector candidates from the HNSW index (faster on large tables, may miss a
            neighbour) instead of an exact scan by inner product.
        ef_search: HNSW's search width when `approximate`.
        hnsw: Whether a new table gets the HNSW index (see `create_hnsw_index` for bulk loads).
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
        self._tables = Tables(schema, table)
        self._ef_search = ef_search if approximate else None
        self._db = Database(url)
        try:
            with self._transaction(f"open the table {self.table}") as conn:
                info = self._tables.create(conn, self._wanted(), hnsw=hnsw)
                if info.tokenizer != TOKENIZER:  # terms of another analysis cannot match this one's queries
                    self._tables.read_info(conn, lock=True)
                    rebuild_lexical(conn, self._tables, TOKENIZER)
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
        return self._tables.name

    @property
    def url(self) -> str:
        """The database URL with its password masked."""
        return self._db.masked_url

    @property
    def approximate(self) -> bool:
        """Whether vector candidates come from the HNSW index."""
        return self._ef_search is not None

    def create_hnsw_index(self) -> None:
        """Build the HNSW index now, if it does not exist: for a bulk load, open the store with
        `hnsw=False`, add everything, then call this once (keeping the index up to date slows writes)."""
        if self._embedding.dimensions > MAX_INDEXED_DIMENSIONS:
            raise InvalidRequestError(
                f"pgvector indexes vectors of at most {MAX_INDEXED_DIMENSIONS} dimensions; "
                f"this store's have {self._embedding.dimensions}"
            )
        with self._transaction(f"index {self.table}") as conn:
            conn.execute("SELECT set_config('maintenance_work_mem', '256MB', true)")
            conn.execute(self._tables.sql(HNSW_INDEX))

    def close(self) -> None:
        """Close the store's connections (it reconnects if used again)."""
        self._db.close()

    def __enter__(self) -> PgVectorStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PgVectorStore(table={self.table!r}, url={self.url!r}, model={self._embedding.name!r})"

    def _wanted(self) -> StoreInfo:
        model = self._embedding
        return StoreInfo(str(model.name), int(model.dimensions), TOKENIZER, DEFAULT_K1, DEFAULT_B)

    @contextmanager
    def _transaction(self, action: str, *, lock: bool = False, read_only: bool = False) -> Iterator[Any]:
        """A transaction whose errors name `action`; `lock` takes the info row's lock (every write does)."""
        with self._db.transaction(action, read_only=read_only) as conn:
            if lock:
                self._tables.check_model(self._tables.read_info(conn, lock=True), self._wanted())
            yield conn

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins); a bad batch writes nothing."""
        if isinstance(documents, Document | str):
            raise InvalidRequestError(f"add() takes an iterable of Documents, got {documents!r}")
        latest: dict[str, Document] = {}
        for document in documents:
            if not isinstance(document, Document):
                raise InvalidRequestError(f"add() takes Document objects, got {document!r}")
            check_text(document)
            latest[document.id] = document
        if latest:
            batch = list(latest.values())
            vectors = document_vectors(batch, self._embedding, _EMBED_BATCH)
            with self._transaction(f"write documents to {self.table}", lock=True) as conn:
                write_rows(conn, self._tables, batch, vectors)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids (unknown ones ignored) or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes either ids or filter=..., not both and not neither")
        if ids is None:
            condition = compile_filter(as_filter(filter))
        elif not (unique := unique_ids(ids)):
            return 0
        else:
            condition = Condition("id = ANY(%s)", [unique])
        with self._transaction(f"delete documents from {self.table}", lock=True) as conn:
            return delete_rows(conn, self._tables, condition)

    def _get_documents(self, request: GetRequest) -> list[Document]:
        condition = compile_filter(request.filter)
        wanted, limit, with_vectors = request.ids, request.limit, request.include_embeddings
        if wanted == [] or limit == 0:
            return []
        where, params = condition.text, list(condition.params)
        if wanted is not None:  # the limit applies in the order of `wanted`, below
            where, params = f"{where} AND id = ANY(%s)", [*params, wanted]
        columns = "id, text, metadata" + (", embedding" if with_vectors else "")
        text = f"SELECT {columns} FROM {{docs}} WHERE {{where}} ORDER BY id LIMIT %s"  # LIMIT NULL: all
        with self._transaction(f"read from {self.table}", read_only=True) as conn:
            limited = [*params, limit if wanted is None else None]
            rows = conn.execute(self._tables.sql(text, where=where), limited, binary=True).fetchall()
        found = {
            row[0]: Document(row[0], row[1], row[2], embedding=row[3].to_numpy() if with_vectors else None)
            for row in rows
        }
        return list(found.values()) if wanted is None else [found[i] for i in wanted if i in found][:limit]

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        condition = compile_filter(as_filter(filter))
        with self._transaction(f"count {self.table}", read_only=True) as conn:
            if condition.text == "TRUE":
                return int(self._tables.read_info(conn).documents)
            statement = self._tables.sql("SELECT count(*) FROM {docs} WHERE {where}", where=condition.text)
            return int(conn.execute(statement, condition.params).fetchone()[0])

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set (exact, ties by id)."""
        req = request if isinstance(request, SearchRequest) else SearchRequest(request)
        condition = compile_filter(req.filter)
        if req.top_k == 0 or condition.text == "FALSE":
            return []
        query = request_vector(req, self._embedding, lambda text: embed_queries(self._embedding, [text])[0])
        with self._transaction(f"search {self.table}", read_only=True) as conn:
            source = PgCandidates(conn, self._tables, condition, query, req.query, self._ef_search)
            ranked = rank_scored(req, source)
            rows = source.rows([hit.id for hit in ranked])
        return [
            Document(row.id, row.text, row.metadata, score=hit.score, scores=hit.scores)
            for row, hit in zip(rows, ranked, strict=True)
        ]
