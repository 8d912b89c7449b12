"""OpenDocument text (`.odt`): one unit per section under its heading path, from `content.xml`.

Read with the standard library's XML parser (no extra needed). Headings (`text:h`, with their
`outline-level`) open sections as in Word documents; paragraphs, list items and table rows (cells
joined by tabs) are read in document order; spaces, tabs and line breaks written as elements are
kept. `title` is `dc:title` from `meta.xml`, else the first level-1 heading.

Example:
    >>> # read_odt(Path("notes.odt").read_bytes(), "notes.odt", ReaderOptions()).units[0].text
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from xml.etree import ElementTree

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.office.archive import UnitBuilder, open_archive
from rag.errors import IngestError

__all__ = ["read_odt"]

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def _parse(archive: zipfile.ZipFile, name: str, source: str) -> ElementTree.Element | None:
    try:
        raw = archive.read(name)
    except KeyError:
        return None
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as exc:
        raise IngestError(f"damaged OpenDocument file {source!r}: {name} ({exc})", path=source) from exc


def _inline(element: ElementTree.Element) -> str:
    """A paragraph's text: its spans opened, `text:s`/`text:tab`/`text:line-break` written out."""
    parts: list[str] = [element.text or ""]
    stack: list[Iterator[ElementTree.Element]] = [iter(element)]
    tails: list[str] = []
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            if tails:
                parts.append(tails.pop())
            continue
        if child.tag == f"{_TEXT}s":
            parts.append(" " * int(child.get(f"{_TEXT}c", "1") or 1))
        elif child.tag == f"{_TEXT}tab":
            parts.append("\t")
        elif child.tag == f"{_TEXT}line-break":
            parts.append("\n")
        elif child.tag != f"{_OFFICE}annotation":
            parts.append(child.text or "")
            stack.append(iter(child))
            tails.append(child.tail or "")
            continue
        parts.append(child.tail or "")
    return "".join(parts)


def _row(row: ElementTree.Element) -> str:
    cells = (
        " ".join(" ".join(_inline(p).split()) for p in cell.iter(f"{_TEXT}p"))
        for cell in row
        if cell.tag == f"{_TABLE}table-cell"
    )
    return "\t".join(cells).strip()


def _walk(body: ElementTree.Element, builder: UnitBuilder) -> str | None:
    """Feed the body's blocks to `builder` in document order; return the first level-1 heading."""
    first: str | None = None
    stack: list[Iterator[ElementTree.Element]] = [iter(body)]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
        elif element.tag == f"{_TEXT}h":
            level = int(element.get(f"{_TEXT}outline-level", "1") or 1)
            text = _inline(element)
            first = first or (" ".join(text.split()) if level == 1 else None)
            builder.heading(level, text)
        elif element.tag == f"{_TEXT}p":
            builder.add(_inline(element))
        elif element.tag == f"{_TABLE}table-row":
            builder.add(_row(element))
        else:  # lists, list items, sections, tables, frames: read what they hold
            stack.append(iter(element))
    return first


def read_odt(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """An OpenDocument text as one unit per section (see the module docstring)."""
    del options  # no option changes OpenDocument files
    archive = open_archive(data, source, "OpenDocument")
    content = _parse(archive, "content.xml", source)
    if content is None:
        raise IngestError(f"damaged OpenDocument file {source!r}: no content.xml", path=source)
    meta = _parse(archive, "meta.xml", source)
    found = meta.find(f".//{_DC_TITLE}") if meta is not None else None
    title = " ".join((found.text or "").split()) if found is not None else ""
    base: dict[str, MetadataValue] = {"source": source}
    builder = UnitBuilder(base)
    body = content.find(f"{_OFFICE}body/{_OFFICE}text")
    first = _walk(body, builder) if body is not None else None
    return builder.result(title=title or first)
