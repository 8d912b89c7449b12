"""Markdown: YAML front matter as metadata, one unit per section with its heading path.

- Front matter is a `---` line at the very top, YAML, then a `---` (or `...`) line. Its mapping becomes
  metadata (see `flatten_fields`); YAML that does not parse is dropped from the text with a warning.
- Headings are ATX (`## Install`) or setext (a paragraph underlined with `===` or `---`); lines inside
  fenced code blocks (``` or ~~~) and indented code are never headings.
- `title` is the front matter's `title`, else the first level-1 heading. That heading is left out of
  `section` paths, which name the headings above a section: `"Install > From source"`.
- A section holding nothing but its heading gives no unit (its heading lives on in its children's paths).
- Each unit's text runs from its heading to the next heading, so it keeps its heading line; `headings`
  holds the same path as a list (`["Install", "From source"]`), for `headings CONTAINS 'Install'`.
- Attribute lists (`{ #id }`, `{: .class }`) and inline HTML tags (`<abbr title="...">`, `<kbd>`, `<br>`)
  are left out of the text outside code (see `ingest.readers.cleaning`). The extracted text, which
  chunk offsets count in, is the file's text so cleaned (it is the file's own text when there was
  nothing to clean).

Example:
    >>> doc = b"# Guide\\n\\nIntro.\\n\\n## Install\\n\\n### From source\\n\\nRun make.\\n"
    >>> [u.metadata.get("section") for u in read_markdown(doc, "g.md", ReaderOptions()).units]
    [None, 'Install > From source']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult, Unit
from ingest.readers.cleaning import clean_markdown
from ingest.readers.fields import flatten_fields
from ingest.readers.text import decode_text, make_unit

__all__ = ["Heading", "find_headings", "read_markdown"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_INDENTED = re.compile(r"(?: {4}|\t)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@dataclass(frozen=True)
class Heading:
    """A heading: where its block starts and ends in the text, its level (1-6) and its plain title."""

    start: int
    end: int
    level: int
    title: str


def _plain(title: str) -> str:
    """A heading's text without the most common inline markup (links, code ticks, emphasis)."""
    title = _LINK.sub(r"\1", title).replace("`", "")
    for mark in ("**", "__"):
        title = title.replace(mark, "")
    return " ".join(title.split())


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and stripped == fence[0] * len(stripped)
    )


def find_headings(text: str, start: int = 0) -> list[Heading]:
    """Every ATX and setext heading in `text[start:]`, outside code, in order."""
    headings: list[Heading] = []
    fence: str | None = None
    para_start: int | None = None
    para_lines: list[str] = []
    offset = start
    for line in text[start:].split("\n"):
        line_start, offset = offset, offset + len(line) + 1
        if fence is not None:
            if _closes(line, fence):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        atx = _ATX.match(line)
        if opening or atx or not line.strip():
            fence = opening.group(1) if opening else None
            if atx:
                headings.append(
                    Heading(line_start, offset - 1, len(atx.group(1)), _plain(atx.group(2) or ""))
                )
            para_start, para_lines = None, []
        elif para_start is not None and _SETEXT.match(line):
            level = 1 if line.strip()[0] == "=" else 2
            headings.append(Heading(para_start, offset - 1, level, _plain(" ".join(para_lines))))
            para_start, para_lines = None, []
        elif para_start is None and _INDENTED.match(line):
            continue  # indented code: a paragraph cannot start here
        else:
            para_start = line_start if para_start is None else para_start
            para_lines.append(line.strip())
    return headings


def _front_matter(text: str, result: ReadResult) -> tuple[dict[str, MetadataValue], int]:
    """The front matter's fields and where the body starts (0 without front matter)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, 0
    try:
        loaded = yaml.safe_load(match.group(1) or "")
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError) as exc:  # bad dates, deep nesting
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        result.warnings.append(f"front matter is not valid YAML ({reason}); ignored")
        return {}, match.end()
    if loaded is None:
        return {}, match.end()
    if not isinstance(loaded, dict):
        return {}, 0  # a `---` rule that happens to open the file, not front matter
    fields = flatten_fields(loaded)
    if "title" in fields and not isinstance(fields["title"], str):
        fields["title"] = str(fields["title"])
    return fields, match.end()


def _sections(text: str, body: int, headings: list[Heading], title_heading: Heading | None) -> list[Unit]:
    units: list[Unit] = []
    stack: list[Heading] = []
    bounds = [*[h.start for h in headings], len(text)]
    first = make_unit(text[body : bounds[0]], body, {})
    if first is not None:
        units.append(first)
    for heading, end in zip(headings, bounds[1:], strict=True):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        if heading is not title_heading:
            stack.append(heading)
        if not text[heading.end : end].strip():
            continue
        names = [h.title for h in stack if h.title]
        place: dict[str, object] = {"section": " > ".join(names) or None, "headings": names or None}
        unit = make_unit(text[heading.start : end], heading.start, place)
        if unit is not None:
            units.append(unit)
    if not units and headings:
        # A page of headings alone (a stub, an index page) is still found by the names it gives.
        only = make_unit(text[headings[0].start :], headings[0].start, {})
        units.extend([only] if only is not None else [])
    return units


def read_markdown(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A Markdown file as one unit per section (see the module docstring)."""
    del options  # no option changes Markdown
    decoded = decode_text(data, source)
    result = ReadResult([], warnings=list(decoded.warnings))
    fields, body = _front_matter(decoded.text, result)
    text = result.text = decoded.text[:body] + clean_markdown(decoded.text[body:])
    headings = find_headings(text, body)
    title_heading = next((h for h in headings if h.level == 1 and h.title), None)
    title = fields.get("title")
    if title is None and title_heading is not None:
        title = title_heading.title
    elif title is not None:
        title_heading = None  # the front matter names the document; every heading stays in the paths
    base: dict[str, MetadataValue] = {**fields, "source": source}
    if title is not None:
        base["title"] = title
    for unit in _sections(text, body, headings, title_heading):
        result.units.append(Unit(unit.text, {**base, **unit.metadata}, unit.char_offset))
    return result
