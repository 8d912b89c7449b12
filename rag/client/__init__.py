"""The chat client: a fluent request spec over the advisor chain of `rag.advisors` (re-exported here).

Example:
    >>> from rag.client import ChatClient
    >>> from rag.testing import FakeChatModel
    >>> ChatClient(FakeChatModel(default="Hi!")).prompt("Hello").call().content()
    'Hi!'
"""

from rag.advisors import (
    DEFAULT_ORDER,
    HIGHEST_PRECEDENCE,
    LOWEST_PRECEDENCE,
    MODEL_CALL_ORDER,
    AdvisorChain,
    AsyncAdvisorChain,
    ChatClientRequest,
    ChatClientResponse,
    ObservationEvent,
    Observer,
    Timing,
    aggregate_chunks,
)
from rag.client.aspecs import AsyncCallResponseSpec, AsyncStreamResponseSpec
from rag.client.client import ChatClient, ChatClientRequestSpec
from rag.client.specs import CallResponseSpec, StreamResponseSpec

__all__ = [
    "DEFAULT_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOWEST_PRECEDENCE",
    "MODEL_CALL_ORDER",
    "AdvisorChain",
    "AsyncAdvisorChain",
    "AsyncCallResponseSpec",
    "AsyncStreamResponseSpec",
    "CallResponseSpec",
    "ChatClient",
    "ChatClientRequest",
    "ChatClientRequestSpec",
    "ChatClientResponse",
    "ObservationEvent",
    "Observer",
    "StreamResponseSpec",
    "Timing",
    "aggregate_chunks",
]
