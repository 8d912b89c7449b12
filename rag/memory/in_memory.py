"""`InMemoryChatMemoryRepository`: conversations in a dict, for tests, notebooks and short-lived apps."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from rag.chat.messages import Message
from rag.memory.base import as_message_list, check_conversation_id

__all__ = ["InMemoryChatMemoryRepository"]


class InMemoryChatMemoryRepository:
    """Messages per conversation in process memory; gone when the process ends. Thread-safe.

    Example:
        >>> from rag.chat import UserMessage
        >>> repo = InMemoryChatMemoryRepository()
        >>> repo.save_all("c1", [UserMessage("Hi")])
        >>> [m.text for m in repo.find("c1")], repo.find("other")
        (['Hi'], [])
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[str, tuple[Message, ...]] = {}

    def find(self, conversation_id: str) -> list[Message]:
        check_conversation_id(conversation_id)
        with self._lock:
            return list(self._conversations.get(conversation_id, ()))

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        check_conversation_id(conversation_id)
        items = tuple(as_message_list(messages))
        with self._lock:
            self._store(conversation_id, items)

    def update(self, conversation_id: str, change: Callable[[list[Message]], list[Message]]) -> None:
        check_conversation_id(conversation_id)
        with self._lock:
            current = list(self._conversations.get(conversation_id, ()))
            self._store(conversation_id, tuple(as_message_list(change(current))))

    def delete(self, conversation_id: str) -> None:
        check_conversation_id(conversation_id)
        with self._lock:
            self._conversations.pop(conversation_id, None)

    def conversation_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._conversations)

    def _store(self, conversation_id: str, items: tuple[Message, ...]) -> None:
        if items:
            self._conversations[conversation_id] = items
        else:
            self._conversations.pop(conversation_id, None)

    def __repr__(self) -> str:
        return f"InMemoryChatMemoryRepository(conversations={len(self._conversations)})"
