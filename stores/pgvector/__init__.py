"""The pgvector store: documents, vectors, BM25 statistics and filters in PostgreSQL.

Importing this package does not import psycopg; `PgVectorStore` loads it when first constructed.

Example:
    >>> from stores.pgvector import PgVectorStore
    >>> PgVectorStore.__name__
    'PgVectorStore'
"""

from stores.pgvector.store import PgVectorStore

__all__ = ["PgVectorStore"]
