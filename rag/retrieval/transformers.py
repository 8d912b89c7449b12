"""Query transformers driven by a chat model: rewrite, compress a conversation, translate.

Each takes any `ChatModel` and a `PromptTemplate` (text or template) whose placeholders it checks at
construction. The model's reply, stripped, becomes the new query text; an empty reply keeps the query
as it was, so a silent model never loses the user's question.

Example:
    >>> from rag.testing import FakeChatModel
    >>> model = FakeChatModel(["beacon lighting time"])
    >>> RewriteQueryTransformer(model).transform(Query("so, erm, when do they light the beacon?")).text
    'beacon lighting time'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rag.chat.messages import AssistantMessage, Message, Prompt, UserMessage
from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate
from rag.errors import InvalidRequestError, TemplateError
from rag.retrieval.stages import Query

__all__ = [
    "DEFAULT_COMPRESSION_TEMPLATE",
    "DEFAULT_REWRITE_TEMPLATE",
    "DEFAULT_TRANSLATION_TEMPLATE",
    "CompressionQueryTransformer",
    "RewriteQueryTransformer",
    "TranslationQueryTransformer",
    "ask",
    "checked_template",
]

logger = logging.getLogger("rag.retrieval")

DEFAULT_REWRITE_TEMPLATE = PromptTemplate(
    "Rewrite the user's query below so that it finds better results when searched in a {target}. "
    "Drop words that do not help the search, keep every fact and name that does, and make it short "
    "and specific. Reply with the rewritten query only.\n\n"
    "Query: {query}\n\n"
    "Rewritten query:"
)
"""Placeholders: `{query}` and `{target}` (what is searched, "vector store" by default)."""

DEFAULT_COMPRESSION_TEMPLATE = PromptTemplate(
    'Below are a conversation and a follow-up query that may depend on it ("it", "that one", '
    '"and in winter?"). Write one standalone query that means what the follow-up means in this '
    "conversation, so that it can be understood without the conversation. Keep the user's intent; "
    "reply with the standalone query only.\n\n"
    "Conversation:\n{history}\n\n"
    "Follow-up query: {query}\n\n"
    "Standalone query:"
)
"""Placeholders: `{history}` (one `role: text` line per turn) and `{query}`."""

DEFAULT_TRANSLATION_TEMPLATE = PromptTemplate(
    "Translate the query below into {target_language}. If it is already in {target_language}, or you "
    "cannot tell its language, repeat it unchanged. Reply with the query only, without explanations.\n\n"
    "Query: {query}\n\n"
    "Translated query:"
)
"""Placeholders: `{query}` and `{target_language}`."""


def checked_template(value: str | PromptTemplate, required: Sequence[str], *, what: str) -> PromptTemplate:
    """`value` as a template, which must hold every `required` placeholder.

    Raises:
        TemplateError: a placeholder is missing; the message names the stage, the template and them.
    """
    template = value if isinstance(value, PromptTemplate) else PromptTemplate(value)
    missing = [name for name in required if name not in template.variables]
    if missing:
        raise TemplateError(f"{what} template {template.template!r} lacks the placeholder(s) {missing!r}")
    return template


def ask(model: ChatModel, text: str) -> str:
    """The model's reply to `text` as a single user message, stripped ("" when it said nothing)."""
    return model.call(Prompt(text)).text.strip()


def _transformed(query: Query, reply: str, stage: str) -> Query:
    if not reply:
        logger.warning("%s: the model replied nothing; the query is kept as it was", stage)
        return query
    return query.with_text(reply)


class RewriteQueryTransformer:
    """Rewrites a wordy or vague query into a short, specific one for searching.

    Example:
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(["cors middleware setup"])
        >>> rewrite = RewriteQueryTransformer(model, target="documentation search engine")
        >>> rewrite.transform(Query("hey, how would I go about adding CORS middleware?")).text
        'cors middleware setup'
        >>> "documentation search engine" in model.prompts[0].user_text
        True
    """

    def __init__(
        self,
        model: ChatModel,
        template: str | PromptTemplate = DEFAULT_REWRITE_TEMPLATE,
        *,
        target: str = "vector store",
    ) -> None:
        self.model = model
        self.template = checked_template(template, ("query", "target"), what="RewriteQueryTransformer")
        self.target = target

    def transform(self, query: Query) -> Query:
        reply = ask(self.model, self.template.render(query=query.text, target=self.target))
        return _transformed(query, reply, type(self).__name__)


def format_history(messages: Sequence[Message]) -> str:
    """The user and assistant turns as `user: ...` / `assistant: ...` lines (other messages left out)."""
    lines = [
        f"{message.role.value}: {message.text}"
        for message in messages
        if isinstance(message, UserMessage | AssistantMessage) and message.text
    ]
    return "\n".join(lines)


class CompressionQueryTransformer:
    """Turns a follow-up question and the conversation before it into one standalone query.

    Needs the conversation in `query.history` (a chat memory advisor running before the retrieval
    advisor puts it into the prompt). Without user or assistant turns there is nothing to compress
    and the model is not called.

    Example:
        >>> from rag.chat import AssistantMessage, UserMessage
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(["When is the beacon lit in winter?"])
        >>> history = (UserMessage("When is the beacon lit?"), AssistantMessage("At dusk."))
        >>> CompressionQueryTransformer(model).transform(Query("And in winter?", history)).text
        'When is the beacon lit in winter?'
    """

    def __init__(
        self, model: ChatModel, template: str | PromptTemplate = DEFAULT_COMPRESSION_TEMPLATE
    ) -> None:
        self.model = model
        self.template = checked_template(template, ("history", "query"), what="CompressionQueryTransformer")

    def transform(self, query: Query) -> Query:
        history = format_history(query.history)
        if not history:
            return query
        reply = ask(self.model, self.template.render(history=history, query=query.text))
        return _transformed(query, reply, type(self).__name__)


class TranslationQueryTransformer:
    """Translates the query into the documents' language, so that it matches their words.

    Example:
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(["When is the lighthouse lit?"])
        >>> english = TranslationQueryTransformer(model, target_language="English")
        >>> english.transform(Query("Quand le phare est-il allumé ?")).text
        'When is the lighthouse lit?'
    """

    def __init__(
        self,
        model: ChatModel,
        target_language: str,
        template: str | PromptTemplate = DEFAULT_TRANSLATION_TEMPLATE,
    ) -> None:
        if not isinstance(target_language, str) or not target_language.strip():
            raise InvalidRequestError(f"target_language must be a language name, got {target_language!r}")
        self.model = model
        self.target_language = target_language
        self.template = checked_template(
            template, ("query", "target_language"), what="TranslationQueryTransformer"
        )

    def transform(self, query: Query) -> Query:
        text = self.template.render(query=query.text, target_language=self.target_language)
        return _transformed(query, ask(self.model, text), type(self).__name__)
