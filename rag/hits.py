"""A retrieved chunk as every machine-readable output lists it, so one script reads them all.

`rag query --json` (each hit), `rag ask --json` (each source), `rag serve` (a completion's `sources`,
`/v1/search` hits) and the MCP tools (`search` passages, `ask` sources) give a chunk these keys, with
the same meaning everywhere:

- `rank`: its position from 1, the number an answer cites it by (`[1]`)
- `id`: the chunk's id
- `citation`: the name the human output shows (`rag.citations.citation`): `docs/guide/install.md`,
  `corpus.jsonl#12209494`; the name a filter `source == NAME` selects
- `source`, `root`: the raw metadata: the path inside the ingested folder and the folder's label
- `page`, `chunk_index`: where in the file
- `score`: the search mode's rank score; `scores`: the named scores the search computed (`cosine`,
  `bm25`, `fused`); `cosine`: the similarity a threshold compares
- `text`: the passage (in answers, as the model read it)

A key the chunk has no value for is null, never missing. Each output may add keys of its own.

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
