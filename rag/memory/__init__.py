"""Chat memory: what each conversation remembers, and where it is kept.

Example:
    >>> from rag.chat import UserMessage
    >>> from rag.memory import MessageWindowChatMemory
    >>> memory = MessageWindowChatMemory(max_messages=20)  # SQLiteChatMemoryRepository(path) to keep it
    >>> memory.add("c1", UserMessage("Hi"))
    >>> [m.text for m in memory.get("c1")]
    ['Hi']

`find_legacy_turns` and `mark_legacy_turns` repair a store holding `VectorStoreChatMemoryAdvisor` turns
written before the memory marker existed (`rag.memory.legacy_turns`).
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.memory.base import ChatMemory, ChatMemoryRepository, check_conversation_id
from rag.memory.in_memory import InMemoryChatMemoryRepository
from rag.memory.postgres import PostgresChatMemoryRepository
from rag.memory.serialization import message_from_json, message_to_json
from rag.memory.sqlite import SQLiteChatMemoryRepository
from rag.memory.window import MessageWindowChatMemory, apply_window

if TYPE_CHECKING:
    from rag.memory.legacy_turns import find_legacy_turns, mark_legacy_turns

__all__ = [
    "ChatMemory",
    "ChatMemoryRepository",
    "InMemoryChatMemoryRepository",
    "MessageWindowChatMemory",
    "PostgresChatMemoryRepository",
    "SQLiteChatMemoryRepository",
    "apply_window",
    "check_conversation_id",
    "find_legacy_turns",
    "mark_legacy_turns",
    "message_from_json",
    "message_to_json",
]

# Loaded on first use: the repair reads the memory marker from rag.retrieval, which plain memory never needs.
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {"find_legacy_turns": "rag.memory.legacy_turns", "mark_legacy_turns": "rag.memory.legacy_turns"},
)
