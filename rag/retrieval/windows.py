"""Passage windows: each retrieved chunk widened by its neighbouring chunks of the same page.

A search ranks chunks, and a docs page cut at every heading leaves short ones: "## From packages"
with one sentence, while its steps sit in the next chunk. Whoever answers (a language model or the
extractive answerer) reads more than a chunk well, so the commands that answer (`rag ask`, `chat`,
`serve`, `eval`'s answers) widen each hit: its text becomes the chunks `neighbours` before and after
it in its page (same `source`, `root` and `page`, by `chunk_index`), joined in page order. Each chunk
is shown once: a window stops at a chunk that is itself a hit or already in a better hit's window. A
hit keeps its id, metadata and scores; only its text grows. Overlapping chunks (a splitter's overlap)
are joined without repeating the shared words when their `char_start`/`char_end` say where they lie.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document(str(i), text, {"source": "a.md", "chunk_index": i})
    ...            for i, text in enumerate(["## From packages", "Run apt install x.", "## Later"])])
    >>> [d.text for d in widen(store, store.get(["0"]))]
    ['## From packages\\n\\nRun apt install x.']
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from rag.documents import Document, MetadataValue
from rag.filters import Filter, key
from rag.vectorstore import VectorStore

__all__ = ["ANSWER_WINDOW", "widen"]

ANSWER_WINDOW = 1
"""Neighbouring chunks on each side of a hit that `rag ask`, `chat`, `serve` and `eval` answer from."""

_Value = str | int | float | bool
_Page = tuple[str, _Value | None, _Value | None]
"""A page: its source, root and PDF page."""


def _scalar(value: MetadataValue | None) -> _Value | None:
    return None if isinstance(value, list) else value


def _place(document: Document) -> tuple[_Page, int] | None:
    """(the page holding the chunk, its index there), or None for a document that is no chunk."""
    meta = document.metadata
    index, source = meta.get("chunk_index"), meta.get("source")
    if isinstance(index, bool) or not isinstance(index, int) or not isinstance(source, str):
        return None
    return (source, _scalar(meta.get("root")), _scalar(meta.get("page"))), index


def _span(document: Document) -> tuple[int, int] | None:
    """Where the chunk lies in its page's text (`char_start`, `char_end`), when it says so."""
    start, end = document.metadata.get("char_start"), document.metadata.get("char_end")
    if isinstance(start, int) and isinstance(end, int) and len(document.text) == end - start:
        return start, end
    return None


def _join(text: str, previous: Document, chunk: Document) -> str:
    """`text` (ending with `previous`) then `chunk`'s text, without the words a splitter's overlap
    repeats."""
    added, before, after = chunk.text, _span(previous), _span(chunk)
    if before is not None and after is not None and 0 < before[1] - after[0] < len(added):
        added = added[before[1] - after[0] :]
    return f"{text.rstrip()}\n\n{added.strip()}"


def widen(store: VectorStore, hits: Sequence[Document], neighbours: int = 1) -> list[Document]:
    """`hits`, each with the text of up to `neighbours` chunks before and after it in its page (one
    `store.get` for all of them); hits that are no chunk (no `source` and `chunk_index`) stay as
    they are. See the module docstring."""
    places = [_place(hit) for hit in hits]
    shown = {place for place in places if place is not None}
    wanted: dict[_Page, set[int]] = {}
    for page, index in shown:
        near = range(max(index - neighbours, 0), index + neighbours + 1)
        wanted.setdefault(page, set()).update(i for i in near if (page, i) not in shown)
    if neighbours < 1 or not any(wanted.values()):
        return list(hits)
    found: dict[tuple[_Page, int], Document] = {}
    for document in store.get(filter=_neighbours_filter(wanted)):
        neighbour = _place(document)
        if neighbour is not None and neighbour[1] in wanted.get(neighbour[0], ()):
            found[neighbour] = document
    out: list[Document] = []
    for hit, spot in zip(hits, places, strict=True):
        if spot is None:
            out.append(hit)
            continue
        (page, index), chunks = spot, [hit]
        for step in (-1, 1):
            for i in range(index + step, index + step * (neighbours + 1), step):
                if (page, i) in shown or (page, i) not in found:
                    break
                shown.add((page, i))
                chunks.insert(0 if step < 0 else len(chunks), found[(page, i)])
        text = chunks[0].text
        for previous, chunk in itertools.pairwise(chunks):
            text = _join(text, previous, chunk)
        out.append(hit if len(chunks) == 1 else dataclasses.replace(hit, text=text))
    return out


def _neighbours_filter(wanted: dict[_Page, set[int]]) -> Filter:
    """`(source == S AND root == R AND chunk_index IN [...]) OR ...`, one clause per page."""
    clauses: list[Filter] = []
    for (source, root, _page), indices in wanted.items():
        if not indices:
            continue
        clause: Filter = (key("source") == source) & key("chunk_index").in_(sorted(indices))
        if root is not None:
            clause = clause & (key("root") == root)
        clauses.append(clause)
    combined = clauses[0]
    for clause in clauses[1:]:
        combined = combined | clause
    return combined
