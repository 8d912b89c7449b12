"""Word documents (`.docx`) through python-docx: one unit per section under its heading path.

- Paragraphs styled `Heading 1`..`Heading 9` open sections (`section` is the heading path, `headings` the
  same as a list, as for Markdown); a paragraph styled `Title` names the document when its properties
  do not. Paragraphs and tables are read in document order; a table row is its cells joined by tabs
  (a merged cell once).
- `title` is the document's core property `title`, else its first `Title` paragraph.

Example:
    >>> # read_docx(Path("a.docx").read_bytes(), "a.docx", ReaderOptions()).units[0].metadata["section"]
"""

from __future__ import annotations

import io
import re
from typing import Any

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.office.archive import UnitBuilder, missing_extra, open_archive

__all__ = ["read_docx"]

_HEADING = re.compile(r"heading\s*([1-9])\Z", re.IGNORECASE)


def _row_text(row: Any) -> str:
    cells: list[str] = []
    seen: set[int] = set()
    for cell in row.cells:
        if id(cell._tc) in seen:  # a merged cell appears once per grid column it spans
            continue
        seen.add(id(cell._tc))
        cells.append(" ".join(cell.text.split()))
    return "\t".join(cells).strip()


def read_docx(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A Word document as one unit per section (see the module docstring)."""
    del options  # no option changes Word documents
    open_archive(data, source, "Word")
    try:
        import docx
        from docx.table import Table
    except ImportError as exc:
        raise missing_extra(source, ".docx", exc) from exc
    document = docx.Document(io.BytesIO(data))
    title = " ".join((document.core_properties.title or "").split()) or None
    base: dict[str, MetadataValue] = {"source": source}
    builder = UnitBuilder(base)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                builder.add(_row_text(row))
            continue
        text = block.text
        style = (block.style.name if block.style is not None else "") or ""
        heading = _HEADING.match(style.strip())
        if heading:
            builder.heading(int(heading.group(1)), text)
        elif style.strip().lower() == "title" and title is None and text.strip():
            title = " ".join(text.split())
        else:
            builder.add(text)
    return builder.result(title=title)
