"""`RetrievalAugmentationAdvisor`: modular RAG, Spring AI's design, one stage a small protocol.

```
user text -> Query -> transformers -> expander -> retrievers (each query) -> joiner
          -> post-processors -> augmenter -> the user message the model receives
```

`QuestionAnswerAdvisor` is the simple path (one search, one template); this advisor is for when the
question needs rewriting, translating or completing from the conversation, several searches, or
reranking. The stages' protocols and implementations are in `rag.retrieval`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.advisors.base import BaseAdvisor
from rag.advisors.orders import QUESTION_ANSWER_ORDER
from rag.advisors.question_answer import augment_user_message
from rag.advisors.request import RETRIEVED_DOCUMENTS, ChatClientRequest
from rag.chat.messages import UserMessage
from rag.documents import Document
from rag.errors import InvalidRequestError
from rag.retrieval.augmenter import ContextualQueryAugmenter
from rag.retrieval.joiners import ConcatenationDocumentJoiner
from rag.retrieval.retriever import VectorStoreDocumentRetriever
from rag.retrieval.stages import (
    DocumentJoiner,
    DocumentPostProcessor,
    DocumentRetriever,
    Query,
    QueryAugmenter,
    QueryExpander,
    QueryTransformer,
)

if TYPE_CHECKING:
    from rag.advisors.chain import AdvisorChain

__all__ = ["TRANSFORMED_QUERY", "RetrievalAugmentationAdvisor"]

TRANSFORMED_QUERY = "rag.transformed_query"
"""Context key: the query text after the transformers (what was searched with, before expansion)."""


class RetrievalAugmentationAdvisor(BaseAdvisor):
    """Retrieves through a pipeline of stages and answers from the documents found.

    Before the call: the user text and the messages before it become a `Query`; each transformer
    rewrites it in turn; the expander (if any) makes several queries of it; every retriever searches
    with every query; the joiner merges those rankings; each post-processor (rerankers, filters) runs
    in turn with the transformed query; the augmenter renders the *original* question and the
    documents into the user message. The response's `documents` are the final documents, as with
    `QuestionAnswerAdvisor`, and the context holds the transformed query under `rag.transformed_query`.

    Per request, `.advisors(RetrievalAugmentationAdvisor.Params(filter=..., top_k=...))` reaches the
    retrievers through the query (`Params` is `VectorStoreDocumentRetriever.Params`: each such retriever
    replaces its default filter with it, inside its scope, chat memory always excluded).

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> from rag.client import ChatClient
        >>> from rag.retrieval import MaxPerSource, VectorStoreDocumentRetriever
        >>> from rag.testing import FakeChatModel
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
        >>> advisor = RetrievalAugmentationAdvisor(
        ...     VectorStoreDocumentRetriever(store, top_k=4), post_processors=[MaxPerSource(2)])
        >>> model = FakeChatModel(default="At dusk [1].")
        >>> response = ChatClient(model, advisors=[advisor]).prompt("When is the beacon lit?").call()
        >>> [d.id for d in response.response().documents]
        ['d1']
    """

    Params = VectorStoreDocumentRetriever.Params
    """The per-request search settings of its retrievers: `VectorStoreDocumentRetriever.Params`."""

    order = QUESTION_ANSWER_ORDER

    def __init__(
        self,
        retrievers: DocumentRetriever | Sequence[DocumentRetriever],
        *,
        transformers: Sequence[QueryTransformer] = (),
        expander: QueryExpander | None = None,
        joiner: DocumentJoiner | None = None,
        post_processors: Sequence[DocumentPostProcessor] = (),
        augmenter: QueryAugmenter | None = None,
        order: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(order=order, name=name)
        one = isinstance(retrievers, DocumentRetriever)
        self.retrievers: tuple[DocumentRetriever, ...] = _stages(
            [retrievers] if one else retrievers, DocumentRetriever, "retrievers"
        )
        if not self.retrievers:
            raise InvalidRequestError("retrievers must hold at least one DocumentRetriever, got none")
        self.transformers: tuple[QueryTransformer, ...] = _stages(
            transformers, QueryTransformer, "transformers"
        )
        self.expander: QueryExpander | None = (
            _stages([expander], QueryExpander, "expander")[0] if expander is not None else None
        )
        self.joiner: DocumentJoiner = _stages(
            [joiner if joiner is not None else ConcatenationDocumentJoiner()], DocumentJoiner, "joiner"
        )[0]
        self.post_processors: tuple[DocumentPostProcessor, ...] = _stages(
            post_processors, DocumentPostProcessor, "post_processors"
        )
        self.augmenter: QueryAugmenter = _stages(
            [augmenter if augmenter is not None else ContextualQueryAugmenter()], QueryAugmenter, "augmenter"
        )[0]

    def query_for(self, request: ChatClientRequest) -> Query:
        """The request as a `Query`: the last user text, the messages before it, the context."""
        messages = request.prompt.messages
        last = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=None)
        if last is None or not request.user_text.strip():
            raise InvalidRequestError(
                f"{self.name} needs user text to retrieve with; the prompt has {request.user_text!r}"
            )
        return Query(request.user_text, messages[:last], request.context, request.params)

    def retrieve(self, query: Query) -> tuple[Query, list[Document]]:
        """The transformed query and the final documents for `query` (every stage but the augmenter)."""
        for transformer in self.transformers:
            query = transformer.transform(query)
        queries = self.expander.expand(query) if self.expander is not None else [query]
        rankings = [retriever.retrieve(q) for q in queries for retriever in self.retrievers]
        documents = self.joiner.join(rankings)
        for processor in self.post_processors:
            documents = processor.process(query, documents)
        return query, documents

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        original = self.query_for(request)
        transformed, documents = self.retrieve(original)
        request.context[RETRIEVED_DOCUMENTS] = documents
        request.context[TRANSFORMED_QUERY] = transformed.text
        augmented = self.augmenter.augment(original, documents)
        return request.with_prompt(augment_user_message(request.prompt, augmented.text, original.text))


def _stages(values: Any, protocol: Any, what: str) -> tuple[Any, ...]:
    """`values` as a tuple, each checked to implement `protocol` (its one method), so a wrong object
    fails here with a clear message rather than with an AttributeError at the first request."""
    items = list(values) if isinstance(values, Sequence) and not isinstance(values, str) else None
    if items is None or not all(isinstance(item, protocol) for item in items):
        raise InvalidRequestError(
            f"{what} must be {protocol.__name__} objects (a list for several), got {values!r}"
        )
    return tuple(items)
