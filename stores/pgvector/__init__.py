"""The pgvector store (`--store pgvector`): documents, vectors, BM25 statistics and filters in PostgreSQL.

`store` holds `PgVectorStore`, `search` its candidate lists, `filters` the SQL conditions, `tables` the
schema and every write, `connection` the pool. psycopg is imported when the first store is constructed.
"""

from stores.pgvector.store import PgVectorStore

__all__ = ["PgVectorStore"]
