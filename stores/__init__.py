"""Vector stores: in-memory numpy (persisted to a folder) and Chroma (embedded or server).

Importing this package does not import chromadb; `ChromaVectorStore` loads it when first constructed.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from stores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "hello", {"lang": "en"})])
    >>> store.count("lang == 'en'")
    1
"""

from stores.chroma import ChromaVectorStore
from stores.inmemory import InMemoryVectorStore

__all__ = ["ChromaVectorStore", "InMemoryVectorStore"]
