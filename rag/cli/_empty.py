"""Why a search of `rag query` or `rag ask` found nothing, when the filter alone explains it."""

from __future__ import annotations

from rag.retrieval.documents_view import DocumentsView

__all__ = ["filter_selects_nothing"]


def filter_selects_nothing(view: DocumentsView, filter_text: str | None) -> str | None:
    """A line naming `--filter` when it selects no document at all (a misspelt key or value), else None.

    Read before the store closes, and only once a search came back empty, so a search that finds
    something costs no count.
    """
    if filter_text is None or view.count(filter_text) > 0:
        return None
    return f"no chunk matches --filter {filter_text!r}"
