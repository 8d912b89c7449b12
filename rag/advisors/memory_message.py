"""`MessageChatMemoryAdvisor`: the conversation's history as messages before the new user message."""

from __future__ import annotations

from rag.advisors.memory import ChatMemoryAdvisor
from rag.advisors.request import ChatClientRequest
from rag.chat.messages import AssistantMessage, Message, SystemMessage
from rag.memory.base import ChatMemory

__all__ = ["MessageChatMemoryAdvisor"]


class MessageChatMemoryAdvisor(ChatMemoryAdvisor):
    """Sends the remembered messages of the conversation, then records the new turn in `memory`.

    The prompt becomes: its system message (or the remembered one when it has none), the remembered
    messages, then the new messages. Once the reply is complete, the new messages and the reply are added
    to `memory` in one write. The conversation id comes from the request: `.advisors(conversation_id=...)`.
    Runs at `CHAT_MEMORY_ORDER`, before retrieval, so the QuestionAnswerAdvisor sees the user's own text.

    Example:
        >>> from rag.client import ChatClient
        >>> from rag.memory import MessageWindowChatMemory
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(["Hello Ana!", "Your name is Ana."])
        >>> client = ChatClient(model, advisors=[MessageChatMemoryAdvisor(MessageWindowChatMemory())])
        >>> _ = client.prompt("I am Ana.").advisors(conversation_id="c1").call().content()
        >>> _ = client.prompt("Who am I?").advisors(conversation_id="c1").call().content()
        >>> [m.text for m in model.prompts[1].messages]
        ['I am Ana.', 'Hello Ana!', 'Who am I?']
    """

    def __init__(self, memory: ChatMemory, *, order: int | None = None, name: str | None = None) -> None:
        super().__init__(order=order, name=name)
        self.memory = memory

    def augment(self, request: ChatClientRequest, conversation_id: str) -> ChatClientRequest:
        history = self.memory.get(conversation_id)
        if not history:
            return request
        messages = request.prompt.messages
        # The request's own system message wins; otherwise the one remembered last.
        source = messages if any(isinstance(m, SystemMessage) for m in messages) else history
        systems = [m for m in source if isinstance(m, SystemMessage)][-1:]
        remembered = [m for m in history if not isinstance(m, SystemMessage)]
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        return request.with_prompt(request.prompt.with_messages([*systems, *remembered, *rest]))

    def remember(self, conversation_id: str, new_messages: list[Message], reply: AssistantMessage) -> None:
        self.memory.add(conversation_id, [*new_messages, reply])
