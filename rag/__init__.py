"""rag-advisors: retrieval-augmented generation built around vector-store-backed advisors.

Example:
    >>> from rag import Document, SearchRequest, HashingEmbedding
    >>> from stores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "Chroma keeps vectors on disk", {"source": "a.md"})])
    >>> [d.id for d in store.similarity_search(SearchRequest("where are vectors kept", top_k=1))]
    ['1']
"""

from rag.documents import Document, SearchRequest
from rag.embeddings import EmbeddingModel, HashingEmbedding
from rag.errors import RagError
from rag.vectorstore import VectorStore

__all__ = [
    "Document",
    "EmbeddingModel",
    "HashingEmbedding",
    "RagError",
    "SearchRequest",
    "VectorStore",
]
