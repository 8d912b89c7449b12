"""The chat client and its advisor chain.

Example:
    >>> from rag.client import ChatClient
    >>> from rag.testing import FakeChatModel
    >>> ChatClient(FakeChatModel(default="Hi!")).prompt("Hello").call().content()
    'Hi!'
"""

from rag.client.achain import AsyncAdvisorChain
from rag.client.aggregate import aggregate_chunks
from rag.client.aspecs import AsyncCallResponseSpec, AsyncStreamResponseSpec
from rag.client.chain import (
    DEFAULT_ORDER,
    HIGHEST_PRECEDENCE,
    LOWEST_PRECEDENCE,
    MODEL_CALL_ORDER,
    AdvisorChain,
)
from rag.client.client import ChatClient, ChatClientRequestSpec
from rag.client.observation import ObservationEvent, Observer, Timing
from rag.client.request import ChatClientRequest
from rag.client.response import ChatClientResponse
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
