"""The one name a user sees for a retrieved chunk's file: `ROOT/PATH`, and `#record id` for a record.

A chunk ingested from a folder carries its path inside that folder as `source` (`guide/install.md`)
and the folder's label as `root` (`docs`); its file's name is `docs/guide/install.md`, the identity
`rag ingest` records. A chunk without `root` (added from Python, or ingested before roots were
recorded) is named by its `source` alone. A chunk read from a JSON Lines file (`rag ingest
corpus.jsonl --id-field _id`) also carries its record's id as `doc_id`; naming only the file would
point at thousands of records, so it is `corpus.jsonl#12209494`. The prompt's passages
(`format_document`), every command's hit lists, answers and sources, `rag serve` and the MCP tools
name files through `citation`, so they agree, and a filter `source == NAME` on that name selects the
file (`rag.retrieval.source_identity`).

A sources list names each source once (`cited_sources`): several passages of one file make one
line with their numbers, `[1, 3] quick-start.html, chunks 0, 2`, rather than the same name twice;
`answer_first` puts the sources an answer cites before the rest.

Example:
    >>> from rag import Document
    >>> citation(Document("c1", "Install...", {"root": "docs", "source": "guide/install.md"}))
    'docs/guide/install.md'
    >>> citation(Document("c2", "Spring tides...", {"source": "corpus.jsonl", "doc_id": "12209494"}))
    'corpus.jsonl#12209494'
    >>> citation(Document("c3", "no source")) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rag.documents import Document, MetadataValue

__all__ = ["RECORD_ID_FIELD", "CitedSource", "Place", "citation", "cited_sources", "place", "source_name"]

_NUMBERS = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")  # `[3]`, `[1, 3]`: passages cited by number

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


def source_name(metadata: Mapping[str, MetadataValue]) -> str | None:
    """A chunk's file as `root/source`, or `source` alone without a root; None without a source."""
    source, root = metadata.get("source"), metadata.get("root")
    if source is None:
        return None
    return f"{root}/{source}" if root else str(source)


def citation(document: Document) -> str | None:
    """The chunk's file (`source_name`), with `#record id` for a JSON Lines record; None without a
    source."""
    name, record = source_name(document.metadata), document.metadata.get(RECORD_ID_FIELD)
    if name is None:
        return None
    return f"{name}#{record}" if record is not None else name


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


def _first_use(source: CitedSource, answer: str) -> int | None:
    """Where `answer` first cites `source`: by passage number (`[3]`, `[1, 3]`) or by name
    (`[docs/guide/install.md]`, as the extractive answerer quotes); None if it never does."""
    places = [
        m.start()
        for m in _NUMBERS.finditer(answer)
        if set(source.numbers) & {int(n) for n in m.group(1).split(",")}
    ]
    at = answer.find(f"[{source.citation}")
    if at >= 0:
        places.append(at)
    return min(places) if places else None


def cited_sources(documents: Sequence[Document], answer: str | None = None) -> list[CitedSource]:
    """The sources of `documents` (numbered from 1, in order), each once; with the `answer`, those it
    cites first, in the order it cites them, then the others in order of first appearance.

    A document without a source is cited by its id; a source's line names the places of its first
    passage's kind.

    Example:
        >>> docs = [Document(f"c{i}", "...", {"source": s, "chunk_index": i})
        ...         for i, s in enumerate(["quick-start.html", "drd-manual.html", "quick-start.html"])]
        >>> [g.line() for g in cited_sources(docs)]
        ['[1, 3] quick-start.html, chunks 0, 2', '[2] drd-manual.html']
        >>> [g.line() for g in cited_sources(docs, "Open the manual [2].")]
        ['[2] drd-manual.html', '[1, 3] quick-start.html, chunks 0, 2']
    """
    groups: dict[str, list[tuple[int, Place | None, int | None]]] = {}
    for number, doc in enumerate(documents, 1):
        groups.setdefault(citation(doc) or doc.id, []).append((number, place(doc.metadata), _chunk(doc)))
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
    if not answer:
        return sources
    used = {s.citation: at for s in sources if (at := _first_use(s, answer)) is not None}
    return sorted(sources, key=lambda s: (s.citation not in used, used.get(s.citation, 0)))


def _chunk(document: Document) -> int | None:
    value = document.metadata.get("chunk_index")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
