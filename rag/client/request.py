"""`ChatClientRequest`: the prompt plus a context dict, as it travels down the advisor chain.

The context carries per-request data from the caller to the advisors (a conversation id, a filter, a top-k)
and from advisors to each other and to the caller (retrieved documents, timings, usage). The key names are
the constants below; `ChatClientRequestSpec.advisors(conversation_id=..., top_k=..., filter=..., mode=...)`
sets them.

Example:
    >>> from rag.chat import Prompt
    >>> request = ChatClientRequest(Prompt("What is RAG?"), {FILTER_EXPRESSION: "year > 2020"})
    >>> request.with_prompt(request.prompt.augment_user("What is RAG, briefly?")).context[FILTER_EXPRESSION]
    'year > 2020'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.chat.messages import Prompt

__all__ = [
    "CONVERSATION_ID",
    "DIVERSITY",
    "FILTER_EXPRESSION",
    "FUSION",
    "MODEL_CALLS",
    "OUTPUT_FORMAT",
    "OUTPUT_VALIDATOR",
    "PARAM_ALIASES",
    "RETRIEVED_DOCUMENTS",
    "SAFEGUARD_BLOCKED",
    "SEARCH_MODE",
    "SIMILARITY_THRESHOLD",
    "TIMINGS",
    "TOOLS",
    "TOP_K",
    "USAGE",
    "VECTOR_WEIGHT",
    "ChatClientRequest",
    "context_entries",
]

# -- keys set by the caller ------------------------------------------------------------------------
CONVERSATION_ID = "conversation_id"
"""The conversation a request belongs to (chat memory advisors require it)."""
FILTER_EXPRESSION = "qa_filter_expression"
"""A filter (text or tree) that replaces the QuestionAnswerAdvisor's default filter for one request."""
TOP_K = "qa_top_k"
"""How many documents the QuestionAnswerAdvisor retrieves for one request."""
SIMILARITY_THRESHOLD = "qa_similarity_threshold"
"""The QuestionAnswerAdvisor's similarity threshold for one request."""
SEARCH_MODE = "qa_search_mode"
"""The QuestionAnswerAdvisor's search mode for one request: "vector", "lexical" or "hybrid"."""
FUSION = "qa_fusion"
"""How the QuestionAnswerAdvisor fuses the two rankings in hybrid mode, per request: "rrf" or "weighted"."""
VECTOR_WEIGHT = "qa_vector_weight"
"""The share of the vector ranking in a weighted hybrid fusion, in [0, 1], for one request."""
DIVERSITY = "qa_diversity"
"""The QuestionAnswerAdvisor's MMR diversity for one request, in [0, 1] (0 ranks by relevance only)."""
TOOLS = "rag.tools"
"""The tool objects given with `.tools(...)` (their definitions also go into the options)."""

# -- keys set by the client and the advisors -------------------------------------------------------
RETRIEVED_DOCUMENTS = "qa_retrieved_documents"
"""The documents the QuestionAnswerAdvisor retrieved (also in the response metadata under this key)."""
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

PARAM_ALIASES: Mapping[str, str] = {
    "conversation_id": CONVERSATION_ID,
    "filter": FILTER_EXPRESSION,
    "filter_expression": FILTER_EXPRESSION,
    "top_k": TOP_K,
    "similarity_threshold": SIMILARITY_THRESHOLD,
    "mode": SEARCH_MODE,
    "search_mode": SEARCH_MODE,
    "fusion": FUSION,
    "vector_weight": VECTOR_WEIGHT,
    "diversity": DIVERSITY,
}
"""Short parameter names accepted by `.advisors(**params)` and the context keys they set."""


def context_entries(params: Mapping[str, Any]) -> dict[str, Any]:
    """Advisor parameters as context entries: short names translated through `PARAM_ALIASES`."""
    return {PARAM_ALIASES.get(name, name): value for name, value in params.items()}


@dataclass(frozen=True, slots=True)
class ChatClientRequest:
    """A prompt on its way to the model, with the request's context.

    The context is one mutable dict shared by every request and response of a single client call (including
    tool rounds and retries), so what an advisor stores there is visible to the others and to the caller.

    Example:
        >>> from rag.chat import Prompt
        >>> request = ChatClientRequest(Prompt("Hi"))
        >>> request.context["seen"] = True
        >>> request.with_prompt(Prompt("Hello")).context
        {'seen': True}
    """

    prompt: Prompt
    context: dict[str, Any] = field(default_factory=dict)

    def with_prompt(self, prompt: Prompt) -> ChatClientRequest:
        """A request with another prompt and the same context."""
        return ChatClientRequest(prompt, self.context)

    @property
    def user_text(self) -> str:
        """The text of the last user message ("" when there is none)."""
        return self.prompt.user_text
