"""What a chunk is about beyond its own words: its title and heading path, put before its text.

A section's second chunk never names its heading, and a page's chunks rarely repeat the page title, so
a search for the heading's words would miss them. `with_context` composes `"title > heading > ...: text"`
from a chunk's `title` and `headings` metadata. Every store's lexical index indexes this composition
(the text a search returns stays the chunk's own text, offsets exact), and `rag ingest --embed-context`
offers it to the embedder.

Example:
    >>> with_context("Use Path().", {"title": "FastAPI", "headings": ["Path Parameters"]})
    'FastAPI > Path Parameters: Use Path().'
    >>> with_context("Aspirin\\n\\nReduces fever.", {"title": "Aspirin"})  # the text opens with its title
    'Aspirin\\n\\nReduces fever.'
"""

from __future__ import annotations

from collections.abc import Mapping

from rag.documents import MetadataValue

__all__ = ["with_context"]


def with_context(text: str, metadata: Mapping[str, MetadataValue]) -> str:
    """`text` after its `title` and `headings` metadata: `"title > heading > ...: text"`.

    A title the text already starts with (a JSON Lines record's, say) is not repeated, nor a heading
    the text opens with (a section's first chunk starts with its own heading line); a chunk without
    title or headings comes back as it is. Other metadata values are ignored.
    """
    parts: list[str] = []
    title = metadata.get("title")
    if isinstance(title, str) and title.strip() and not text.startswith(title.strip()):
        parts.append(title.strip())
    headings = metadata.get("headings")
    if isinstance(headings, list):
        opening = text.lstrip("#= \t")
        parts.extend(str(h) for h in headings if str(h).strip() and not opening.startswith(str(h)))
    return f"{' > '.join(parts)}: {text}" if parts else text
