"""Advisors: the contract, the chain that runs them, and every advisor that ships, one per module.

The contract (`Advisor`, `CallAdvisor`, `StreamAdvisor`, `BaseAdvisor`, the orders) and the chain
(`AdvisorChain`, `AsyncAdvisorChain`) speak `ChatClientRequest` and `ChatClientResponse`, defined here
too; `rag.client` builds on this package and re-exports what its users need.

Example:
    >>> from rag.advisors import SafeGuardAdvisor, SimpleLoggerAdvisor
    >>> [a.name for a in (SafeGuardAdvisor(["secret"]), SimpleLoggerAdvisor(name="log"))]
    ['SafeGuardAdvisor', 'log']
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.advisors.achain import AsyncAdvisorChain
from rag.advisors.aggregate import aggregate_chunks
from rag.advisors.base import (
    AnyAdvisor,
    AsyncCallAdvisor,
    AsyncStreamAdvisor,
    BaseAdvisor,
    CallAdvisor,
    StreamAdvisor,
)
from rag.advisors.chain import AdvisorChain
from rag.advisors.logger import SimpleLoggerAdvisor
from rag.advisors.memory import ChatMemoryAdvisor
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.memory_prompt import PromptChatMemoryAdvisor
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.advisors.observation import ObservationEvent, Observer, Timing
from rag.advisors.orders import (
    CHAT_MEMORY_ORDER,
    DEFAULT_ORDER,
    HIGHEST_PRECEDENCE,
    LOGGER_ORDER,
    LOWEST_PRECEDENCE,
    MODEL_CALL_ORDER,
    QUESTION_ANSWER_ORDER,
    SAFEGUARD_ORDER,
    TOOL_CALLING_ORDER,
    Advisor,
)
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.advisors.request import ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.advisors.retrieval_augmentation import RetrievalAugmentationAdvisor
from rag.advisors.safeguard import SafeGuardAdvisor
from rag.params import AdvisorParams, ParamSet

if TYPE_CHECKING:
    from rag.advisors.tool_call import RETURN_DIRECT, ToolCallAdvisor

__all__ = [
    "CHAT_MEMORY_ORDER",
    "DEFAULT_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOGGER_ORDER",
    "LOWEST_PRECEDENCE",
    "MODEL_CALL_ORDER",
    "QUESTION_ANSWER_ORDER",
    "RETURN_DIRECT",
    "SAFEGUARD_ORDER",
    "TOOL_CALLING_ORDER",
    "Advisor",
    "AdvisorChain",
    "AdvisorParams",
    "AnyAdvisor",
    "AsyncAdvisorChain",
    "AsyncCallAdvisor",
    "AsyncStreamAdvisor",
    "BaseAdvisor",
    "CallAdvisor",
    "ChatClientRequest",
    "ChatClientResponse",
    "ChatMemoryAdvisor",
    "MessageChatMemoryAdvisor",
    "ObservationEvent",
    "Observer",
    "ParamSet",
    "PromptChatMemoryAdvisor",
    "QuestionAnswerAdvisor",
    "RetrievalAugmentationAdvisor",
    "SafeGuardAdvisor",
    "SimpleLoggerAdvisor",
    "StreamAdvisor",
    "Timing",
    "ToolCallAdvisor",
    "VectorStoreChatMemoryAdvisor",
    "aggregate_chunks",
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
