"""Embedding models: the protocol, the offline hashing default, sentence-transformers, OpenAI-compatible.

Example:
    >>> from rag.embeddings import HashingEmbedding
    >>> HashingEmbedding().embed(["hello world"]).shape[0]
    1
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.embeddings.base import EmbeddingModel, TokenCounter, normalize_rows
from rag.embeddings.hashing import HashingEmbedding
from rag.embeddings.sentence_transformers import SentenceTransformerEmbedding

if TYPE_CHECKING:
    from rag.embeddings.openai import OpenAIEmbedding

__all__ = [
    "EmbeddingModel",
    "HashingEmbedding",
    "OpenAIEmbedding",
    "SentenceTransformerEmbedding",
    "TokenCounter",
    "normalize_rows",
]

# Their modules import httpx or pydantic: loaded on first use (see rag._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "OpenAIEmbedding": "rag.embeddings.openai",
    },
)
