"""The write transactions of the pgvector store: rows, BM25 postings, frequencies and statistics.

Both functions run inside a transaction that already holds the lock on the store's info row
(`PgVectorStore._locked_info`), so they read the current state and no other writer interleaves.
Replaced and deleted documents give back their postings: document frequencies and the collection's
count and total length move by exactly what each write changed, so BM25 statistics always describe
the live documents (as `stores.lexical.LexicalIndex` keeps them in memory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from stores.pgvector.encoding import metadata_json, postings
from stores.pgvector.filters import Condition
from stores.pgvector.schema import TableNames

__all__ = ["delete_rows", "rebuild_lexical", "write_rows"]


def _identity(text: str) -> str:
    return text


def _forget(conn: Any, names: TableNames, ids: list[str], frequencies: Counter[str]) -> tuple[int, int]:
    """Delete the lexical rows of `ids`; count their terms out of `frequencies`; (documents, length)."""
    from psycopg import sql

    removed = conn.execute(
        sql.SQL("DELETE FROM {} WHERE id = ANY(%s) RETURNING length, terms").format(names.lexical), (ids,)
    ).fetchall()
    for _, terms in removed:
        frequencies.subtract(terms)
    return len(removed), sum(int(length) for length, _ in removed)


def _settle(conn: Any, names: TableNames, frequencies: Counter[str], documents: int, length: int) -> None:
    """Apply document-frequency and statistics changes; drop terms no document holds any more."""
    from psycopg import sql

    changed = {term: delta for term, delta in frequencies.items() if delta}
    if changed:
        terms = sorted(changed)  # a fixed order: concurrent writers never deadlock on term rows
        conn.execute(
            sql.SQL(
                "INSERT INTO {t} (term, df) SELECT * FROM unnest(%s::text[], %s::integer[]) "
                "ON CONFLICT (term) DO UPDATE SET df = {t}.df + excluded.df"
            ).format(t=names.terms),
            (terms, [changed[t] for t in terms]),
        )
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE term = ANY(%s) AND df <= 0").format(names.terms),
            ([t for t in terms if changed[t] < 0],),
        )
    if documents or length:
        conn.execute(
            sql.SQL(
                "UPDATE {} SET documents = documents + %s, total_length = total_length + %s WHERE singleton"
            ).format(names.info),
            (documents, length),
        )


def write_rows(
    conn: Any, names: TableNames, documents: Sequence[Document], vectors: npt.NDArray[np.float32]
) -> None:
    """Upsert `documents` (unique ids) with their unit `vectors`, postings and statistics."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    ids = [doc.id for doc in documents]
    frequencies: Counter[str] = Counter()
    old_documents, old_length = _forget(conn, names, ids, frequencies)
    conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(names.documents), (ids,))
    lexical = postings([doc.text for doc in documents], [doc.metadata for doc in documents])
    with conn.cursor() as cursor:
        statement = sql.SQL("COPY {} (id, text, metadata, embedding) FROM STDIN (FORMAT BINARY)")
        with cursor.copy(statement.format(names.documents)) as copy:
            copy.set_types(["text", "text", "jsonb", "vector"])
            for doc, vector in zip(documents, vectors, strict=True):
                copy.write_row(
                    (doc.id, doc.text, Jsonb(metadata_json(doc.metadata), dumps=_identity), vector)
                )
        statement = sql.SQL("COPY {} (id, length, terms, tfs) FROM STDIN (FORMAT BINARY)")
        with cursor.copy(statement.format(names.lexical)) as copy:
            copy.set_types(["text", "int4", "text[]", "int4[]"])
            for doc_id, (terms, tfs, length) in zip(ids, lexical, strict=True):
                copy.write_row((doc_id, length, terms, tfs))
                frequencies.update(terms)
    new_length = sum(length for _, _, length in lexical)
    _settle(conn, names, frequencies, len(ids) - old_documents, new_length - old_length)


def delete_rows(conn: Any, names: TableNames, ids: list[str] | None, condition: Condition | None) -> int:
    """Delete by ids or by a compiled filter; returns how many documents were removed."""
    from psycopg import sql

    if ids is not None:
        statement = sql.SQL("DELETE FROM {} WHERE id = ANY(%s) RETURNING id").format(names.documents)
        deleted = [row[0] for row in conn.execute(statement, (ids,)).fetchall()]
    else:
        assert condition is not None
        statement = sql.SQL("DELETE FROM {} WHERE {} RETURNING id").format(
            names.documents, sql.SQL(condition.text)
        )
        deleted = [row[0] for row in conn.execute(statement, condition.params).fetchall()]
    if not deleted:
        return 0
    frequencies: Counter[str] = Counter()
    documents, length = _forget(conn, names, deleted, frequencies)
    _settle(conn, names, frequencies, -documents, -length)
    return len(deleted)


def _copy_lexical(
    conn: Any, names: TableNames, ids: list[str], texts: list[str], metadatas: list[dict[str, Any]]
) -> tuple[Counter[str], int]:
    """Write the lexical rows of these documents; returns their term counts and total length."""
    from psycopg import sql

    frequencies: Counter[str] = Counter()
    total = 0
    statement = sql.SQL("COPY {} (id, length, terms, tfs) FROM STDIN (FORMAT BINARY)").format(names.lexical)
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(["text", "int4", "text[]", "int4[]"])
        for doc_id, (terms, tfs, length) in zip(ids, postings(texts, metadatas), strict=True):
            copy.write_row((doc_id, length, terms, tfs))
            frequencies.update(terms)
            total += length
    return frequencies, total


def rebuild_lexical(conn: Any, names: TableNames, tokenizer: str, batch: int = 5000) -> None:
    """Analyse every stored text again (another tokenizer version wrote the terms) and record `tokenizer`."""
    from psycopg import sql

    conn.execute(sql.SQL("DELETE FROM {}").format(names.lexical))
    conn.execute(sql.SQL("DELETE FROM {}").format(names.terms))
    frequencies: Counter[str] = Counter()
    documents = total = 0
    with conn.cursor(name="rag_rebuild") as reader:  # server-side: the texts never all sit in memory
        reader.execute(sql.SQL("SELECT id, text, metadata FROM {} ORDER BY id").format(names.documents))
        while rows := reader.fetchmany(batch):
            texts = [text for _, text, _ in rows]
            metadatas = [metadata or {} for _, _, metadata in rows]
            counted, length = _copy_lexical(conn, names, [r[0] for r in rows], texts, metadatas)
            frequencies.update(counted)
            documents, total = documents + len(rows), total + length
    conn.execute(
        sql.SQL("UPDATE {} SET documents = 0, total_length = 0, tokenizer = %s WHERE singleton").format(
            names.info
        ),
        (tokenizer,),
    )
    _settle(conn, names, frequencies, documents, total)
