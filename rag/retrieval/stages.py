"""The stages of modular RAG: `Query` and one small protocol per step, after Spring AI's `rag` package.

`RetrievalAugmentationAdvisor` runs them in this order:

```
Query --QueryTransformer*--> Query --QueryExpander--> [Query...] --DocumentRetriever+--> rankings
      --DocumentJoiner--> documents --DocumentPostProcessor*--> documents --QueryAugmenter--> Query
```

Each protocol has one method, so a plain class (or any object with that method) is a stage. The
implementations that ship live in `rag.retrieval`: transformers, expansion, retriever, joiners,
post-processors, rerankers and the augmenter.

Example:
    >>> class Shout:
    ...     def transform(self, query: Query) -> Query:
    ...         return query.with_text(query.text.upper())
    >>> isinstance(Shout(), QueryTransformer), Shout().transform(Query("where?")).text
    (True, 'WHERE?')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rag.chat.messages import Message
from rag.documents import Document
from rag.errors import InvalidRequestError
from rag.params import ParamSet

__all__ = [
    "DocumentJoiner",
    "DocumentPostProcessor",
    "DocumentRetriever",
    "Query",
    "QueryAugmenter",
    "QueryExpander",
    "QueryTransformer",
]


@dataclass(frozen=True)
class Query:
    """A query on its way through the stages: its text, the conversation before it, the request context.

    `history` holds the messages that came before the question (system, user and assistant turns, as
    chat memory advisors put them into the prompt). `context` is the request's context dict, read-only
    by convention. `params` are the request's typed parameters: a retriever finds its own there
    (`VectorStoreDocumentRetriever.Params`).

    Example:
        >>> from rag.params import ParamSet
        >>> from rag.retrieval import VectorStoreDocumentRetriever
        >>> wanted = ParamSet([VectorStoreDocumentRetriever.Params(filter="lang == 'en'")])
        >>> query = Query("And in winter?", params=wanted)
        >>> str(query.with_text("When is the beacon lit in winter?").params.get(
        ...     VectorStoreDocumentRetriever.Params).filter)
        "lang == 'en'"
    """

    text: str
    history: tuple[Message, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    params: ParamSet = field(default_factory=ParamSet)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidRequestError(f"query text must be a non-empty string, got {self.text!r}")
        object.__setattr__(self, "history", tuple(self.history))

    __hash__ = None  # type: ignore[assignment]  # the context is a dict

    def with_text(self, text: str) -> Query:
        """The same query (history and context) with another text."""
        return dataclasses.replace(self, text=text)


@runtime_checkable
class QueryTransformer(Protocol):
    """Rewrites a query (clearer wording, a standalone question, another language).

    Returns a query with the same history and context; on an empty or useless rewrite, the query as it was.
    """

    def transform(self, query: Query) -> Query: ...


@runtime_checkable
class QueryExpander(Protocol):
    """Turns one query into several (variants, sub-questions); each is retrieved with separately."""

    def expand(self, query: Query) -> list[Query]: ...


@runtime_checkable
class DocumentRetriever(Protocol):
    """Finds the documents for one query, best first, each with its `score`."""

    def retrieve(self, query: Query) -> list[Document]: ...


@runtime_checkable
class DocumentJoiner(Protocol):
    """Merges ranked lists (one per query and retriever) into one list, best first, without repeats."""

    def join(self, rankings: Sequence[Sequence[Document]]) -> list[Document]: ...


@runtime_checkable
class DocumentPostProcessor(Protocol):
    """Reorders, rescores or drops retrieved documents (rerankers, de-duplication, per-source limits)."""

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]: ...


@runtime_checkable
class QueryAugmenter(Protocol):
    """Puts the documents into the query: the text the model finally receives as the user message."""

    def augment(self, query: Query, documents: Sequence[Document]) -> Query: ...
