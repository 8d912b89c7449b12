"""`ChatClientResponse`: a model reply plus the context of the request that produced it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rag.advisors.request import retrieved_documents
from rag.chat.messages import ChatResponse
from rag.documents import Document

__all__ = ["ChatClientResponse"]


@dataclass(frozen=True, slots=True)
class ChatClientResponse:
    """A `ChatResponse` (in a stream: one chunk) with the request's context dict.

    Example:
        >>> from rag.chat import AssistantMessage, ChatResponse
        >>> response = ChatClientResponse(ChatResponse(AssistantMessage("Paris.")), {"rag.model_calls": 1})
        >>> response.text, response.context["rag.model_calls"]
        ('Paris.', 1)
    """

    chat_response: ChatResponse
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def documents(self) -> list[Document]:
        """The documents the retrieving advisor (`QuestionAnswerAdvisor`, `RetrievalAugmentationAdvisor`)
        found for this request, best first, with their scores; [] when none ran or nothing matched.

        Example:
            >>> from rag.chat import AssistantMessage, ChatResponse
            >>> ChatClientResponse(ChatResponse(AssistantMessage("No idea."))).documents
            []
        """
        return retrieved_documents(self.context)

    @property
    def text(self) -> str:
        """The reply text ("" when the model only called tools)."""
        return self.chat_response.text

    def with_chat_response(self, chat_response: ChatResponse) -> ChatClientResponse:
        """A response with another `ChatResponse` and the same context."""
        return ChatClientResponse(chat_response, self.context)

    def with_metadata(self, **items: Any) -> ChatClientResponse:
        """A response whose `ChatResponse` has these metadata entries added."""
        return ChatClientResponse(self.chat_response.with_metadata(**items), self.context)

    def replace_text(self, text: str) -> ChatClientResponse:
        """A response whose message text is `text` (tool calls and metadata kept)."""
        message = dataclasses.replace(self.chat_response.message, text=text)
        return self.with_chat_response(dataclasses.replace(self.chat_response, message=message))
