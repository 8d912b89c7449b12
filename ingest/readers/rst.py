"""reStructuredText: the title, a PEP-style header block as metadata, one unit per section.

docutils is not a dependency, so this reads the two structures that matter for retrieval itself:

- A header block at the very top: RFC 822 style (`PEP: 8`, `Title: ...`, indented continuation lines,
  ended by a blank line) as PEPs have, or an RST field list (`:Author: Ann`). Keys are lower-cased with
  `-` turned into `_` (`Post-History` -> `post_history`); values of digits only become ints (`pep: 8`).
  The block becomes metadata and is left out of the text.
- Section titles: a line underlined (optionally also overlined) with one punctuation character repeated
  at least as long as the title. Levels follow the order in which adornment styles first appear, as in
  docutils. `title` is the header's `Title`, else the first section title, which is then left out of the
  `section` paths (as in the Markdown reader); `headings` holds the same path as a list.
- Adornment lines, directive markers and options, comments and targets are left out of the text, and
  roles reduced to their text (see `ingest.readers.rst_clean`). The extracted text, which chunk offsets
  count in, is the file's text so cleaned.

Example:
    >>> doc = b"PEP: 8\\nTitle: Style Guide\\n\\nIntro\\n=====\\n\\nSome text.\\n"
    >>> unit = read_rst(doc, "pep-0008.rst", ReaderOptions()).units[0]
    >>> unit.metadata["pep"], unit.metadata["title"], unit.metadata["section"]
    (8, 'Style Guide', 'Intro')
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.fields import RESERVED_KEYS
from ingest.readers.markdown import Heading
from ingest.readers.rst_clean import clean_rst_lines
from ingest.readers.rst_include import expand_includes, substitute
from ingest.readers.text import decode_text, make_unit

__all__ = ["find_titles", "looks_like_rst", "read_rst"]

_RFC822_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(?:[ \t]+(.*))?\Z")
_RST_FIELD = re.compile(r":([^:\s][^:]*):(?:[ \t]+(.*))?\Z")
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*\Z")
_MARKUP = re.compile(
    rb"^[ \t]*\.\.[ \t]+[\w:.+-]+::|:[\w.+-]+:`[^`\n]+`|(?<!`)``[^`\s][^`\n]*(?<!\s)``(?!`)", re.MULTILINE
)


def looks_like_rst(data: bytes) -> bool:
    """Whether a text file's bytes hold reStructuredText markup: a directive, a role or an inline literal.

    A `.txt` file with such markup (a fragment a Sphinx page includes, a page of a tree that names its
    pages `.txt`) is read as reStructuredText, so its markup leaves the text as a `.rst` page's does.

    Example:
        >>> looks_like_rst(b"See :command:`add_executable`."), looks_like_rst(b"Plain: notes.")
        (True, False)
    """
    if b"::" not in data and b":`" not in data and b"``" not in data:
        return False  # most text, told by three fast scans before the pattern's slower one
    return _MARKUP.search(data) is not None


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


def _cleaned(
    lines: list[str], header_lines: int, titles: list[Heading], starts: list[int]
) -> tuple[str, dict[int, int]]:
    """The extracted text (header block, then the cleaned body) and each kept line's offset in it."""
    line_of = {start: n for n, start in enumerate(starts)}
    adornments: set[int] = set()
    for title in titles:
        first = line_of[title.start]
        adornments.update(
            n for n in (first, first + 1, first + 2) if n < len(lines) and starts[n] <= title.end
        )
        adornments.discard(_title_line(lines, first))
    kept = [(n, lines[n]) for n in range(header_lines)]
    kept.extend(clean_rst_lines(lines, adornments, header_lines))
    offsets: dict[int, int] = {}
    position = 0
    for number, line in kept:
        offsets[number] = position
        position += len(line) + 1
    return "\n".join(line for _, line in kept), offsets


def _title_line(lines: list[str], first: int) -> int:
    """The line holding a title's text: the first one, or the one below an overline."""
    return first + 1 if _is_adornment(lines[first]) else first


def read_rst(
    data: bytes, source: str, options: ReaderOptions, *, place: tuple[Path, Path] | None = None
) -> ReadResult:
    """A reStructuredText file as one unit per section (see the module docstring).

    `place` is the file's path and the ingested root: given, `.. include::` directives are replaced
    by the files they name (`ingest.readers.rst_include`), and `ReadResult.included` names them.
    Substitutions the page defines with `replace::` are applied in any case.
    """
    decoded = decode_text(data, source)
    result = ReadResult([], warnings=list(decoded.warnings))
    lines = decoded.text.split("\n")
    if place is not None and "include::" in decoded.text:
        included = expand_includes(lines, *place, options)
        lines = included.lines
        result.included = included.files
        result.warnings.extend(included.warnings)
    if result.included or "replace::" in decoded.text:
        lines = substitute(lines, result.warnings)
    starts = [0] * len(lines)
    for n in range(1, len(lines)):
        starts[n] = starts[n - 1] + len(lines[n - 1]) + 1
    fields, header_lines = _header(lines)
    titles = find_titles(lines, starts, header_lines)
    text, offsets = _cleaned(lines, header_lines, titles, starts)
    result.text = text
    line_of = {start: n for n, start in enumerate(starts)}
    # Titles placed in the cleaned text: each starts at its title line, which the cleaning keeps.
    titles = [
        Heading(offsets[line], offsets[line] + len(lines[line]), t.level, t.title)
        for t in titles
        if (line := _title_line(lines, line_of[t.start])) in offsets
    ]
    # The body starts at the first line kept after the header (a directive opening the file is not kept).
    body = next((offset for n, offset in offsets.items() if n >= header_lines), len(text))
    title_heading = titles[0] if titles and "title" not in fields else None
    base: dict[str, MetadataValue] = {**fields, "source": source}
    if title_heading is not None:
        base["title"] = title_heading.title
    for start, end, names in _pieces(text, body, titles, title_heading):
        where = {"section": " > ".join(names) or None, "headings": names or None}
        unit = make_unit(text[start:end], start, {**base, **where})
        if unit is not None:
            result.units.append(unit)
    return result


def _pieces(
    text: str, body: int, titles: list[Heading], title_heading: Heading | None
) -> list[tuple[int, int, list[str]]]:
    """`(start, end, heading path)` of the text before the first title and of each titled section."""
    stack: list[Heading] = []
    bounds = [*[t.start for t in titles], len(text)]
    pieces: list[tuple[int, int, list[str]]] = [(body, bounds[0], [])]
    for heading, end in zip(titles, bounds[1:], strict=True):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        if heading is not title_heading:
            stack.append(heading)
        if text[heading.end : end].strip():
            pieces.append((heading.start, end, [h.title for h in stack]))
    if titles and not text[body : bounds[0]].strip() and len(pieces) == 1:
        # A page of titles alone (a stub, an index page) is still found by the names it gives.
        pieces.append((titles[0].start, len(text), []))
    return pieces
