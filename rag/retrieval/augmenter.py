"""`ContextualQueryAugmenter`: the retrieved documents put into the query through a template.

Spring AI's empty-context policy: when nothing was retrieved, the query becomes an instruction to say
that the question cannot be answered from the documents (`allow_empty_context=False`, the default), or
stays as it was, letting the model answer from what it knows (`allow_empty_context=True`).

Example:
    >>> from rag import Document
    >>> augmenter = ContextualQueryAugmenter()
    >>> text = augmenter.augment(Query("When?"), [Document("d", "At dusk.", {"source": "b.md"})]).text
    >>> "[1] (source: b.md)\\nAt dusk." in text and text.rstrip().endswith("When?")
    True
    >>> "cannot answer" in augmenter.augment(Query("When?"), []).text
    True
    >>> ContextualQueryAugmenter(allow_empty_context=True).augment(Query("When?"), []).text
    'When?'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag.chat.template import PromptTemplate
from rag.citations import citation
from rag.documents import Document
from rag.retrieval.stages import Query
from rag.retrieval.transformers import checked_template

__all__ = [
    "DEFAULT_CONTEXT_TEMPLATE",
    "DEFAULT_EMPTY_CONTEXT_TEMPLATE",
    "ContextualQueryAugmenter",
    "format_document",
]

_RULE = "-" * 21

DEFAULT_CONTEXT_TEMPLATE = PromptTemplate(
    "Passages from the documents, between the dashed lines:\n"
    f"{_RULE}\n{{context}}\n{_RULE}\n\n"
    "Answer the question below from these passages only, not from what you knew before, and cite the "
    "passages you use by number, like [1]. If the answer is not in them, say that you don't know; do "
    'not guess. Do not start with phrases such as "Based on the passages".\n\n'
    "Question: {query}"
)
"""Placeholders: `{context}` (the numbered passages) and `{query}`."""

DEFAULT_EMPTY_CONTEXT_TEMPLATE = PromptTemplate(
    "No passage of the documents matched the question below. Tell the user politely that you cannot "
    "answer it from the documents, and do not make up an answer.\n\n"
    "Question: {query}"
)
"""Used when nothing was retrieved and empty context is not allowed. Placeholder: `{query}`."""


def format_document(number: int, document: Document) -> str:
    """One passage as the templates show it: `[n] (source: S, page P)` on a line, then the text.

    S is `rag.citations.citation` (`corpus.jsonl#12209494` for a JSON Lines record), else the id."""
    source = citation(document) or document.id
    page = document.metadata.get("page")
    where = f"source: {source}" if page is None else f"source: {source}, page {page}"
    return f"[{number}] ({where})\n{document.text}"


class ContextualQueryAugmenter:
    """Renders the query and the numbered documents into the text the model receives.

    Args:
        template: Holds `{query}` and `{context}`; the documents, formatted by `document_formatter`
            (`[n] (source: S, page P)` then the text, as `QuestionAnswerAdvisor` shows them), are
            joined by blank lines into `{context}`.
        empty_template: Holds `{query}`; used when there are no documents and empty context is not
            allowed.
        allow_empty_context: With no documents, return the query unchanged instead.
        document_formatter: `(number from 1, document) -> str`.

    Raises:
        TemplateError: a template lacks one of its placeholders.
    """

    def __init__(
        self,
        template: str | PromptTemplate = DEFAULT_CONTEXT_TEMPLATE,
        *,
        empty_template: str | PromptTemplate = DEFAULT_EMPTY_CONTEXT_TEMPLATE,
        allow_empty_context: bool = False,
        document_formatter: Callable[[int, Document], str] = format_document,
    ) -> None:
        self.template = checked_template(template, ("query", "context"), what="ContextualQueryAugmenter")
        self.empty_template = checked_template(
            empty_template, ("query",), what="ContextualQueryAugmenter empty"
        )
        self.allow_empty_context = allow_empty_context
        self.document_formatter = document_formatter

    def augment(self, query: Query, documents: Sequence[Document]) -> Query:
        if not documents:
            if self.allow_empty_context:
                return query
            return query.with_text(self.empty_template.render(query=query.text))
        context = "\n\n".join(self.document_formatter(i, doc) for i, doc in enumerate(documents, 1))
        return query.with_text(self.template.render(query=query.text, context=context))
