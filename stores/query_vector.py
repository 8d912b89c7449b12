"""The query vector a search needs: the one the request carries, the model's embedding, or none (a
lexical request without a threshold embeds nothing: `SearchRequest.embeds_query`).

Example:
    >>> from rag import HashingEmbedding, SearchRequest
    >>> model = HashingEmbedding(dimensions=8)
    >>> embed = lambda text: model.embed([text])[0]
    >>> request_vector(SearchRequest("pumps"), model, embed).shape
    (8,)
    >>> request_vector(SearchRequest("pumps", mode="lexical"), model, embed) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import DimensionMismatchError

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
    request: SearchRequest, model: EmbeddingModel, embed: Callable[[str], Vector]
) -> Vector | None:
    """The request's own vector (`given_vector`), else `embed(query)`, or None when the search needs none."""
    given = given_vector(request, model)
    if given is not None or not request.embeds_query:
        return given
    return embed(request.query)
