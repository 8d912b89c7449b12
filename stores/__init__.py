"""Vector stores: numpy (exact, in memory, saved to a folder), Chroma (embedded or server) and PostgreSQL.

Each store declares its `capabilities` and ranks lexical and hybrid requests by BM25 (`LexicalIndex`).
Importing this package imports neither chromadb nor psycopg. Every store is safe to share between
threads (`stores.locking`).

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "hello", {"lang": "en"})])
    >>> store.count("lang == 'en'")
    1
"""

from stores.chroma import ChromaVectorStore
from stores.lexical import LexicalIndex, LexicalSettings
from stores.numpy import NumpyVectorStore
from stores.pgvector import PgVectorStore

__all__ = ["ChromaVectorStore", "LexicalIndex", "LexicalSettings", "NumpyVectorStore", "PgVectorStore"]
