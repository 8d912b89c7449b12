"""What an answer cites for a retrieved chunk: its source file, and a JSON Lines record's id after `#`.

A chunk read from a JSON Lines file (`rag ingest corpus.jsonl --id-field _id`) carries the file as
`source` and its record's id as `doc_id`; citing only the file would point at thousands of records,
so its citation is `corpus.jsonl#12209494`. Every other chunk is cited by its `source`. The prompt's
passages (`format_document`), the CLI's hit lists and answers, and `rag serve`'s sources all cite
through `citation`, so they agree.

A sources list names each source once (`cited_sources`): several passages of one file make one
line with their numbers, `[1, 3] quick-start.html, chunks 0, 2`, rather than the same name twice.

Example:
    >>> from rag import Document
    >>> citation(Document("c1", "Spring tides...", {"source": "corpus.jsonl", "doc_id": "12209494"}))
    'corpus.jsonl#12209494'
    >>> citation(Document("c2", "Install...", {"source": "guide/install.md"}))
    'guide/install.md'
    >>> citation(Document("c3", "no source")) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rag.documents import Document, MetadataValue

__all__ = ["RECORD_ID_FIELD", "CitedSource", "Place", "citation", "cited_sources", "group_citations", "place"]

RECORD_ID_FIELD = "doc_id"
"""The metadata key under which the JSON Lines reader stores a record's id (`--id-field`)."""


class Place(NamedTuple):
    """Where in its file a passage is: a PDF `page`, a `slide`, a workbook's `sheet`, a book's `chapter`."""

    kind: str
    value: MetadataValue


PLACE_KEYS = ("page", "slide", "sheet", "chapter")
"""The metadata keys that locate a passage in its file, as readers write them."""


def place(metadata: Mapping[str, MetadataValue]) -> Place | None:
    """The first of `PLACE_KEYS` a chunk's metadata holds, as a `Place`; None for a file without places.

    Example:
        >>> place({"source": "talk.pptx", "slide": 3})
        Place(kind='slide', value=3)
    """
    for key in PLACE_KEYS:
        value = metadata.get(key)
        if value is not None:
            return Place(key, value)
    return None


def citation(document: Document) -> str | None:
    """The chunk's `source`, with `#record id` for a JSON Lines record; None without a source."""
    source, record = document.metadata.get("source"), document.metadata.get(RECORD_ID_FIELD)
    if source is None:
        return None
    return f"{source}#{record}" if record is not None else str(source)


@dataclass(frozen=True)
class CitedSource:
    """One source of an answer's passages: what is cited, the passage numbers, and where in it.

    `numbers` are the passages' numbers as the prompt and the answer number them (`[1]`, `[3]`);
    `pages` the distinct pages they are on (PDF), and `chunks` their `chunk_index` values (the
    numbers `--json` shows and `--filter "chunk_index == 2"` selects), None where a passage has none.

    Example:
        >>> CitedSource("manual.pdf", (1, 3), (4, 9), (10, 22)).line()
        '[1, 3] manual.pdf, pages 4, 9'
        >>> CitedSource("quick-start.html", (2, 4), (), (0, 2)).line()
        '[2, 4] quick-start.html, chunks 0, 2'
        >>> CitedSource("guide.md", (1,), (3,), (0,)).line()
        '[1] guide.md, page 3'
        >>> CitedSource("talk.pptx", (1, 2), (2, 5), (1, 4), kind="slide").line()
        '[1, 2] talk.pptx, slides 2, 5'
    """

    citation: str
    numbers: tuple[int, ...]
    pages: tuple[MetadataValue, ...] = ()
    chunks: tuple[int | None, ...] = ()
    kind: str = "page"

    @property
    def label(self) -> str:
        """The citation with its pages (`, page 3` / `, pages 3, 7`); with several passages and fewer
        pages than passages, their chunk numbers too, so the passages can be told apart."""
        parts = [self.citation]
        if self.pages:
            name = self.kind if len(self.pages) == 1 else f"{self.kind}s"
            parts.append(f"{name} {', '.join(str(p) for p in self.pages)}")
        known = [c for c in self.chunks if c is not None]
        if len(self.numbers) > 1 and len(self.pages) < len(self.numbers) and len(known) == len(self.numbers):
            parts.append(f"chunks {', '.join(str(c) for c in known)}")
        return ", ".join(parts)

    def line(self) -> str:
        """`[1, 3] label`: the passage numbers, then the label."""
        return f"[{', '.join(str(n) for n in self.numbers)}] {self.label}"


def group_citations(
    passages: Iterable[tuple[int, str, Place | MetadataValue | None, int | None]],
) -> list[CitedSource]:
    """`(number, citation, place, chunk)` per passage, grouped by citation in order of first appearance.

    A place is a `Place` or a bare page number; a source's line names the places of its first passage's
    kind.

    Example:
        >>> [g.line() for g in group_citations([(1, "a.md", None, 0), (2, "b.md", None, 5),
        ...                                     (3, "a.md", None, 2)])]
        ['[1, 3] a.md, chunks 0, 2', '[2] b.md']
    """
    groups: dict[str, list[tuple[int, Place | None, int | None]]] = {}
    for number, cited, where, chunk in passages:
        found = where if isinstance(where, Place) or where is None else Place("page", where)
        groups.setdefault(cited, []).append((number, found, chunk))
    sources = []
    for cited, members in groups.items():
        kind = next((where.kind for _, where, _ in members if where is not None), "page")
        values = (where.value for _, where, _ in members if where is not None and where.kind == kind)
        sources.append(
            CitedSource(
                cited,
                tuple(number for number, _, _ in members),
                tuple(dict.fromkeys(values)),
                tuple(chunk for _, _, chunk in members),
                kind,
            )
        )
    return sources


def cited_sources(documents: Sequence[Document]) -> list[CitedSource]:
    """The sources of `documents` (numbered from 1, in order), each once, in order of first appearance.

    A document without a source is cited by its id.

    Example:
        >>> docs = [Document(f"c{i}", "...", {"source": s, "chunk_index": i})
        ...         for i, s in enumerate(["quick-start.html", "drd-manual.html", "quick-start.html"])]
        >>> [g.line() for g in cited_sources(docs)]
        ['[1, 3] quick-start.html, chunks 0, 2', '[2] drd-manual.html']
    """
    return group_citations(
        (number, citation(doc) or doc.id, place(doc.metadata), _chunk(doc))
        for number, doc in enumerate(documents, 1)
    )


def _chunk(document: Document) -> int | None:
    value = document.metadata.get("chunk_index")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
