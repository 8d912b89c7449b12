"""Spring AI's advisor parameter names, translated into the typed form at the client's boundary.

Code ported from Spring AI sets advisor parameters by name (`a.param("qa_filter_expression", ...)`).
Here each name is an alias of one field of one advisor's `Params` class (declared in that class's
`aliases`), or of the conversation id; `.advisors(params={...})` translates them, and refuses a name
it does not know, naming it.

| name                              | means                                                      |
|-----------------------------------|------------------------------------------------------------|
| `chat_memory_conversation_id`     | `.advisors(conversation_id=...)`                           |
| `qa_filter_expression`            | `QuestionAnswerAdvisor.Params(filter=...)`                 |
| `vector_store_filter`             | `VectorStoreDocumentRetriever.Params(filter=...)`          |
| `chat_memory_vector_store_top_k`  | `VectorStoreChatMemoryAdvisor.Params(top_k=...)`           |
| `chat_memory_response_size`       | `VectorStoreChatMemoryAdvisor.Params(top_k=...)` (older)   |
| `rag.tools.manual` (`TOOL_MANUAL`) | manual tool execution for one request (a context entry)    |

Example:
    >>> spring = {"qa_filter_expression": "lang == 'en'", "chat_memory_conversation_id": "c1"}
    >>> params, context = translate(spring)
    >>> [type(p).__qualname__ for p in params], context
    (['QuestionAnswerAdvisor.Params'], {'conversation_id': 'c1'})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.advisors.request import CONVERSATION_ID
from rag.errors import InvalidRequestError
from rag.params import AdvisorParams, closest, did_you_mean
from rag.retrieval.retriever import VectorStoreDocumentRetriever
from rag.tools.context import TOOL_MANUAL

__all__ = ["CONTEXT_ALIASES", "PARAMS_CLASSES", "keyword_error", "translate"]

PARAMS_CLASSES: tuple[type[AdvisorParams], ...] = (
    QuestionAnswerAdvisor.Params,
    VectorStoreDocumentRetriever.Params,
    VectorStoreChatMemoryAdvisor.Params,
)
"""The `Params` classes of the advisors that ship: where the Spring names and the hints come from."""

CONTEXT_ALIASES: Mapping[str, str] = {
    "chat_memory_conversation_id": CONVERSATION_ID,
    TOOL_MANUAL: TOOL_MANUAL,
}
"""Names that set a context entry rather than a field: the conversation id, manual tool execution."""


def _field_aliases() -> dict[str, tuple[type[AdvisorParams], str]]:
    return {name: (kind, field) for kind in PARAMS_CLASSES for name, field in kind.aliases.items()}


def translate(named: Mapping[str, Any]) -> tuple[list[AdvisorParams], dict[str, Any]]:
    """Spring AI parameter names as typed `Params` objects and context entries.

    Raises:
        InvalidRequestError: a name that is not one of the aliases (named, with the closest one), or a
            bad value (from the `Params` class).
    """
    fields = _field_aliases()
    values: dict[type[AdvisorParams], dict[str, Any]] = {}
    context: dict[str, Any] = {}
    for name, value in named.items():
        if name in CONTEXT_ALIASES:
            context[CONTEXT_ALIASES[name]] = value
        elif name in fields:
            kind, field = fields[name]
            values.setdefault(kind, {})[field] = value
        else:
            known = sorted([*CONTEXT_ALIASES, *fields])
            raise InvalidRequestError(
                f"unknown advisor parameter name {name!r}{did_you_mean(name, known)}; the names "
                f"understood are {', '.join(known)} (or pass typed Params objects to .advisors())"
            )
    return [kind(**given) for kind, given in values.items()], context


def keyword_error(name: str) -> InvalidRequestError:
    """The error for `.advisors(name=...)` with a keyword other than `conversation_id` and `params`."""
    hint = did_you_mean(name, ("conversation_id", "params"))
    for kind in PARAMS_CLASSES:
        close = closest(name, kind.field_names())
        if close is not None:
            hint = f" (did you mean {kind.__qualname__}({close}=...)?)"
            break
    return InvalidRequestError(
        f".advisors() got the unknown keyword {name!r}{hint}; per-request advisor settings are typed "
        "Params objects, such as .advisors(QuestionAnswerAdvisor.Params(top_k=3)), and the only keywords "
        "are conversation_id and params (Spring AI names)"
    )
