"""rag-advisors: retrieval-augmented generation built around vector-store-backed advisors.

Example:
    >>> from rag import Document, SearchRequest, HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("1", "Chroma keeps vectors on disk", {"source": "a.md"})])
    >>> [d.id for d in store.similarity_search(SearchRequest("where are vectors kept", top_k=1))]
    ['1']
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.advisors import (
    BaseAdvisor,
    MessageChatMemoryAdvisor,
    PromptChatMemoryAdvisor,
    QuestionAnswerAdvisor,
    RetrievalAugmentationAdvisor,
    SafeGuardAdvisor,
    SimpleLoggerAdvisor,
    VectorStoreChatMemoryAdvisor,
)
from rag.chat import (
    AssistantMessage,
    ChatModel,
    ChatOptions,
    ChatResponse,
    Media,
    Prompt,
    PromptTemplate,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from rag.client import ChatClient, ChatClientRequest, ChatClientResponse
from rag.config import Settings
from rag.documents import Document, SearchRequest
from rag.embeddings import EmbeddingModel, HashingEmbedding, SentenceTransformerEmbedding
from rag.errors import RagError
from rag.memory import (
    ChatMemory,
    ChatMemoryRepository,
    InMemoryChatMemoryRepository,
    MessageWindowChatMemory,
    PostgresChatMemoryRepository,
    SQLiteChatMemoryRepository,
)
from rag.models import ExtractiveChatModel
from rag.tools import ToolContext
from rag.vectorstore import Capabilities, VectorStore

if TYPE_CHECKING:
    from rag.advisors import ToolCallAdvisor
    from rag.embeddings import OpenAIEmbedding
    from rag.mcp import McpTools
    from rag.models import OpenAIChatModel
    from rag.tools import Tool, ToolCallingManager, tool

__all__ = [
    "AssistantMessage",
    "BaseAdvisor",
    "Capabilities",
    "ChatClient",
    "ChatClientRequest",
    "ChatClientResponse",
    "ChatMemory",
    "ChatMemoryRepository",
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "Document",
    "EmbeddingModel",
    "ExtractiveChatModel",
    "HashingEmbedding",
    "InMemoryChatMemoryRepository",
    "McpTools",
    "Media",
    "MessageChatMemoryAdvisor",
    "MessageWindowChatMemory",
    "OpenAIChatModel",
    "OpenAIEmbedding",
    "PostgresChatMemoryRepository",
    "Prompt",
    "PromptChatMemoryAdvisor",
    "PromptTemplate",
    "QuestionAnswerAdvisor",
    "RagError",
    "RetrievalAugmentationAdvisor",
    "SQLiteChatMemoryRepository",
    "SafeGuardAdvisor",
    "SearchRequest",
    "SentenceTransformerEmbedding",
    "Settings",
    "SimpleLoggerAdvisor",
    "SystemMessage",
    "Tool",
    "ToolCallAdvisor",
    "ToolCallingManager",
    "ToolContext",
    "ToolMessage",
    "UserMessage",
    "VectorStore",
    "VectorStoreChatMemoryAdvisor",
    "tool",
]

# Their modules import httpx or pydantic: loaded on first use, so `import rag` stays light (rag._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "McpTools": "rag.mcp.client",
        "OpenAIChatModel": "rag.models.openai",
        "OpenAIEmbedding": "rag.embeddings.openai",
        "Tool": "rag.tools.decorator",
        "ToolCallAdvisor": "rag.advisors.tool_call",
        "ToolCallingManager": "rag.tools.manager",
        "tool": "rag.tools.decorator",
    },
)
