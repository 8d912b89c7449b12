"""The query vector a search needs: the one the request carries, the model's embedding, or none.

A store embeds a request's query at most once, and not at all when the search reads only text
(`SearchRequest.embeds_query`: a lexical request without a threshold).

Example:
    >>> from rag import HashingEmbedding, SearchRequest
    >>> model = HashingEmbedding(dimensions=8)
    >>> request_vector(SearchRequest("pumps"), model).shape
    (8,)
    >>> request_vector(SearchRequest("pumps", mode="lexical"), model) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import DimensionMismatchError
from stores.numpy.embed import embed_queries

__all__ = ["given_vector", "request_vector"]

Vector = npt.NDArray[np.float32]


def given_vector(request: SearchRequest, model: EmbeddingModel) -> Vector | None:
    """The request's `query_vector`, checked against the model's width; None when it carries none.

    Raises:
        DimensionMismatchError: the vector's length is not the model's.
    """
    vector = request.query_vector
    if vector is None:
        return None
    width = int(model.dimensions)
    if vector.shape != (width,):
        raise DimensionMismatchError(
            f"query_vector has {vector.shape[0]} dimensions, "
            f"but model {model.name!r} of this store has {width}"
        )
    return vector


def request_vector(
    request: SearchRequest,
    model: EmbeddingModel,
    embed: Callable[[EmbeddingModel, str], Vector] | None = None,
) -> Vector | None:
    """The query vector `request` needs: its own (`given_vector`), else `embed(model, query)` (by
    default `embed_queries`), or None when the search needs none."""
    given = given_vector(request, model)
    if given is not None or not request.embeds_query:
        return given
    if embed is not None:
        return embed(model, request.query)
    vector: Vector = embed_queries(model, [request.query])[0]
    return vector
