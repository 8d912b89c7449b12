"""`MultiQueryExpander`: a chat model writes variants of the query; each is searched with separately.

Example:
    >>> from rag.testing import FakeChatModel
    >>> model = FakeChatModel(["1. beacon lighting hours\\n2. when the lamp is lit"])
    >>> [q.text for q in MultiQueryExpander(model, number_of_queries=2).expand(Query("beacon time?"))]
    ['beacon time?', 'beacon lighting hours', 'when the lamp is lit']
"""

from __future__ import annotations

import re

from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate
from rag.errors import InvalidRequestError
from rag.retrieval.stages import Query
from rag.retrieval.transformers import ask, checked_template

__all__ = ["DEFAULT_EXPANSION_TEMPLATE", "MultiQueryExpander"]

DEFAULT_EXPANSION_TEMPLATE = PromptTemplate(
    "You help a search engine find more of what the user is looking for. Write {number} different "
    "versions of the query below, each from another angle or with other words, all keeping its intent. "
    "Put each version on its own line, with no numbering and no other text.\n\n"
    "Query: {query}\n\n"
    "Versions:"
)
"""Placeholders: `{number}` (how many variants) and `{query}`."""

# "1. ", "2) ", "- ", "* ", "• " in front of a line: list markers models add although told not to.
_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")


class MultiQueryExpander:
    """Asks a chat model for `number_of_queries` variants of the query.

    The reply is read one line per variant (list markers and blank lines dropped, repeats and copies of
    the query dropped), and at most `number_of_queries` are kept. With `include_original` (the default)
    the query itself comes first. A reply with no usable line gives the query alone. Every variant keeps
    the query's history and context.

    Example:
        >>> from rag.testing import FakeChatModel
        >>> expander = MultiQueryExpander(FakeChatModel(["a\\nb\\nc\\nd"]), 3, include_original=False)
        >>> [q.text for q in expander.expand(Query("x"))]
        ['a', 'b', 'c']
    """

    def __init__(
        self,
        model: ChatModel,
        number_of_queries: int = 3,
        *,
        include_original: bool = True,
        template: str | PromptTemplate = DEFAULT_EXPANSION_TEMPLATE,
    ) -> None:
        if (
            isinstance(number_of_queries, bool)
            or not isinstance(number_of_queries, int)
            or number_of_queries < 1
        ):
            raise InvalidRequestError(f"number_of_queries must be an integer >= 1, got {number_of_queries!r}")
        self.model = model
        self.number_of_queries = number_of_queries
        self.include_original = include_original
        self.template = checked_template(template, ("number", "query"), what="MultiQueryExpander")

    def expand(self, query: Query) -> list[Query]:
        reply = ask(self.model, self.template.render(number=self.number_of_queries, query=query.text))
        seen = {query.text.strip().casefold()}
        variants: list[str] = []
        for line in reply.splitlines():
            text = _MARKER.sub("", line).strip()
            if text and text.casefold() not in seen:
                seen.add(text.casefold())
                variants.append(text)
        variants = variants[: self.number_of_queries]
        if not variants:
            return [query]
        head = [query] if self.include_original else []
        return head + [query.with_text(text) for text in variants]
