"""`MessageWindowChatMemory`: the newest messages of each conversation, the system message always kept."""

from __future__ import annotations

from collections.abc import Sequence

from rag.chat.messages import Message, SystemMessage, ToolMessage
from rag.errors import InvalidRequestError
from rag.memory.base import ChatMemoryRepository, as_message_list, check_conversation_id
from rag.memory.in_memory import InMemoryChatMemoryRepository

__all__ = ["MessageWindowChatMemory", "apply_window"]


def apply_window(messages: Sequence[Message], max_messages: int) -> list[Message]:
    """The messages a window of `max_messages` keeps, oldest first.

    At most one system message survives, the newest, and it goes first; it is never evicted and counts
    towards the limit. The other messages keep their order and the newest ones are kept. The window never
    starts with tool results whose assistant tool call was evicted: those results are dropped with it.

    Example:
        >>> from rag.chat import SystemMessage, UserMessage
        >>> window = apply_window([SystemMessage("Be brief."), *(UserMessage(str(i)) for i in range(5))], 3)
        >>> [m.text for m in window]
        ['Be brief.', '3', '4']
    """
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    others = [m for m in messages if not isinstance(m, SystemMessage)]
    head: list[Message] = [*systems[-1:]]
    room = max(max_messages - len(head), 0)
    start = len(others) - room if len(others) > room else 0
    # Tool results need the assistant message that called them right before; evict the orphans too.
    while start < len(others) and isinstance(others[start], ToolMessage):
        start += 1
    return [*head, *others[start:]]


class MessageWindowChatMemory:
    """Remembers the newest `max_messages` messages of each conversation in a repository.

    A new system message replaces the old one and is never evicted. A window never splits an assistant's
    tool calls from their results. Each `add` is one atomic update of the repository, so concurrent
    writers (threads, or processes sharing a SQLite file) never lose each other's messages.

    Example:
        >>> from rag.chat import AssistantMessage, SystemMessage, UserMessage
        >>> memory = MessageWindowChatMemory(max_messages=3)
        >>> memory.add("c1", [SystemMessage("Be brief."), UserMessage("Hi"), AssistantMessage("Hello!")])
        >>> memory.add("c1", [UserMessage("Bye")])
        >>> [m.text for m in memory.get("c1")]
        ['Be brief.', 'Hello!', 'Bye']

    Args:
        repository: where messages live; an `InMemoryChatMemoryRepository` when None (use
            `SQLiteChatMemoryRepository(path)` to keep them).
        max_messages: how many messages to keep per conversation (>= 1), system message included.
    """

    def __init__(self, repository: ChatMemoryRepository | None = None, *, max_messages: int = 20) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise InvalidRequestError(f"max_messages must be an integer >= 1, got {max_messages!r}")
        self._repository: ChatMemoryRepository = (
            repository if repository is not None else InMemoryChatMemoryRepository()
        )
        self._max_messages = max_messages

    @property
    def repository(self) -> ChatMemoryRepository:
        return self._repository

    @property
    def max_messages(self) -> int:
        return self._max_messages

    def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None:
        """Append messages to the conversation, then keep only the window."""
        check_conversation_id(conversation_id)
        new = as_message_list(messages)
        if not new:
            return
        limit = self._max_messages
        self._repository.update(conversation_id, lambda old: apply_window([*old, *new], limit))

    def get(self, conversation_id: str) -> list[Message]:
        """The remembered messages, oldest first (the system message, if any, first)."""
        check_conversation_id(conversation_id)
        return self._repository.find(conversation_id)

    def clear(self, conversation_id: str) -> None:
        """Forget the conversation."""
        check_conversation_id(conversation_id)
        self._repository.delete(conversation_id)

    def conversation_ids(self) -> list[str]:
        """The conversations that have messages, sorted."""
        return self._repository.conversation_ids()

    def __repr__(self) -> str:
        return f"MessageWindowChatMemory({self._repository!r}, max_messages={self._max_messages})"
