"""Vector stores: numpy (exact, in memory, saved to a folder), Chroma (embedded or server) and PostgreSQL.

Each store declares its `capabilities` (exact or approximate vector search; BM25 in the backend or
beside it) and uses a BM25 `LexicalIndex` for `SearchRequest(mode="lexical" | "hybrid")`. Importing this
package does not import chromadb nor psycopg; `ChromaVectorStore` and `PgVectorStore` load them when
first constructed. Every store is safe to share between threads (`stores.locking`: searches run
together, writes one at a time).

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
