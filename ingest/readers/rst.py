"""reStructuredText: the title, a PEP-style header block as metadata, one unit per section.

docutils is not a dependency, so this reads the two structures that matter for retrieval itself:

- A header block at the very top: RFC 822 style (`PEP: 8`, `Title: ...`, indented continuation lines,
  ended by a blank line) as PEPs have, or an RST field list (`:Author: Ann`). Keys are lower-cased with
  `-` turned into `_` (`Post-History` -> `post_history`); values of digits only become ints (`pep: 8`).
  The block becomes metadata and is left out of the text.
- Section titles: a line underlined (optionally also overlined) with one punctuation character repeated
  at least as long as the title. Levels follow the order in which adornment styles first appear, as in
  docutils. `title` is the header's `Title`, else the first section title, which is then left out of the
  `section` paths (as in the Markdown reader).

Example:
    >>> doc = b"PEP: 8\\nTitle: Style Guide\\n\\nIntro\\n=====\\n\\nSome text.\\n"
    >>> unit = read_rst(doc, "pep-0008.rst", ReaderOptions()).units[0]
    >>> unit.metadata["pep"], unit.metadata["title"], unit.metadata["section"]
    (8, 'Style Guide', 'Intro')
"""

from __future__ import annotations

import re

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.fields import RESERVED_KEYS
from ingest.readers.markdown import Heading
from ingest.readers.text import decode_text, make_unit

__all__ = ["find_titles", "read_rst"]

_RFC822_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(?:[ \t]+(.*))?\Z")
_RST_FIELD = re.compile(r":([^:\s][^:]*):(?:[ \t]+(.*))?\Z")
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*\Z")


def _header(lines: list[str]) -> tuple[dict[str, MetadataValue], int]:
    """The header block's fields and the number of lines it spans (0 when there is none)."""
    fields: dict[str, str] = {}
    key: str | None = None
    index = 0
    rfc822 = 0
    for index, line in enumerate(lines):  # noqa: B007 - `index` is read after the loop
        if not line.strip():
            break
        rst_match = _RST_FIELD.match(line)
        match = rst_match or _RFC822_FIELD.match(line)
        rfc822 += not rst_match
        if match:
            key = match.group(1).strip().lower().replace("-", "_")
            fields[key] = (match.group(2) or "").strip()
        elif key is not None and line[:1] in (" ", "\t"):
            fields[key] = f"{fields[key]} {line.strip()}".strip()
        else:
            return {}, 0  # prose, not a header block
    else:
        index = len(lines)
    # One `Word: text` line is more likely prose than a header; PEP headers have several fields.
    if not fields or (rfc822 and len(fields) < 2):
        return {}, 0
    metadata: dict[str, MetadataValue] = {}
    for name, value in fields.items():
        if value and name not in RESERVED_KEYS:
            metadata[name] = int(value) if value.isdigit() and len(value) < 16 else value
    return metadata, index


def _is_adornment(line: str) -> bool:
    return bool(_ADORNMENT.match(line)) and len(line.strip()) >= 2


def find_titles(lines: list[str], starts: list[int], first: int) -> list[Heading]:
    """Section titles in `lines[first:]`; `starts[i]` is the text offset of line i."""
    styles: list[tuple[str, bool]] = []
    titles: list[Heading] = []
    i = first
    while i < len(lines) - 1:
        over = _is_adornment(lines[i]) and i + 2 < len(lines) and lines[i + 2].rstrip() == lines[i].rstrip()
        title_at = i + 1 if over else i
        title, under = lines[title_at], lines[title_at + 1]
        fits = len(under.strip()) >= len(title.strip()) or over
        plain_title = bool(title.strip()) and not _is_adornment(title)
        if plain_title and (over or not title[:1].isspace()) and _is_adornment(under) and fits:
            style = (under.strip()[0], over)
            if style not in styles:
                styles.append(style)
            end = title_at + 1
            titles.append(
                Heading(starts[i], starts[end] + len(lines[end]), styles.index(style) + 1, title.strip())
            )
            i = end + 1
        else:
            i += 1
    return titles


def read_rst(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A reStructuredText file as one unit per section (see the module docstring)."""
    del options  # no option changes reStructuredText
    decoded = decode_text(data, source)
    result = ReadResult([], warnings=list(decoded.warnings))
    text = decoded.text
    lines = text.split("\n")
    starts = [0] * len(lines)
    for n in range(1, len(lines)):
        starts[n] = starts[n - 1] + len(lines[n - 1]) + 1
    fields, header_lines = _header(lines)
    body = starts[header_lines] if header_lines < len(lines) else len(text)
    titles = find_titles(lines, starts, header_lines)
    title_heading = titles[0] if titles and "title" not in fields else None
    base: dict[str, MetadataValue] = {**fields, "source": source}
    if title_heading is not None:
        base["title"] = title_heading.title
    stack: list[Heading] = []
    bounds = [*[t.start for t in titles], len(text)]
    pieces: list[tuple[int, int, str | None]] = [(body, bounds[0], None)]
    for heading, end in zip(titles, bounds[1:], strict=True):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        if heading is not title_heading:
            stack.append(heading)
        if text[heading.end : end].strip():
            pieces.append((heading.start, end, " > ".join(h.title for h in stack) or None))
    for start, end, section in pieces:
        unit = make_unit(text[start:end], start, {**base, "section": section})
        if unit is not None:
            result.units.append(unit)
    return result
