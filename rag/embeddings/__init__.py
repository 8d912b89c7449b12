"""Embedding models: the protocol, the offline hashing default, sentence-transformers, OpenAI-compatible.

Example:
    >>> from rag.embeddings import HashingEmbedding
    >>> HashingEmbedding().embed(["hello world"]).shape[0]
    1
"""

from rag.embeddings.base import EmbeddingModel, TokenCounter, normalize_rows
from rag.embeddings.hashing import HashingEmbedding
from rag.embeddings.openai import OpenAIEmbedding
from rag.embeddings.sentence_transformers import SentenceTransformerEmbedding

__all__ = [
    "EmbeddingModel",
    "HashingEmbedding",
    "OpenAIEmbedding",
    "SentenceTransformerEmbedding",
    "TokenCounter",
    "normalize_rows",
]
