"""`QuestionAnswerAdvisor`: retrieves documents for the user's question and puts them into the prompt."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.advisors.base import BaseAdvisor
from rag.advisors.orders import QUESTION_ANSWER_ORDER
from rag.advisors.query_vectors import shared_query_vectors, with_shared_vector
from rag.advisors.request import RETRIEVED_DOCUMENTS, ChatClientRequest
from rag.chat.messages import Prompt, UserMessage
from rag.chat.template import PromptTemplate
from rag.documents import Document, Fusion, SearchMode, SearchRequest
from rag.errors import InvalidRequestError, TemplateError
from rag.filters import Filter, as_filter
from rag.observability.steps import traced_search
from rag.retrieval.augmenter import format_document
from rag.retrieval.follow_up import fuse_rankings, query_similarity
from rag.retrieval.params import SearchParams
from rag.retrieval.scope import scoped_filter
from rag.retrieval.stages import Query, QueryExpander
from rag.vectorstore import VectorStore

if TYPE_CHECKING:
    from rag.advisors.chain import AdvisorChain

__all__ = [
    "DEFAULT_EMPTY_TEMPLATE",
    "DEFAULT_TEMPLATE",
    "QuestionAnswerAdvisor",
    "augment_user_message",
    "format_document",
    "scoped_filter",
]

_RULE = "-" * 21
_POOL = 3  # candidates per search, per passage wanted, when an expander gives several searches

DEFAULT_TEMPLATE = PromptTemplate(
    "{query}\n\n"
    "Passages from the documents, between the dashed lines:\n"
    f"{_RULE}\n{{question_answer_context}}\n{_RULE}\n\n"
    "Answer the question above from these passages only, not from what you knew before, and cite the "
    "passages you use by number, like [1]. If they do not contain the answer, say that you cannot answer "
    "from the documents rather than guessing."
)
"""The default template: the question, the fenced passages, then the instructions."""

DEFAULT_EMPTY_TEMPLATE = PromptTemplate(
    "{query}\n\n"
    f"{_RULE}\n{_RULE}\n\n"
    "No passage of the documents matched this question (the block above is empty). Tell the user that you "
    "cannot answer it from the documents; do not make up an answer."
)
"""Used when nothing is retrieved: the model is told to say it cannot answer instead of inventing one."""


def _template(value: str | PromptTemplate, *, what: str) -> PromptTemplate:
    template = value if isinstance(value, PromptTemplate) else PromptTemplate(value)
    missing = [name for name in ("query", "question_answer_context") if name not in template.variables]
    if what == "empty_template":
        missing = [name for name in missing if name == "query"]
    if missing:
        raise TemplateError(f"{what} {template.template!r} lacks the placeholder(s) {missing!r}")
    return template


class QuestionAnswerAdvisor(BaseAdvisor):
    """Retrieves with the user text and answers from the documents found.

    Before the call it searches `store` with the user's text, renders the user message through `template`
    (`{query}` is the user text, `{question_answer_context}` the numbered passages), or `empty_template`
    when nothing matched. The response's `documents` are the documents found (ids, scores, and sources
    and pages in their metadata).

    `search_request` gives the defaults (its query is ignored); `top_k`, `similarity_threshold`, `filter`,
    `mode` ("vector", "lexical" or "hybrid"), `fusion` ("rrf" or "weighted"), `vector_weight` and
    `diversity` (MMR) override it. Per request, `.advisors(QuestionAnswerAdvisor.Params(top_k=...,
    filter=..., mode=...))` wins over them (Spring AI's `qa_filter_expression` is an alias of its
    `filter`); a request filter *replaces* the default one. Bad values raise `InvalidRequestError`
    naming the field, when the `Params` are built.

    `expander` (a `QueryExpander`) searches once per query it returns, each for 3 x top_k candidates,
    and keeps the top_k candidates closest to all queries at once (the product of their cosine
    similarities, `rag.retrieval.follow_up.fuse_rankings`);
    `rag.retrieval.ConversationQueryExpander` adds the previous user question to a follow-up, so
    "and how do I run it?" finds what the conversation is about.

    Two limits no request can lift. `scope` (text or tree, e.g. `tenant == 'acme'`) is ANDed with
    whatever filter is in effect, so a request filter narrows the scope but never widens it. And
    documents written by `VectorStoreChatMemoryAdvisor` (marked `rag:kind = 'chat_memory'`) are never
    retrieved: `NOT` that marker is ANDed in too, as a tree, so no filter (`conversation_id == 'bob'`,
    an `OR` with something always true, a `NOT`) can bring another user's remembered turns back.
    The filter actually searched with is `search_request_for(request).filter`.

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> from rag.client import ChatClient
        >>> from rag.models import ExtractiveChatModel
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
        >>> client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store)])
        >>> response = client.prompt("When is the beacon lit?").call().response()
        >>> [d.id for d in response.documents]
        ['d1']
        >>> spec = client.prompt("When?").advisors(QuestionAnswerAdvisor.Params(similarity_threshold=0.99))
        >>> spec.call().response().documents
        []
        >>> hybrid = QuestionAnswerAdvisor(store, mode="hybrid", fusion="weighted", vector_weight=0.7)
        >>> hybrid.search_request.mode, hybrid.search_request.vector_weight
        ('hybrid', 0.7)
        >>> scoped = QuestionAnswerAdvisor(store, scope="source == 'beacon.md'")
        >>> str(scoped.effective_filter("lang == 'en'"))
        "(source == 'beacon.md') AND (lang == 'en') AND (NOT ('rag:kind' == 'chat_memory'))"
    """

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Params(SearchParams):
        """Per-request search settings of the `QuestionAnswerAdvisor` (see `rag.retrieval.SearchParams`).

        Example:
            >>> QuestionAnswerAdvisor.Params(top_k=3, filter="lang == 'en'").top_k
            3
        """

        aliases = {"qa_filter_expression": "filter"}  # noqa: RUF012  # a ClassVar of AdvisorParams

    order = QUESTION_ANSWER_ORDER

    def __init__(
        self,
        store: VectorStore,
        search_request: SearchRequest | None = None,
        template: str | PromptTemplate = DEFAULT_TEMPLATE,
        *,
        empty_template: str | PromptTemplate = DEFAULT_EMPTY_TEMPLATE,
        top_k: int | None = None,
        similarity_threshold: float | None = None,
        filter: str | Filter | None = None,
        scope: str | Filter | None = None,
        mode: SearchMode | None = None,
        fusion: Fusion | None = None,
        vector_weight: float | None = None,
        diversity: float | None = None,
        document_formatter: Callable[[int, Document], str] = format_document,
        expander: QueryExpander | None = None,
        order: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(order=order, name=name)
        self.store = store
        # The keywords are the same SearchParams a request may give, checked the same way.
        defaults = self.Params(
            top_k=top_k,
            similarity_threshold=similarity_threshold,
            filter=filter,
            mode=mode,
            fusion=fusion,
            vector_weight=vector_weight,
            diversity=diversity,
        )
        self.search_request = defaults.apply(search_request or SearchRequest("defaults"))
        self.scope = as_filter(scope)
        """The fixed scope every search stays inside (None: the whole store, chat memory excepted)."""
        self.template = _template(template, what="template")
        self.empty_template = _template(empty_template, what="empty_template")
        self.document_formatter = document_formatter
        self.expander = expander
        """Turns the question into several searches, then fused (None: one search)."""

    def search_request_for(self, request: ChatClientRequest) -> SearchRequest:
        """The search for one request: the user text, with the context's overrides over the defaults."""
        query = request.user_text
        if not query.strip():
            raise InvalidRequestError(
                f"{self.name} needs user text to retrieve with; the prompt has {query!r}"
            )
        search = self.search_request.replace(query=query)
        wanted = request.params.get(self.Params)
        if wanted is not None:
            search = wanted.apply(search)
        return search.replace(filter=self.effective_filter(search.filter))

    def effective_filter(self, filter: str | Filter | None) -> Filter:
        """`filter` (the default or a request's) confined to `scope`, chat-memory documents excluded.

        Built as a tree, never by pasting text, so nothing inside `filter` can undo either limit.
        """
        return scoped_filter(self.scope, filter)

    def retrieve(self, request: ChatClientRequest, search: SearchRequest) -> list[Document]:
        """The documents for `search`: one search, or one per query of the `expander`, fused.

        The expander sees the question with the messages before it (the conversation a chat memory
        advisor put into the prompt); every query is searched with the same settings and filter.
        """
        # One search: with the question's vector if an advisor before this one embedded it (memory
        # recall), else the store embeds it.
        if self.expander is None:
            return traced_search(
                self.store, with_shared_vector(request.context, self.store, search, embed=False)
            )
        messages = request.prompt.messages
        last = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=0)
        query = Query(search.query, messages[:last], request.context, request.params)
        queries = self.expander.expand(query)
        if len(queries) == 1 and queries[0].text == search.query:
            # Nothing to fuse: the one search as it is.
            return traced_search(
                self.store, with_shared_vector(request.context, self.store, search, embed=False)
            )
        # A wider page per search, so a passage both find need not be in both first pages.
        pool = search.top_k * _POOL
        # Every query embedded once, shared by its search and the fusion (and other advisors).
        texts = [q.text for q in queries]
        vectors = shared_query_vectors(request.context, self.store, texts)
        rankings = [
            traced_search(self.store, search.replace(query=text, top_k=pool).with_query_vector(vector))
            for text, vector in zip(texts, vectors, strict=True)
        ]
        candidates = list({d.id: d for ranking in rankings for d in ranking}.values())
        similarity = query_similarity(self.store, texts, candidates, vectors)
        return fuse_rankings(rankings, similarity, search.top_k)

    def render(self, query: str, documents: Sequence[Document]) -> str:
        """The user text the model receives for `query` and the retrieved `documents`."""
        if not documents:
            return self.empty_template.render(query=query)
        passages = "\n\n".join(self.document_formatter(i, doc) for i, doc in enumerate(documents, 1))
        return self.template.render(query=query, question_answer_context=passages)

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        search = self.search_request_for(request)
        documents = self.retrieve(request, search)
        request.context[RETRIEVED_DOCUMENTS] = documents
        return request.with_prompt(
            augment_user_message(request.prompt, self.render(search.query, documents), search.query)
        )


def augment_user_message(prompt: Prompt, text: str, question: str) -> Prompt:
    """The prompt with its last user message replaced by `text`, the original question kept in metadata."""
    messages = list(prompt.messages)
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, UserMessage):
            # Answerers such as ExtractiveChatModel read the question from here instead of parsing the text.
            metadata = {**message.metadata, "question": question}
            messages[i] = dataclasses.replace(message, text=text, metadata=metadata)
            break
    return prompt.with_messages(messages)
