"""Embedding models from the specs a home records (`hashing`, `st:MODEL`, `openai:MODEL`) and splitters
sized for them.

Example:
    >>> build_embedder("hashing:64").dimensions
    64
    >>> chunking_in_effect(None, None), chunking_in_effect(20, None)
    ((200, 30), (20, 19))
"""

from __future__ import annotations

from ingest.splitters import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, RecursiveSplitter
from rag.config import Settings
from rag.embeddings import EmbeddingModel, HashingEmbedding, TokenCounter
from rag.errors import ConfigError

__all__ = ["DEFAULT_EMBEDDER", "build_embedder", "chunking_in_effect", "make_splitter"]

DEFAULT_EMBEDDER = "hashing"
"""The embedder spec of a new store when none is given (offline, nothing to download)."""


def build_embedder(
    spec: str,
    settings: Settings | None = None,
    *,
    known_dimensions: int | None = None,
    known_max_tokens: int | None = None,
) -> EmbeddingModel:
    """An embedding model from a spec: `hashing`, `hashing:2048`, `st:NAME_OR_PATH`, `openai:MODEL`.

    `settings` gives an `openai:` model its endpoint and key (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    `known_dimensions` and `known_max_tokens` are the vector length and input limit a home recorded
    for the spec: an `openai:` model then sends no request to learn the length, and an `st:` model is
    not loaded until it embeds or counts tokens.

    Raises:
        ConfigError: an unknown or malformed spec.
    """
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "hashing":
        if not arg:
            return HashingEmbedding()
        if not arg.isdigit():
            raise ConfigError(f"embedder spec {spec!r}: the hashing dimension must be an integer")
        return HashingEmbedding(int(arg))
    if kind in ("st", "sentence-transformers") and arg:
        from rag.embeddings import SentenceTransformerEmbedding

        return SentenceTransformerEmbedding(
            arg, known_dimensions=known_dimensions, known_max_tokens=known_max_tokens
        )
    if kind == "openai" and arg:
        from rag.embeddings.openai import OpenAIEmbedding

        settings = settings or Settings()
        return OpenAIEmbedding(
            arg,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            known_dimensions=known_dimensions,
        )
    raise ConfigError(
        f"unknown embedder spec {spec!r}; use 'hashing', 'hashing:DIM', 'st:MODEL_OR_PATH' or 'openai:MODEL'"
    )


def chunking_in_effect(size: int | None, overlap: int | None) -> tuple[int, int]:
    """The chunk size and overlap a store's recorded settings split with (None: the default).

    A None overlap is the default one, kept below the size. A model with a shorter input limit clamps the
    size further when it splits.
    """
    size = DEFAULT_CHUNK_SIZE if size is None else size
    return size, min(DEFAULT_CHUNK_OVERLAP, size - 1) if overlap is None else overlap


def make_splitter(
    model: EmbeddingModel, chunk_size: int | None, chunk_overlap: int | None
) -> RecursiveSplitter:
    """The recursive splitter sized in the model's tokens (words when it has no tokenizer)."""
    size, overlap = chunking_in_effect(chunk_size, chunk_overlap)
    counter = model if isinstance(model, TokenCounter) else None
    return RecursiveSplitter(size, overlap, counter)
