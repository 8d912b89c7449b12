"""`ChatClientRequest`: the prompt, the request's typed parameters and its context, down the advisor chain.

Per-request settings travel as typed parameter objects (`QuestionAnswerAdvisor.Params(top_k=3)`) in
`request.params`, a `rag.params.ParamSet` in which each advisor finds its own class. The context dict
carries what is not an advisor setting: the conversation id (shared by every memory advisor), and what
advisors record for each other and for the caller (retrieved documents, timings, usage), under the key
names below. `ChatClientResponse.documents` reads the retrieved documents back.

Example:
    >>> from rag.chat import Prompt
    >>> request = ChatClientRequest(Prompt("What is RAG?"), {CONVERSATION_ID: "c1"})
    >>> request.with_prompt(request.prompt.augment_user("What is RAG, briefly?")).context[CONVERSATION_ID]
    'c1'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.chat.messages import Prompt
from rag.documents import Document
from rag.params import ParamSet

__all__ = [
    "CONVERSATION_ID",
    "MODEL_CALLS",
    "OUTPUT_FORMAT",
    "OUTPUT_VALIDATOR",
    "RETRIEVED_DOCUMENTS",
    "SAFEGUARD_BLOCKED",
    "TIMINGS",
    "TOOLS",
    "USAGE",
    "ChatClientRequest",
    "retrieved_documents",
]

# -- keys set by the caller ------------------------------------------------------------------------
CONVERSATION_ID = "conversation_id"
"""The conversation a request belongs to (memory advisors require it): `.advisors(conversation_id=...)`."""
TOOLS = "rag.tools"
"""The tool objects given with `.tools(...)` (their definitions also go into the options)."""

# -- keys set by the client and the advisors -------------------------------------------------------
RETRIEVED_DOCUMENTS = "rag.retrieved_documents"
"""The documents a retrieving advisor found; read them with `ChatClientResponse.documents`."""
SAFEGUARD_BLOCKED = "safeguard_blocked"
"""The sensitive term that made the SafeGuardAdvisor block a request."""
TIMINGS = "rag.timings"
"""A list of `Timing(name, seconds)`: each advisor step's own time and each model call's time."""
USAGE = "rag.usage"
"""The token `Usage` summed over every model call of the request."""
MODEL_CALLS = "rag.model_calls"
"""How many times the model was called for the request."""
OUTPUT_FORMAT = "rag.output_format"
"""Instructions the terminal step appends to the user text (structured output); advisors see clean text."""
OUTPUT_VALIDATOR = "rag.output_validator"
"""A function of the reply text returning an error message or None; one corrective retry when invalid."""


def retrieved_documents(context: Mapping[str, Any]) -> list[Document]:
    """The documents a retrieving advisor recorded in a request's context ([] when none did)."""
    return list(context.get(RETRIEVED_DOCUMENTS, ()))


@dataclass(frozen=True, slots=True)
class ChatClientRequest:
    """A prompt on its way to the model, with the request's context and typed parameters.

    The context is one mutable dict shared by every request and response of a single client call (including
    tool rounds and retries), so what an advisor stores there is visible to the others and to the caller.
    `params` holds the advisors' per-request parameters; an advisor reads its own with
    `request.params.get(MyAdvisor.Params)`.

    Example:
        >>> from rag.chat import Prompt
        >>> request = ChatClientRequest(Prompt("Hi"))
        >>> request.context["seen"] = True
        >>> request.with_prompt(Prompt("Hello")).context
        {'seen': True}
    """

    prompt: Prompt
    context: dict[str, Any] = field(default_factory=dict)
    params: ParamSet = field(default_factory=ParamSet)

    def with_prompt(self, prompt: Prompt) -> ChatClientRequest:
        """A request with another prompt, the same context and parameters."""
        return ChatClientRequest(prompt, self.context, self.params)

    @property
    def user_text(self) -> str:
        """The text of the last user message ("" when there is none)."""
        return self.prompt.user_text
