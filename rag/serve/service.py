"""`RagService`: what `rag serve` answers with, apart from HTTP: the chain of `rag ask`, memory, search.

One service per server. Each chat request builds a `ChatClient` over the shared store and model with the
same QuestionAnswerAdvisor as `rag ask`; with a conversation id, a `MessageChatMemoryAdvisor` over the
shared chat memory remembers the turns (server-side history), and only the request's system messages and
last user message are sent on; without one, the request's own messages are the history. With
`follow_up` N > 0 a follow-up question is also searched after the N user questions before it, and
the passages closest to both are kept (`rag.retrieval.ConversationQueryExpander`), as in `rag chat`.

Both the chat and `/v1/search` read the store through `rag.retrieval.DocumentsView`, as the commands
do: chat-memory turns written into the store never come back as documents, and a hit whose text nearly
repeats a better-ranked one is left out and the list filled from further down, unless `keep_duplicates`
(the server's `--keep-duplicates`; a `/v1/search` body may set it per request).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.chat.messages import ChatResponse, Message, Prompt, SystemMessage
from rag.chat.model import ChatModel
from rag.client import ChatClient, ChatClientResponse
from rag.client.aspecs import AsyncStreamResponseSpec
from rag.documents import Document, SearchRequest
from rag.errors import RagError
from rag.memory import ChatMemory, check_conversation_id
from rag.params import did_you_mean
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.follow_up import ConversationQueryExpander
from rag.retrieval.windows import ANSWER_WINDOW
from rag.serve.wire import ApiError, ChatRequest
from rag.vectorstore import VectorStore, asimilarity_search

__all__ = ["RagService", "Search"]


@dataclass
class RagService:
    """The store, chat model, default search and chat memory a server answers from.

    Example:
        >>> import asyncio
        >>> from rag import Document, HashingEmbedding
        >>> from rag.models import ExtractiveChatModel
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
        >>> service = RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))
        >>> [d.id for d in asyncio.run(service.search({"query": "beacon"}))]
        ['d1']
    """

    store: VectorStore
    model: ChatModel
    search_defaults: SearchRequest
    memory: ChatMemory | None = None
    system: str | None = None
    keep_duplicates: bool = False
    follow_up: int = 0
    _views: dict[bool, DocumentsView] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._views = {keep: DocumentsView(self.store, distinct=not keep) for keep in (False, True)}

    def documents(self, keep_duplicates: bool | None = None) -> DocumentsView:
        """The store as searches read it: documents only; each text once unless `keep_duplicates`
        (None: the service's setting)."""
        return self._views[self.keep_duplicates if keep_duplicates is None else keep_duplicates]

    def _client(self, conversation_id: str | None) -> ChatClient:
        expander = ConversationQueryExpander(self.follow_up) if self.follow_up else None
        advisors: list[Any] = [
            QuestionAnswerAdvisor(
                DocumentsView(self.store, distinct=not self.keep_duplicates, window=ANSWER_WINDOW),
                self.search_defaults,
                expander=expander,
            )
        ]
        if conversation_id is not None and self.memory is not None:
            advisors.append(MessageChatMemoryAdvisor(self.memory))
        return ChatClient(self.model, system=self.system, advisors=advisors)

    def _prompt(self, request: ChatRequest, conversation_id: str | None) -> Prompt:
        messages: list[Message] = request.messages
        if conversation_id is not None and self.memory is not None:
            # Memory holds the history: keep the caller's system text and the new question only.
            messages = [m for m in messages[:-1] if isinstance(m, SystemMessage)] + messages[-1:]
        return Prompt(messages, request.options)

    def _spec(self, request: ChatRequest, conversation_id: str | None) -> Any:
        # The extension fields are the QuestionAnswerAdvisor's Params: a bad value fails before any search.
        search = QuestionAnswerAdvisor.Params(**request.retrieval)
        checked = check_conversation_id(conversation_id) if conversation_id is not None else None
        spec = self._client(conversation_id).prompt(self._prompt(request, conversation_id))
        return spec.advisors(search, conversation_id=checked)

    async def answer(self, request: ChatRequest, conversation_id: str | None) -> ChatClientResponse:
        """The whole answer, through the advisor chain."""
        response: ChatClientResponse = await self._spec(request, conversation_id).acall().response()
        return response

    def stream(self, request: ChatRequest, conversation_id: str | None) -> AsyncStreamResponseSpec:
        """The answer as a stream (read it once with `chat_response()`; then `context` holds the sources)."""
        stream: AsyncStreamResponseSpec = self._spec(request, conversation_id).astream()
        return stream

    async def search(self, body: Any) -> list[Document]:
        """Retrieval alone: `search_request(body)`, then `run_search` (see them)."""
        return await self.run_search(self.search_request(body))

    def search_request(self, body: Any) -> Search:
        """A `/v1/search` body checked: `query`, optional `top_k`, `filter`, `mode`,
        `similarity_threshold`, `fusion`, `vector_weight`, `diversity`, `exact`, `keep_duplicates`.

        Synchronous, and it parses the filter: the server calls it in a worker thread.

        Raises:
            ApiError: an unknown field, a missing query or a value the search refuses; `param` names it.
        """
        if not isinstance(body, dict):
            raise ApiError("the request body must be a JSON object")
        unknown = sorted(set(body) - _SEARCH_FIELDS)
        if unknown:
            hint = did_you_mean(unknown[0], _SEARCH_FIELDS)
            raise ApiError(
                f"unknown field {unknown[0]!r}{hint}; a search takes {', '.join(sorted(_SEARCH_FIELDS))}",
                param=unknown[0],
            )
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ApiError(f"'query' must be a non-empty string, got {query!r:.60}", param="query")
        keep = body.get("keep_duplicates")
        if keep is not None and not isinstance(keep, bool):
            raise ApiError(
                f"'keep_duplicates' must be true or false, got {keep!r:.60}", param="keep_duplicates"
            )
        changes = {name: body[name] for name in sorted(_SEARCH_OPTIONS) if body.get(name) is not None}
        try:
            request = self.search_defaults.replace(query=query, **changes)
        except RagError as exc:
            culprit = self._culprit(changes)
            code = "invalid_filter" if culprit == "filter" else None
            raise ApiError(str(exc), param=culprit, code=code) from exc
        return Search(request, keep)

    def _culprit(self, changes: dict[str, Any]) -> str | None:
        """The one field the search refuses on its own, if there is one."""
        for name, value in changes.items():
            try:
                self.search_defaults.replace(**{name: value})
            except RagError:
                return name
        return None

    async def run_search(self, search: Search) -> list[Document]:
        """The documents a checked search finds (the store's work runs in a worker thread)."""
        return await asimilarity_search(self.documents(search.keep_duplicates), search.request)


@dataclass(frozen=True)
class Search:
    """A checked `/v1/search` request: the search, and whether near-duplicate texts are kept (None:
    the service's setting)."""

    request: SearchRequest
    keep_duplicates: bool | None = None


_SEARCH_OPTIONS = frozenset(
    {"top_k", "filter", "mode", "similarity_threshold", "fusion", "vector_weight", "diversity", "exact"}
)
_SEARCH_FIELDS = _SEARCH_OPTIONS | {"query", "keep_duplicates"}


async def stream_chunks(spec: AsyncStreamResponseSpec) -> AsyncIterator[ChatResponse]:
    """The `ChatResponse` chunks of a stream spec."""
    async for chunk in spec.chat_response():
        yield chunk
