"""The chat memory contracts: `ChatMemory` (what advisors use) and `ChatMemoryRepository` (storage).

A `ChatMemory` decides *which* messages of a conversation to keep (for example the newest twenty); a
`ChatMemoryRepository` only stores them. Conversation ids are opaque text: any non-empty string is a
valid id and is only ever compared for equality, never pasted into a query or a filter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from rag.chat.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from rag.errors import InvalidRequestError

__all__ = ["ChatMemory", "ChatMemoryRepository", "as_message_list", "check_conversation_id"]

_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage)


def check_conversation_id(conversation_id: object) -> str:
    """The id itself if it is usable: a non-empty str that UTF-8 can encode (no lone surrogates).

    Raises:
        InvalidRequestError: anything else; the message quotes the id.
    """
    if not isinstance(conversation_id, str) or not conversation_id:
        raise InvalidRequestError(f"a conversation id must be a non-empty str, got {conversation_id!r}")
    try:
        conversation_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(
            f"conversation id {conversation_id[:80]!r} is not valid Unicode text (lone surrogate)"
        ) from exc
    return conversation_id


def as_message_list(messages: Message | Sequence[Message]) -> list[Message]:
    """One message or a sequence of them, as a checked list.

    Raises:
        InvalidRequestError: an item that is not a chat message.
    """
    items = [messages] if isinstance(messages, _MESSAGE_TYPES) else list(messages)
    for item in items:
        if not isinstance(item, _MESSAGE_TYPES):
            raise InvalidRequestError(f"chat memory stores chat messages, got {item!r}")
    return items


@runtime_checkable
class ChatMemory(Protocol):
    """The messages of each conversation that a chat should remember.

    - `add(conversation_id, messages)` records messages (one or a sequence) at the end of the
      conversation; the memory may then forget older ones (see `MessageWindowChatMemory`).
    - `get(conversation_id)` returns what is remembered, oldest first ([] for an unknown id).
    - `clear(conversation_id)` forgets the conversation; `conversation_ids()` lists those with messages.
    - Conversations never see each other's messages, whatever characters their ids hold; an empty or
      non-str id is an `InvalidRequestError`. Implementations are safe to call from many threads.

    Example:
        >>> from rag.chat import UserMessage
        >>> from rag.memory import MessageWindowChatMemory
        >>> memory: ChatMemory = MessageWindowChatMemory()
        >>> memory.add("c1", UserMessage("Hi"))
        >>> memory.get("c1"), memory.get("c2")
        ([UserMessage(text='Hi', metadata={}, media=(), role=<Role.USER: 'user'>)], [])
    """

    def add(self, conversation_id: str, messages: Message | Sequence[Message]) -> None: ...

    def get(self, conversation_id: str) -> list[Message]: ...

    def clear(self, conversation_id: str) -> None: ...

    def conversation_ids(self) -> list[str]: ...


@runtime_checkable
class ChatMemoryRepository(Protocol):
    """Storage for the messages of each conversation; it keeps exactly what it is given.

    - `find(conversation_id)` returns the stored messages in order ([] for an unknown id).
    - `save_all(conversation_id, messages)` replaces the conversation's messages (an empty list deletes it).
    - `update(conversation_id, change)` replaces the messages with `change(current)` atomically: no other
      writer, thread or (for files) process, can slip in between the read and the write.
    - `delete(conversation_id)` removes the conversation; `conversation_ids()` lists the stored ones, sorted.
    - Messages come back equal to what was saved, tool calls and metadata included.

    Example:
        >>> from rag.chat import UserMessage
        >>> from rag.memory import InMemoryChatMemoryRepository
        >>> repo: ChatMemoryRepository = InMemoryChatMemoryRepository()
        >>> repo.save_all("c1", [UserMessage("Hi")])
        >>> repo.update("c1", lambda old: [*old, UserMessage("Again")])
        >>> [m.text for m in repo.find("c1")], repo.conversation_ids()
        (['Hi', 'Again'], ['c1'])
    """

    def find(self, conversation_id: str) -> list[Message]: ...

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None: ...

    def update(self, conversation_id: str, change: Callable[[list[Message]], list[Message]]) -> None: ...

    def delete(self, conversation_id: str) -> None: ...

    def conversation_ids(self) -> list[str]: ...
