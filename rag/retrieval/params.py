"""`SearchParams`: the per-request search settings `QuestionAnswerAdvisor` and the retriever share.

One definition of the seven things a request may change about a search (top-k, threshold, filter,
mode, fusion, vector weight, diversity). `QuestionAnswerAdvisor.Params` and
`VectorStoreDocumentRetriever.Params` derive from it without adding fields: each advisor finds its own
class in the request, so one request can tune each of them separately.

Example:
    >>> from rag.documents import SearchRequest
    >>> SearchParams(top_k=2, filter="lang == 'en'").apply(SearchRequest("q")).top_k
    2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.documents import Fusion, SearchMode, SearchRequest
from rag.errors import RagError
from rag.filters import Filter, as_filter
from rag.params import AdvisorParams

__all__ = ["SearchParams"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchParams(AdvisorParams):
    """Search settings for one request; None keeps the advisor's default. Checked when built.

    `top_k` >= 1; `similarity_threshold`, `vector_weight` and `diversity` in [0, 1]; `mode` one of
    "vector", "lexical", "hybrid"; `fusion` "rrf" or "weighted"; `filter` text (parsed now) or a tree,
    which *replaces* the advisor's default filter (its fixed scope still applies).
    """

    top_k: int | None = None
    similarity_threshold: float | None = None
    filter: str | Filter | None = None
    mode: SearchMode | None = None
    fusion: Fusion | None = None
    vector_weight: float | None = None
    diversity: float | None = None

    def __post_init__(self) -> None:
        top_k = self.top_k
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise self.fail("top_k", f"must be an integer >= 1, got {top_k!r}")
        if self.filter is not None:
            object.__setattr__(self, "filter", as_filter(self.filter))  # a syntax error surfaces now
        for name, value in self.given().items():
            try:
                SearchRequest("check", **{name: value})  # the same checks as every search
            except RagError as exc:
                raise self.fail(name, str(exc)) from exc

    def apply(self, search: SearchRequest) -> SearchRequest:
        """`search` with the fields set here replacing its own."""
        changes: dict[str, Any] = self.given()
        return search.replace(**changes) if changes else search
