"""The tables of one pgvector store, and the writes that keep its rows and BM25 statistics together.

A store named `docs` has `docs` (ids in the "C" collation sort by code point; an HNSW index when its
vectors have at most 2000 dimensions), `docs_lexical` (each document's BM25 terms), `docs_terms`
(document frequencies) and `docs_info` (one row: the embedding model, the analysis, the statistics).

Every write first locks the info row (`read_info(lock=True)`), so writes from any process run one after
another, and each commits its rows, postings, frequencies and statistics together or not at all: the
statistics always describe the live documents, as `stores.lexical.LexicalIndex` keeps them in memory.
Creating the tables runs under an advisory lock, so processes opening a new store at once do not race.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.errors import EmbeddingModelMismatchError, InvalidRequestError
from stores.lexical.fields import encode_documents
from stores.lexical.text import Vocabulary
from stores.pgvector.filters import Condition, first_unstorable, json_value

__all__ = ["MAX_INDEXED_DIMENSIONS", "StoreInfo", "Tables", "check_text", "delete_rows", "write_rows"]

MAX_INDEXED_DIMENSIONS = 2000
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {docs} (id text COLLATE "C" PRIMARY KEY, text text NOT NULL,
    metadata jsonb NOT NULL, embedding vector({dimensions}) NOT NULL);
CREATE INDEX IF NOT EXISTS {metadata_index} ON {docs} USING gin (metadata jsonb_path_ops);
CREATE TABLE IF NOT EXISTS {lexical} (id text COLLATE "C" PRIMARY KEY, length integer NOT NULL,
    terms text[] NOT NULL, tfs integer[] NOT NULL);
CREATE INDEX IF NOT EXISTS {terms_index} ON {lexical} USING gin (terms);
CREATE TABLE IF NOT EXISTS {terms} (term text COLLATE "C" PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {info} (singleton boolean PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    model text NOT NULL, dimensions integer NOT NULL, tokenizer text NOT NULL, k1 double precision NOT NULL,
    b double precision NOT NULL, documents bigint NOT NULL DEFAULT 0, total_length bigint NOT NULL DEFAULT 0)
"""
HNSW_INDEX = "CREATE INDEX IF NOT EXISTS {hnsw_index} ON {docs} USING hnsw (embedding vector_cosine_ops)"


class StoreInfo(NamedTuple):
    """The info row: the model, the text analysis and the collection statistics."""

    model: str
    dimensions: int
    tokenizer: str
    k1: float
    b: float
    documents: int = 0
    total_length: int = 0


@dataclass(frozen=True)
class Tables:
    """One store's checked schema and table names, and its statements built with `psycopg.sql`.

    Example:
        >>> Tables("public", "docs").name
        'public.docs'
    """

    schema: str
    table: str

    def __post_init__(self) -> None:
        for kind, name in (("schema", self.schema), ("table", self.table)):
            if not isinstance(name, str) or not _NAME.match(name):
                raise InvalidRequestError(
                    f"{kind} name must be a letter or '_' followed by up to 47 letters, digits or '_', "
                    f"got {name!r}"
                )

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    def sql(self, text: str, **fragments: str) -> Any:
        """`text` with its tables ({docs}, {lexical}, {terms}, {info}, indexes) as identifiers and
        `fragments` (SQL this package wrote, never a value) filled in."""
        from psycopg import sql

        t = self.table
        names = {
            "schema": sql.Identifier(self.schema),
            **{part: sql.Identifier(self.schema, t + suffix) for part, suffix in _TABLES.items()},
            **{index: sql.Identifier(t + suffix) for index, suffix in _INDEXES.items()},
        }
        return sql.SQL(text).format(**names, **{k: sql.SQL(v) for k, v in fragments.items()})

    def read_info(self, conn: Any, *, lock: bool = False) -> StoreInfo:
        """The info row, locked for the transaction when `lock` (every write takes that lock first)."""
        columns = "model, dimensions, tokenizer, k1, b, documents, total_length"
        tail = " FOR UPDATE" if lock else ""
        row = conn.execute(self.sql(f"SELECT {columns} FROM {{info}} WHERE singleton{tail}")).fetchone()
        if row is None:
            raise InvalidRequestError(f"the table {self.name} was dropped while this store was open")
        return StoreInfo(*row)

    def create(self, conn: Any, wanted: StoreInfo, *, hnsw: bool) -> StoreInfo:
        """Create the tables if needed (in the caller's transaction); returns the info row.

        Raises:
            EmbeddingModelMismatchError: the store records another model or dimension.
        """
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (zlib.crc32(f"rag-pgvector:{self.name}".encode()),))
        # An existing store is only read: DDL on its tables (even `CREATE INDEX IF NOT EXISTS`) takes
        # table locks that would deadlock with writers holding the info row.
        exists = "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s"
        if conn.execute(exists, (self.schema, self.table + "_info")).fetchone() is None:
            conn.execute(self.sql(_DDL, dimensions=str(int(wanted.dimensions))))
            if hnsw and wanted.dimensions <= MAX_INDEXED_DIMENSIONS:
                conn.execute(self.sql(HNSW_INDEX))
            insert = "INSERT INTO {info} (model, dimensions, tokenizer, k1, b) VALUES (%s, %s, %s, %s, %s)"
            conn.execute(self.sql(insert), wanted[:5])
        recorded = self.read_info(conn)
        self.check_model(recorded, wanted)
        return recorded

    def check_model(self, recorded: StoreInfo, wanted: StoreInfo) -> None:
        """Refuse another embedding model than the one the store's vectors came from."""
        if (recorded.model, recorded.dimensions) != (wanted.model, wanted.dimensions):
            raise EmbeddingModelMismatchError(
                f"the table {self.name} holds vectors of model {recorded.model!r} "
                f"({recorded.dimensions} dimensions); it cannot be used with model {wanted.model!r} "
                f"({wanted.dimensions} dimensions)"
            )


_TABLES = {"docs": "", "lexical": "_lexical", "terms": "_terms", "info": "_info"}
_INDEXES = {"metadata_index": "_metadata", "terms_index": "_lexical_terms", "hnsw_index": "_hnsw"}


def check_text(document: Document) -> None:
    """Refuse, naming the document and the field, what PostgreSQL cannot hold (see `first_unstorable`)."""
    doc_id = document.id
    fields: list[tuple[str, str, object]] = [
        (f"document {doc_id!r}", f" in its {f}", text)
        for f, text in (("id", doc_id), ("text", document.text))
    ]
    fields += [
        (f"metadata {name!r} of document {doc_id!r}", "", item)
        for name, entry in document.metadata.items()
        for item in [name, *(entry if isinstance(entry, list) else [entry])]
    ]
    for subject, where, text in fields:
        if isinstance(text, str) and (index := first_unstorable(text)) is not None:
            problem = (
                "the NUL character"
                if text[index] == "\x00"
                else f"a lone surrogate ({text[index]!r} at index {index}), which is not valid Unicode text"
            )
            raise InvalidRequestError(f"{subject}: PostgreSQL cannot store {problem}{where}")


# The writes below run inside a transaction that holds the lock on the info row.


def _forget(conn: Any, tables: Tables, ids: list[str], frequencies: Counter[str]) -> tuple[int, int]:
    """Delete the lexical rows of `ids`, counting their terms out of `frequencies`: (documents, length)."""
    statement = tables.sql("DELETE FROM {lexical} WHERE id = ANY(%s) RETURNING length, terms")
    removed = conn.execute(statement, (ids,)).fetchall()
    for _, terms in removed:
        frequencies.subtract(terms)
    return len(removed), sum(int(length) for length, _ in removed)


def _copy_lexical(conn: Any, tables: Tables, rows: Sequence[Sequence[Any]], frequencies: Counter[str]) -> int:
    """Write the postings of `rows` (id, text, metadata): each one's length and distinct terms with their
    frequencies. Counts the terms into `frequencies`; returns the total length."""
    vocabulary = Vocabulary()
    encoded = encode_documents(vocabulary, [row[1] for row in rows], [row[2] or {} for row in rows])
    postings: list[tuple[list[str], list[int]]] = [([], []) for _ in rows]
    width, names = len(vocabulary) + 1, vocabulary.terms
    pairs, counts = np.unique(encoded.owners * width + encoded.ids.astype(np.int64), return_counts=True)
    for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
        owner, term = divmod(pair, width)
        postings[owner][0].append(names[term])
        postings[owner][1].append(count)
    lengths = encoded.lengths.tolist()
    statement = tables.sql("COPY {lexical} (id, length, terms, tfs) FROM STDIN (FORMAT BINARY)")
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(["text", "int4", "text[]", "int4[]"])
        for (doc_id, *_), (terms, tfs), length in zip(rows, postings, lengths, strict=True):
            copy.write_row((doc_id, int(length), terms, tfs))
            frequencies.update(terms)
    return int(sum(lengths))


def _settle(conn: Any, tables: Tables, frequencies: Counter[str], documents: int, length: int) -> None:
    """Apply document-frequency and statistics changes; drop terms no document holds any more."""
    changed = {term: delta for term, delta in frequencies.items() if delta}
    if changed:
        terms = sorted(changed)  # a fixed order: concurrent writers never deadlock on term rows
        upsert = (
            "INSERT INTO {terms} (term, df) SELECT * FROM unnest(%s::text[], %s::integer[]) "
            "ON CONFLICT (term) DO UPDATE SET df = {terms}.df + excluded.df"
        )
        conn.execute(tables.sql(upsert), (terms, [changed[t] for t in terms]))
        gone = [t for t in terms if changed[t] < 0]
        conn.execute(tables.sql("DELETE FROM {terms} WHERE term = ANY(%s) AND df <= 0"), (gone,))
    if documents or length:
        statement = "UPDATE {info} SET documents = documents + %s, total_length = total_length + %s"
        conn.execute(tables.sql(statement), (documents, length))


def write_rows(
    conn: Any, tables: Tables, documents: Sequence[Document], vectors: npt.NDArray[np.float32]
) -> None:
    """Upsert `documents` (unique ids) with their unit `vectors`, postings and statistics."""
    from psycopg.types.json import Jsonb

    ids = [doc.id for doc in documents]
    frequencies: Counter[str] = Counter()
    old_documents, old_length = _forget(conn, tables, ids, frequencies)
    conn.execute(tables.sql("DELETE FROM {docs} WHERE id = ANY(%s)"), (ids,))
    statement = tables.sql("COPY {docs} (id, text, metadata, embedding) FROM STDIN (FORMAT BINARY)")
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(["text", "text", "jsonb", "vector"])
        for doc, vector in zip(documents, vectors, strict=True):
            copy.write_row((doc.id, doc.text, Jsonb(json_value(doc.metadata), dumps=str), vector))
    length = _copy_lexical(conn, tables, [(d.id, d.text, d.metadata) for d in documents], frequencies)
    _settle(conn, tables, frequencies, len(ids) - old_documents, length - old_length)


def delete_rows(conn: Any, tables: Tables, condition: Condition) -> int:
    """Delete the documents matching `condition`; returns how many were removed."""
    statement = tables.sql("DELETE FROM {docs} WHERE {where} RETURNING id", where=condition.text)
    deleted = [row[0] for row in conn.execute(statement, condition.params).fetchall()]
    if deleted:
        frequencies: Counter[str] = Counter()
        documents, length = _forget(conn, tables, deleted, frequencies)
        _settle(conn, tables, frequencies, -documents, -length)
    return len(deleted)


def rebuild_lexical(conn: Any, tables: Tables, tokenizer: str) -> None:
    """Analyse every stored text again (another tokenizer wrote the terms) and record `tokenizer`."""
    conn.execute(tables.sql("DELETE FROM {lexical}; DELETE FROM {terms}"))
    frequencies: Counter[str] = Counter()
    documents = total = 0
    with conn.cursor(name="rag_rebuild") as reader:  # server-side: the texts never all sit in memory
        reader.execute(tables.sql("SELECT id, text, metadata FROM {docs} ORDER BY id"))
        while rows := reader.fetchmany(5000):
            total += _copy_lexical(conn, tables, rows, frequencies)
            documents += len(rows)
    statement = "UPDATE {info} SET documents = 0, total_length = 0, tokenizer = %s"
    conn.execute(tables.sql(statement), (tokenizer,))
    _settle(conn, tables, frequencies, documents, total)
