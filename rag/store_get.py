"""`VectorStore.get` defined once: the public signature, its checks, and the request a store answers.

A store subclasses `GetMixin` and implements `_get_documents(request)`; the checks (ids a list of
strings, repeats once; `limit` an integer >= 0 or None; filter text parsed) happen here, with one
message each, before the store sees the call.

Example:
    >>> request = GetRequest.of(["b", "a", "b"], "year >= 2020", 1)
    >>> request.ids, str(request.filter), request.limit
    (['b', 'a'], 'year >= 2020', 1)
    >>> GetRequest.of(None, None, -1)
    Traceback (most recent call last):
    ...
    rag.errors.InvalidRequestError: limit must be an integer >= 0 or None, got -1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag.documents import Document
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter

__all__ = ["GetMixin", "GetRequest", "check_limit", "unique_ids"]


def unique_ids(ids: Iterable[str]) -> list[str]:
    """The ids in the order given, repeats once.

    Raises:
        InvalidRequestError: `ids` is a single string, or holds something else than strings.
    """
    if isinstance(ids, str):
        raise InvalidRequestError(f"ids must be a list of ids, not the single string {ids!r}")
    unique = list(dict.fromkeys(ids))
    for item in unique:
        if not isinstance(item, str):
            raise InvalidRequestError(f"ids must be strings, got {item!r}")
    return unique


def check_limit(limit: int | None) -> int | None:
    """`limit` if it is None or an integer >= 0 (not a bool).

    Raises:
        InvalidRequestError: anything else.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidRequestError(f"limit must be an integer >= 0 or None, got {limit!r}")
    return limit


@dataclass(frozen=True)
class GetRequest:
    """A checked `get` call: unique ids (None: all documents), a filter tree, a limit, and whether to
    fill `Document.embedding`."""

    ids: list[str] | None = None
    filter: Filter | None = None
    limit: int | None = None
    include_embeddings: bool = False

    @classmethod
    def of(
        cls,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        include_embeddings: bool = False,
    ) -> GetRequest:
        """The request for `get(ids, filter, limit, include_embeddings=...)`, checked.

        Raises:
            InvalidRequestError: bad ids or limit.
            FilterSyntaxError: filter text that does not parse.
        """
        checked = None if ids is None else unique_ids(ids)
        return cls(checked, as_filter(filter), check_limit(limit), include_embeddings)


class GetMixin:
    """`get` for a store that implements `_get_documents(request)`.

    Example:
        >>> class Two(GetMixin):
        ...     def _get_documents(self, request):
        ...         return [Document(i, i) for i in request.ids or ["a", "b"]][: request.limit]
        >>> [d.id for d in Two().get(limit=1)], [d.id for d in Two().get(["b", "b"])]
        (['a'], ['b'])
    """

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        """Documents by ids (in the order given) and/or filter (in ascending id order), without scores.

        Unknown ids are skipped and repeats returned once; `limit` caps the list; `include_embeddings`
        fills `Document.embedding`.

        Raises:
            InvalidRequestError: `ids` is a single string or holds a non-string, or `limit` is not an
                integer >= 0.
            FilterSyntaxError: filter text that does not parse.
        """
        return self._get_documents(GetRequest.of(ids, filter, limit, include_embeddings))

    def _get_documents(self, request: GetRequest) -> list[Document]:
        """The documents for a checked request (the store's own reading)."""
        raise NotImplementedError
