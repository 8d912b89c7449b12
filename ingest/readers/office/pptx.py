"""PowerPoint decks (`.pptx`) through python-pptx: one unit per slide, with its number and title.

- Each slide's unit carries `slide` (1-based), which citations show (`deck.pptx, slide 3`), and
  `section`, the slide's title. Text frames, tables (a row is its cells joined by tabs) and grouped
  shapes are read in the slide's shape order; the speaker notes follow as `Notes: ...`.
- `title` is the deck's core property `title`, else the first slide's title.

Example:
    >>> # read_pptx(Path("talk.pptx").read_bytes(), "talk.pptx", ReaderOptions()).units[0].metadata["slide"]
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.office.archive import UnitBuilder, missing_extra, open_archive

__all__ = ["read_pptx"]


def _shapes(shapes: Any) -> Iterator[Any]:
    """The shapes of a slide in order, groups opened (without recursion: groups may nest deeply)."""
    stack = [iter(shapes)]
    while stack:
        shape = next(stack[-1], None)
        if shape is None:
            stack.pop()
        elif hasattr(shape, "shapes") and shape.shape_type is not None and int(shape.shape_type) == 6:
            stack.append(iter(shape.shapes))  # MSO_SHAPE_TYPE.GROUP
        else:
            yield shape


def _shape_texts(shape: Any) -> Iterator[str]:
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:
            yield "\t".join(" ".join(cell.text.split()) for cell in row.cells).strip()
    elif getattr(shape, "has_text_frame", False):
        yield shape.text_frame.text


def read_pptx(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A PowerPoint deck as one unit per slide (see the module docstring)."""
    del options  # no option changes decks
    open_archive(data, source, "PowerPoint")
    try:
        import pptx
    except ImportError as exc:
        raise missing_extra(source, ".pptx", exc) from exc
    deck = pptx.Presentation(io.BytesIO(data))
    title = " ".join((deck.core_properties.title or "").split()) or None
    base: dict[str, MetadataValue] = {"source": source}
    builder = UnitBuilder(base)
    for number, slide in enumerate(deck.slides, start=1):
        builder.cut(slide=number)
        heading = slide.shapes.title
        heading_text = " ".join(heading.text_frame.text.split()) if heading is not None else ""
        if heading_text:
            builder.heading(1, heading_text)
            title = title or heading_text
        for shape in _shapes(slide.shapes):
            if heading is not None and shape.shape_id == heading.shape_id:
                continue
            for text in _shape_texts(shape):
                builder.add(text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                builder.add(f"Notes: {notes.text.strip()}")
    return builder.result(title=title)
