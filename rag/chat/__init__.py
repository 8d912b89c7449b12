"""Chat: messages (with images as `Media`), prompts, options, responses and the ChatModel protocol."""

from rag.chat.media import Media
from rag.chat.messages import (
    AssistantMessage,
    ChatOptions,
    ChatResponse,
    Message,
    Prompt,
    Role,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    Usage,
    UserMessage,
)
from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate

__all__ = [
    "AssistantMessage",
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "Media",
    "Message",
    "Prompt",
    "PromptTemplate",
    "Role",
    "SystemMessage",
    "ToolCall",
    "ToolDefinition",
    "ToolMessage",
    "Usage",
    "UserMessage",
]
