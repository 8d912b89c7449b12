"""A retrieved chunk as every machine-readable output lists it, so one script reads them all.

`rag query --json`, `rag ask --json`, `rag serve` (an answer's `sources`, `/v1/search`) and the MCP
tools give a chunk `HIT_KEYS`, meaning the same everywhere (docs/cli.md, "One record per hit in JSON"):
`citation` is the name the text output shows (`rag.citations.citation`), `source` and `root` the raw
metadata a filter reads; a key the chunk has no value for is null, never missing. Each output may add
keys of its own after these.

Example:
    >>> from rag import Document
    >>> doc = Document("c1", "Mount the lamp.", {"root": "docs", "source": "guide/install.md"}, score=0.5)
    >>> row = hit_record(1, doc)
    >>> row["citation"], row["source"], row["root"], row["page"]
    ('docs/guide/install.md', 'guide/install.md', 'docs', None)
    >>> list(row) == list(HIT_KEYS)
    True
"""

from __future__ import annotations

from typing import Any

from rag.citations import citation
from rag.documents import Document

__all__ = ["HIT_KEYS", "hit_record"]

HIT_KEYS = (
    "rank",
    "id",
    "citation",
    "source",
    "root",
    "page",
    "chunk_index",
    "score",
    "cosine",
    "scores",
    "text",
)
"""The keys of `hit_record`, in order."""


def hit_record(rank: int, document: Document) -> dict[str, Any]:
    """The chunk `document`, found at `rank`, as a JSON object with `HIT_KEYS`."""
    metadata = document.metadata
    return {
        "rank": rank,
        "id": document.id,
        "citation": citation(document),
        "source": metadata.get("source"),
        "root": metadata.get("root"),
        "page": metadata.get("page"),
        "chunk_index": metadata.get("chunk_index"),
        "score": document.score,
        "cosine": document.scores.get("cosine"),
        "scores": dict(document.scores),
        "text": document.text,
    }
