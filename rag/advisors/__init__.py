"""Advisors: the contracts and the advisors that ship with the toolkit, one per module.

Example:
    >>> from rag.advisors import SafeGuardAdvisor, SimpleLoggerAdvisor
    >>> [a.name for a in (SafeGuardAdvisor(["secret"]), SimpleLoggerAdvisor(name="log"))]
    ['SafeGuardAdvisor', 'log']
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.advisors.base import (
    CHAT_MEMORY_ORDER,
    DEFAULT_ORDER,
    HIGHEST_PRECEDENCE,
    LOGGER_ORDER,
    LOWEST_PRECEDENCE,
    QUESTION_ANSWER_ORDER,
    SAFEGUARD_ORDER,
    TOOL_CALLING_ORDER,
    Advisor,
    AnyAdvisor,
    AsyncCallAdvisor,
    AsyncStreamAdvisor,
    BaseAdvisor,
    CallAdvisor,
    StreamAdvisor,
)
from rag.advisors.logger import SimpleLoggerAdvisor
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.memory_prompt import PromptChatMemoryAdvisor
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.advisors.retrieval_augmentation import RetrievalAugmentationAdvisor
from rag.advisors.safeguard import SafeGuardAdvisor

if TYPE_CHECKING:
    from rag.advisors.tool_call import RETURN_DIRECT, ToolCallAdvisor

__all__ = [
    "CHAT_MEMORY_ORDER",
    "DEFAULT_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOGGER_ORDER",
    "LOWEST_PRECEDENCE",
    "QUESTION_ANSWER_ORDER",
    "RETURN_DIRECT",
    "SAFEGUARD_ORDER",
    "TOOL_CALLING_ORDER",
    "Advisor",
    "AnyAdvisor",
    "AsyncCallAdvisor",
    "AsyncStreamAdvisor",
    "BaseAdvisor",
    "CallAdvisor",
    "MessageChatMemoryAdvisor",
    "PromptChatMemoryAdvisor",
    "QuestionAnswerAdvisor",
    "RetrievalAugmentationAdvisor",
    "SafeGuardAdvisor",
    "SimpleLoggerAdvisor",
    "StreamAdvisor",
    "ToolCallAdvisor",
    "VectorStoreChatMemoryAdvisor",
]

# Their modules import httpx or pydantic: loaded on first use (see rag._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "RETURN_DIRECT": "rag.advisors.tool_call",
        "ToolCallAdvisor": "rag.advisors.tool_call",
    },
)
