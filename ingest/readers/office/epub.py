"""E-books (`.epub`): one unit per chapter of the reading order, through the HTML reader's text.

An EPUB is a zip archive of XHTML chapters listed in reading order (the spine) by a package file that
`META-INF/container.xml` names. Each chapter is read as the HTML reader reads a page; its unit carries
`chapter` (1-based, in reading order) and `section`, the chapter's own title or first heading. The
navigation document is left out. `title` is the book's `dc:title`. Read with the standard library.

Example:
    >>> # read_epub(Path("book.epub").read_bytes(), "book.epub", ReaderOptions()).units[0].metadata["chapter"]
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.html import visible_text
from ingest.readers.office.archive import UnitBuilder, open_archive
from ingest.readers.text import decode_text
from rag.errors import IngestError

__all__ = ["read_epub"]

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def _xml(archive: zipfile.ZipFile, name: str, source: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(archive.read(name))
    except KeyError as exc:
        raise IngestError(f"damaged EPUB {source!r}: no {name}", path=source) from exc
    except ElementTree.ParseError as exc:
        raise IngestError(f"damaged EPUB {source!r}: {name} ({exc})", path=source) from exc


def _spine(archive: zipfile.ZipFile, source: str) -> tuple[str | None, list[str]]:
    """The book's title and its chapters' member names in reading order."""
    rootfile = _xml(archive, "META-INF/container.xml", source).find(f".//{_CONTAINER}rootfile")
    package_name = rootfile.get("full-path") if rootfile is not None else None
    if not package_name:
        raise IngestError(f"damaged EPUB {source!r}: container.xml names no package file", path=source)
    package = _xml(archive, package_name, source)
    found = package.find(f".//{_DC_TITLE}")
    title = " ".join((found.text or "").split()) if found is not None else None
    folder = posixpath.dirname(package_name)
    items = {
        item.get("id"): item
        for item in package.iterfind(f"{_OPF}manifest/{_OPF}item")
        if "nav" not in (item.get("properties") or "").split()
    }
    chapters = []
    for ref in package.iterfind(f"{_OPF}spine/{_OPF}itemref"):
        item = items.get(ref.get("idref"))
        if item is not None and item.get("href"):
            chapters.append(posixpath.normpath(posixpath.join(folder, unquote(item.get("href") or ""))))
    return title or None, chapters


def read_epub(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """An EPUB as one unit per chapter (see the module docstring)."""
    del options  # no option changes e-books
    archive = open_archive(data, source, "EPUB")
    title, chapters = _spine(archive, source)
    base: dict[str, MetadataValue] = {"source": source}
    if title:
        base["title"] = title
    builder = UnitBuilder(base)
    warnings: list[str] = []
    for number, name in enumerate(chapters, start=1):
        try:
            raw = archive.read(name)
        except KeyError:
            warnings.append(f"chapter {number}: {name!r} is listed but missing")
            continue
        text, heading = visible_text(decode_text(raw, f"{source}:{name}").text)
        builder.cut(chapter=number)
        if heading:
            builder.heading(1, heading)
        builder.add(text)
    return builder.result(warnings)
