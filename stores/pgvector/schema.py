"""The tables of one pgvector store, created on first use, and the record of its embedding model.

For a store named `docs` in schema `public`:

- `docs`: `id` (text in the "C" collation, so ids sort by code point), `text`, `metadata` (JSONB, see
  `stores.pgvector.encoding`) and `embedding` (`vector(d)`), with an HNSW index (`vector_cosine_ops`)
  when `d` <= 2000 (pgvector's limit for indexed vectors), and a GIN index on `metadata` that serves the
  containment tests filters compile to (`==`, `IN`, `CONTAINS`).
- `docs_lexical`: each document's BM25 terms (`terms`, `tfs`, `length`), GIN-indexed on `terms`.
- `docs_terms`: the document frequency of every term held by a document.
- `docs_info`: one row: the embedding model's name and dimensions, the tokenizer, BM25's k1 and b, and
  the collection statistics (document count, total length). Every write locks this row first, so writes
  to one store run one after another, and each commits its rows, postings, frequencies and statistics
  together or not at all.

The pgvector extension is created when a connection finds it missing (`stores.pgvector.connection`).
Creating the tables runs under an advisory lock, so processes opening a new store at once do not race.

Example:
    >>> names = TableNames("public", "docs")
    >>> names.lexical.as_string()  # doctest: +SKIP
    '"public"."docs_lexical"'
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from rag.errors import EmbeddingModelMismatchError, InvalidRequestError

__all__ = [
    "MAX_INDEXED_DIMENSIONS",
    "StoreInfo",
    "TableNames",
    "check_model",
    "check_name",
    "create",
    "hnsw_index",
    "read_info",
]

MAX_INDEXED_DIMENSIONS = 2000
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")


def check_name(kind: str, name: object) -> str:
    """A table or schema name: a letter or `_`, then letters, digits or `_`, at most 48 characters."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidRequestError(
            f"{kind} name must be a letter or '_' followed by up to 47 letters, digits or '_', got {name!r}"
        )
    return name


@dataclass(frozen=True)
class TableNames:
    """The qualified identifiers of one store's tables (psycopg.sql objects, never pasted text)."""

    schema: str
    table: str

    def _identifier(self, suffix: str) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema, self.table + suffix)

    @property
    def documents(self) -> Any:
        return self._identifier("")

    @property
    def lexical(self) -> Any:
        return self._identifier("_lexical")

    @property
    def terms(self) -> Any:
        return self._identifier("_terms")

    @property
    def info(self) -> Any:
        return self._identifier("_info")

    @property
    def lock_key(self) -> int:
        """A stable 32-bit key for advisory locks on this store."""
        return zlib.crc32(f"rag-pgvector:{self.schema}.{self.table}".encode())


@dataclass(frozen=True)
class StoreInfo:
    """The `_info` row: the model, the analysis and the collection statistics."""

    model: str
    dimensions: int
    tokenizer: str
    k1: float
    b: float
    documents: int
    total_length: int


def read_info(conn: Any, names: TableNames, *, lock: bool = False) -> StoreInfo | None:
    """The info row (locked for the transaction when `lock`), or None when the store has none yet."""
    from psycopg import sql

    query = sql.SQL(
        "SELECT model, dimensions, tokenizer, k1, b, documents, total_length FROM {} WHERE singleton"
        + (" FOR UPDATE" if lock else "")
    ).format(names.info)
    row = conn.execute(query).fetchone()
    return None if row is None else StoreInfo(*row)


def _ddl(names: TableNames, dimensions: int, hnsw: bool) -> list[Any]:
    from psycopg import sql

    docs = names.documents
    statements = [
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(names.schema)),
        sql.SQL(
            'CREATE TABLE IF NOT EXISTS {} (id text COLLATE "C" PRIMARY KEY, text text NOT NULL, '
            "metadata jsonb NOT NULL, embedding vector({}) NOT NULL)"
        ).format(docs, sql.Literal(dimensions)),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (metadata jsonb_path_ops)").format(
            sql.Identifier(names.table + "_metadata"), docs
        ),
        sql.SQL(
            'CREATE TABLE IF NOT EXISTS {} (id text COLLATE "C" PRIMARY KEY, length integer NOT NULL, '
            "terms text[] NOT NULL, tfs integer[] NOT NULL)"
        ).format(names.lexical),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (terms)").format(
            sql.Identifier(names.table + "_lexical_terms"), names.lexical
        ),
        sql.SQL(
            'CREATE TABLE IF NOT EXISTS {} (term text COLLATE "C" PRIMARY KEY, df integer NOT NULL)'
        ).format(names.terms),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (singleton boolean PRIMARY KEY DEFAULT TRUE CHECK (singleton), "
            "model text NOT NULL, dimensions integer NOT NULL, tokenizer text NOT NULL, "
            "k1 double precision NOT NULL, b double precision NOT NULL, "
            "documents bigint NOT NULL DEFAULT 0, total_length bigint NOT NULL DEFAULT 0)"
        ).format(names.info),
    ]
    if hnsw and dimensions <= MAX_INDEXED_DIMENSIONS:
        statements.append(hnsw_index(names))
    return statements


def hnsw_index(names: TableNames) -> Any:
    """The statement creating the HNSW index (cosine) on the embeddings, if it does not exist."""
    from psycopg import sql

    return sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)").format(
        sql.Identifier(names.table + "_hnsw"), names.documents
    )


def create(conn: Any, names: TableNames, info: StoreInfo, *, hnsw: bool) -> StoreInfo:
    """Create the store's tables if needed (inside the caller's transaction); returns the info row.

    Raises:
        EmbeddingModelMismatchError: the store records another model or dimension.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (names.lock_key,))
    # An existing store is only read: DDL on its tables (even `CREATE INDEX IF NOT EXISTS`) would take
    # table locks that deadlock with writers holding the info row.
    if conn.execute("SELECT to_regclass(%s)", (names.info.as_string(conn),)).fetchone()[0] is not None:
        recorded = read_info(conn, names)
        if recorded is not None:
            check_model(recorded, info, names)
            return recorded
    for statement in _ddl(names, info.dimensions, hnsw):
        conn.execute(statement)
    from psycopg import sql

    conn.execute(
        sql.SQL(
            "INSERT INTO {} (model, dimensions, tokenizer, k1, b) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (singleton) DO NOTHING"
        ).format(names.info),
        (info.model, info.dimensions, info.tokenizer, info.k1, info.b),
    )
    recorded = read_info(conn, names)
    assert recorded is not None
    check_model(recorded, info, names)
    return recorded


def check_model(recorded: StoreInfo, wanted: StoreInfo, names: TableNames) -> None:
    """Refuse another embedding model than the one the store's vectors came from."""
    if (recorded.model, recorded.dimensions) != (wanted.model, wanted.dimensions):
        raise EmbeddingModelMismatchError(
            f"the table {names.schema}.{names.table} holds vectors of model {recorded.model!r} "
            f"({recorded.dimensions} dimensions); it cannot be used with model {wanted.model!r} "
            f"({wanted.dimensions} dimensions)"
        )
