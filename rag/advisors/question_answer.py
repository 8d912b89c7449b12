"""`QuestionAnswerAdvisor`: retrieves documents for the user's question and puts them into the prompt."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rag.advisors.base import QUESTION_ANSWER_ORDER, BaseAdvisor
from rag.advisors.memory_vector import MEMORY_MARKER
from rag.chat.messages import Prompt, UserMessage
from rag.chat.template import PromptTemplate
from rag.citations import citation
from rag.client.request import (
    DIVERSITY,
    FILTER_EXPRESSION,
    FUSION,
    RETRIEVED_DOCUMENTS,
    SEARCH_MODE,
    SIMILARITY_THRESHOLD,
    TOP_K,
    VECTOR_WEIGHT,
    ChatClientRequest,
)
from rag.client.response import ChatClientResponse
from rag.documents import Document, Fusion, SearchMode, SearchRequest
from rag.errors import InvalidRequestError, TemplateError
from rag.filters import Filter, as_filter
from rag.observability.steps import traced_search
from rag.vectorstore import VectorStore

if TYPE_CHECKING:
    from rag.client.chain import AdvisorChain

__all__ = [
    "DEFAULT_EMPTY_TEMPLATE",
    "DEFAULT_TEMPLATE",
    "REQUEST_OVERRIDES",
    "QuestionAnswerAdvisor",
    "augment_user_message",
    "format_document",
    "scoped_filter",
]

REQUEST_OVERRIDES: tuple[tuple[str, str], ...] = (
    (TOP_K, "top_k"),
    (SIMILARITY_THRESHOLD, "similarity_threshold"),
    (FILTER_EXPRESSION, "filter"),
    (SEARCH_MODE, "mode"),
    (FUSION, "fusion"),
    (VECTOR_WEIGHT, "vector_weight"),
    (DIVERSITY, "diversity"),
)
"""(context key, `SearchRequest` field): what a single request may override, here and in
`VectorStoreDocumentRetriever` (the filter is confined to the scope afterwards)."""

_RULE = "-" * 21

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


def format_document(number: int, document: Document) -> str:
    """One passage as the templates show it: `[n] (source: S, page P)` on a line, then the text.

    S is `rag.citations.citation` (`corpus.jsonl#12209494` for a JSON Lines record), else the id."""
    source = citation(document) or document.id
    page = document.metadata.get("page")
    where = f"source: {source}" if page is None else f"source: {source}, page {page}"
    return f"[{number}] ({where})\n{document.text}"


def scoped_filter(scope: str | Filter | None, filter: str | Filter | None) -> Filter:
    """`scope AND filter AND NOT chat-memory`: what every document search of the advisors runs with.

    `QuestionAnswerAdvisor.effective_filter` and `VectorStoreDocumentRetriever` share it, so both keep
    chat memory out and stay inside their scope the same way, whatever `filter` (a request's) holds.

    Example:
        >>> str(scoped_filter(None, "lang == 'en'"))
        "(lang == 'en') AND (NOT ('rag:kind' == 'chat_memory'))"
    """
    parts = [part for part in (as_filter(scope), as_filter(filter)) if part is not None]
    parts.append(~MEMORY_MARKER)
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part
    return combined


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
    when nothing matched. After it, the reply's metadata and the context hold the documents under
    `qa_retrieved_documents` (ids, scores, and sources and pages in their metadata).

    `search_request` gives the defaults (its query is ignored); `top_k`, `similarity_threshold`, `filter`,
    `mode` ("vector", "lexical" or "hybrid"), `fusion` ("rrf" or "weighted"), `vector_weight` and
    `diversity` (MMR) override it. Per request, the context keys `qa_top_k`, `qa_similarity_threshold`,
    `qa_filter_expression` (text or tree), `qa_search_mode`, `qa_fusion`, `qa_vector_weight` and
    `qa_diversity` win (`.advisors(top_k=..., filter=..., mode=..., diversity=...)` sets them); a request
    filter *replaces* the default one. Bad values raise `InvalidRequestError` naming the field.

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
        >>> response = client.prompt("When is the beacon lit?").call().chat_response()
        >>> [d.id for d in response.metadata["qa_retrieved_documents"]]
        ['d1']
        >>> hybrid = QuestionAnswerAdvisor(store, mode="hybrid", fusion="weighted", vector_weight=0.7)
        >>> hybrid.search_request.mode, hybrid.search_request.vector_weight
        ('hybrid', 0.7)
        >>> scoped = QuestionAnswerAdvisor(store, scope="source == 'beacon.md'")
        >>> str(scoped.effective_filter("lang == 'en'"))
        "(source == 'beacon.md') AND (lang == 'en') AND (NOT ('rag:kind' == 'chat_memory'))"
    """

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
        order: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(order=order, name=name)
        self.store = store
        base = search_request or SearchRequest("defaults")
        changes: dict[str, Any] = {
            "top_k": top_k,
            "similarity_threshold": similarity_threshold,
            "filter": filter,
            "mode": mode,
            "fusion": fusion,
            "vector_weight": vector_weight,
            "diversity": diversity,
        }
        self.search_request = base.replace(**{k: v for k, v in changes.items() if v is not None})
        self.scope = as_filter(scope)
        """The fixed scope every search stays inside (None: the whole store, chat memory excepted)."""
        self.template = _template(template, what="template")
        self.empty_template = _template(empty_template, what="empty_template")
        self.document_formatter = document_formatter

    def search_request_for(self, request: ChatClientRequest) -> SearchRequest:
        """The search for one request: the user text, with the context's overrides over the defaults."""
        query = request.user_text
        if not query.strip():
            raise InvalidRequestError(
                f"{self.name} needs user text to retrieve with; the prompt has {query!r}"
            )
        context = request.context
        changes: dict[str, Any] = {"query": query}
        for key, field in REQUEST_OVERRIDES:
            if context.get(key) is not None:
                changes[field] = context[key]
        search = self.search_request.replace(**changes)
        return search.replace(filter=self.effective_filter(search.filter))

    def effective_filter(self, filter: str | Filter | None) -> Filter:
        """`filter` (the default or a request's) confined to `scope`, chat-memory documents excluded.

        Built as a tree, never by pasting text, so nothing inside `filter` can undo either limit.
        """
        return scoped_filter(self.scope, filter)

    def render(self, query: str, documents: Sequence[Document]) -> str:
        """The user text the model receives for `query` and the retrieved `documents`."""
        if not documents:
            return self.empty_template.render(query=query)
        passages = "\n\n".join(self.document_formatter(i, doc) for i, doc in enumerate(documents, 1))
        return self.template.render(query=query, question_answer_context=passages)

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        search = self.search_request_for(request)
        documents = traced_search(self.store, search)
        request.context[RETRIEVED_DOCUMENTS] = documents
        return request.with_prompt(
            augment_user_message(request.prompt, self.render(search.query, documents), search.query)
        )

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        documents = response.context.get(RETRIEVED_DOCUMENTS, [])
        return response.with_metadata(**{RETRIEVED_DOCUMENTS: documents})


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
