"""Chat memory: what each conversation remembers, and where it is kept.

Example:
    >>> from rag.chat import UserMessage
    >>> from rag.memory import MessageWindowChatMemory
    >>> memory = MessageWindowChatMemory(max_messages=20)  # SQLiteChatMemoryRepository(path) to keep it
    >>> memory.add("c1", UserMessage("Hi"))
    >>> [m.text for m in memory.get("c1")]
    ['Hi']
"""

from rag.memory.base import ChatMemory, ChatMemoryRepository, check_conversation_id
from rag.memory.in_memory import InMemoryChatMemoryRepository
from rag.memory.postgres import PostgresChatMemoryRepository
from rag.memory.serialization import message_from_json, message_to_json
from rag.memory.sqlite import SQLiteChatMemoryRepository
from rag.memory.window import MessageWindowChatMemory, apply_window

__all__ = [
    "ChatMemory",
    "ChatMemoryRepository",
    "InMemoryChatMemoryRepository",
    "MessageWindowChatMemory",
    "PostgresChatMemoryRepository",
    "SQLiteChatMemoryRepository",
    "apply_window",
    "check_conversation_id",
    "message_from_json",
    "message_to_json",
]
