"""The question's vectors, embedded once per request and shared by the advisors that search with it.

The retrieval advisor and the long-term memory advisor both search with the user's question, with
stores that embed with the same model (`rag chat`). The first to need a text's vector embeds it and
keeps it in the request's context under `QUERY_VECTORS`, by (model name, text); the other finds it
there and hands it to its store (`SearchRequest.with_query_vector`), so the question costs one
embedding request per request.

Example:
    >>> from types import SimpleNamespace
    >>> from rag.testing import FakeEmbedding
    >>> model = FakeEmbedding(dimensions=4)
    >>> store, context = SimpleNamespace(embedding=model), {}
    >>> first = shared_query_vectors(context, store, ["tides?"])
    >>> again = shared_query_vectors(context, store, ["tides?"])
    >>> model.calls, bool((first == again).all())
    ([['tides?']], True)
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.retrieval.follow_up import query_vectors
from rag.vectorstore import VectorStore

__all__ = ["QUERY_VECTORS", "shared_query_vectors", "with_shared_vector"]

QUERY_VECTORS = "rag.query_vectors"
"""Context key: the query vectors embedded during the request, by (embedding model name, text)."""


def shared_query_vectors(
    context: MutableMapping[str, Any], store: VectorStore, texts: Sequence[str]
) -> npt.NDArray[np.float32]:
    """One unit row per text as the store's model embeds it: from the context when an advisor of
    this request embedded it already, else embedded now (the missing texts in one call) and kept."""
    kept: dict[tuple[str, str], npt.NDArray[np.float32]] = context.setdefault(QUERY_VECTORS, {})
    name = str(store.embedding.name)
    missing = [text for text in dict.fromkeys(texts) if (name, text) not in kept]
    if missing:
        kept.update(
            ((name, text), row) for text, row in zip(missing, query_vectors(store, missing), strict=True)
        )
    return np.stack([kept[(name, text)] for text in texts])


def with_shared_vector(
    context: MutableMapping[str, Any], store: VectorStore, search: SearchRequest, *, embed: bool = True
) -> SearchRequest:
    """`search` carrying its query's shared vector, when the search needs one and carries none.

    With `embed=False` only a vector an advisor of this request already embedded is used; else the
    store embeds the query itself (inside its own search span when traced)."""
    if not search.embeds_query or search.query_vector is not None:
        return search
    kept = context.get(QUERY_VECTORS, {}).get((str(store.embedding.name), search.query))
    if kept is None and not embed:
        return search
    vector = kept if kept is not None else shared_query_vectors(context, store, [search.query])[0]
    return search.with_query_vector(vector)
