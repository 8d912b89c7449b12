"""Embedding models: the protocol, the offline hashing default, sentence-transformers, OpenAI-compatible.

Example:
    >>> from rag.embeddings import HashingEmbedding
    >>> HashingEmbedding().embed(["hello world"]).shape[0]
    1
"""

from rag.embeddings.base import EmbeddingModel, TokenCounter, normalize_rows
from rag.embeddings.hashing import HashingEmbedding
from rag.embeddings.openai import OpenAIEmbedding

__all__ = ["EmbeddingModel", "HashingEmbedding", "OpenAIEmbedding", "TokenCounter", "normalize_rows"]
