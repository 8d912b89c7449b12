"""AsciiDoc: the document title, header attributes as metadata, one unit per section, markup left out.

AsciiDoc is what Spring's and many Java projects' documentation is written in. No AsciiDoc processor is
a dependency; this reads what matters for retrieval:

- Titles: `= Document title` (the `title`), `== Section` to `====== Section` (levels 1-5); lines inside
  delimited blocks are never titles. `section` is the heading path (`"Install > From source"`) and
  `headings` the same path as a list.
- Attribute entries (`:name: value` lines) are left out of the text; those of the header (the lines
  right below the document title) become metadata (`:revnumber: 1.0` -> `revnumber`), and references to
  them (`{revnumber}`) are replaced by their value.
- Left out: block delimiter lines (`----`, `====`, `****`, `....`, `____`, `++++`, `--`, `|===`), block
  attribute and anchor lines (`[source,java]`, `[[id]]`), comments (`//` lines and `////` blocks) and
  block macros such as `include::other.adoc[]`, `image::x.png[]` and `ifdef::...[]`. The content of a
  listing block (code) is kept as it is.
- Admonition labels (`NOTE: `, `TIP: `, `WARNING: `...) are dropped and their text kept; block titles
  (`.Example title`) keep their text. Inline macros keep their text: `xref:page.adoc[Install]` and
  `<<install,Install>>` -> `Install`, `link:https://x[the site]` -> `the site`, `kbd:[Ctrl+C]` -> `Ctrl+C`.
- Anchors are left out wherever they stand (`[[speech-options]]`, `anchor:id[]`); an image, inline
  (`image:yes.svg[width=16]`, in a table cell too) or a block, becomes its alt text
  (`image::arch.png[Architecture]` -> `Architecture`, `alt=` as well), or nothing without one.

The extracted text, which chunk offsets count in, is the file's text so cleaned.

Example:
    >>> doc = b"= Guide\\n:revnumber: 2.1\\n\\n== Install\\n\\nNOTE: Needs {revnumber}.\\n"
    >>> doc += b"\\n----\\nmake\\n----\\n"
    >>> unit = read_asciidoc(doc, "guide.adoc", ReaderOptions()).units[0]
    >>> unit.metadata["title"], unit.metadata["section"], unit.metadata["revnumber"], unit.text
    ('Guide', 'Install', '2.1', 'Install\\n\\nNeeds 2.1.\\n\\nmake')
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.fields import RESERVED_KEYS
from ingest.readers.markdown import Heading
from ingest.readers.text import decode_text, make_unit

__all__ = ["read_asciidoc"]

_TITLE = re.compile(r"(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*\Z")
_ATTRIBUTE = re.compile(r":(!?[\w][\w-]*!?):(?:[ \t]+(.*))?\Z")
_DELIMITER = re.compile(r"(?:-{4,}|={4,}|\*{4,}|\.{4,}|_{4,}|\+{4,}|--|\|={3,})[ \t]*\Z")
_LISTING = re.compile(r"(?:-{4,}|\.{4,}|\+{4,})[ \t]*\Z")  # blocks whose content is verbatim
_BLOCK_ATTRIBUTES = re.compile(r"\[\[?[^\]]*\]\]?[ \t]*\Z")
_BLOCK_MACRO = re.compile(
    r"(?:include|image|ifdef|ifndef|ifeval|endif|toc|video|audio)::[^\[]*\[.*\][ \t]*\Z"
)
_BLOCK_TITLE = re.compile(r"\.([^.\s].*)\Z")
_ADMONITION = re.compile(r"(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+")
_XREF = re.compile(r"<<([^,>]+)(?:,\s*([^>]+))?>>")
_MACRO = re.compile(r"\b(?:xref|link|mailto|kbd|btn|menu|footnote|pass):([^\s\[]*)\[([^\]]*)\]")
_ANCHOR = re.compile(r"\[\[[^\[\]\s]+\]\]|\banchor:[^\s\[]+\[[^\]]*\]")
_IMAGE = re.compile(r"\bimage::?[^\s\[]*\[([^\]]*)\]")
_URL_MACRO = re.compile(r"\b((?:https?|ftp)://[^\s\[]+)\[([^\]]*)\]")
_ATTRIBUTE_REF = re.compile(r"\{([\w][\w-]*)\}")


def _alt(match: re.Match[str]) -> str:
    """An image macro's alt text: `alt=...`, else its first positional attribute, else nothing."""
    positional: list[str] = []
    for part in match.group(1).split(","):
        name, equals, value = part.partition("=")
        if equals and name.strip() == "alt":
            return value.strip().strip("\"'")
        if not equals:
            positional.append(part.strip().strip("\"'"))
    return positional[0] if positional else ""


def _inline(line: str, attributes: dict[str, str]) -> str:
    """A line of prose with macros reduced to their text and attribute references replaced."""
    line = _ANCHOR.sub("", line)
    line = _IMAGE.sub(_alt, line)
    line = _XREF.sub(lambda m: (m.group(2) or m.group(1)).strip(), line)
    line = _MACRO.sub(lambda m: m.group(2) or m.group(1), line)
    line = _URL_MACRO.sub(lambda m: m.group(2) or m.group(1), line)
    return _ATTRIBUTE_REF.sub(lambda m: attributes.get(m.group(1), m.group(0)), line)


def _header(lines: list[str]) -> tuple[str | None, dict[str, str], int]:
    """The document title, the header's attributes, and the first line after the header."""
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith("//")):
        i += 1
    title_match = _TITLE.match(lines[i]) if i < len(lines) else None
    if title_match is None or len(title_match.group(1)) != 1:
        return None, {}, 0
    attributes: dict[str, str] = {}
    j = i + 1
    while j < len(lines) and lines[j].strip():
        if attribute := _ATTRIBUTE.match(lines[j]):
            attributes[attribute.group(1)] = (attribute.group(2) or "").strip()
        j += 1
    return title_match.group(2).strip(), attributes, i


class _Cleaner:
    """Walks the lines once, yielding `(line number, cleaned line, heading or None)` for kept lines."""

    def __init__(self, lines: list[str], attributes: dict[str, str]) -> None:
        self.lines, self.attributes = lines, attributes
        self.verbatim: str | None = None  # the delimiter of the listing block we are in
        self.comment = False

    def run(self) -> Iterator[tuple[int, str, tuple[int, str] | None]]:
        for number, line in enumerate(self.lines):
            kept = self._line(line)
            if kept is not None:
                yield number, *kept

    def _line(self, line: str) -> tuple[str, tuple[int, str] | None] | None:
        stripped = line.strip()
        if self.comment:
            self.comment = stripped != "////"
            return None
        if self.verbatim is not None:
            if stripped == self.verbatim:
                self.verbatim = None
                return None
            return line, None
        if stripped == "////":
            self.comment = True
            return None
        if _DELIMITER.match(stripped):
            self.verbatim = stripped if _LISTING.match(stripped) else None
            return None
        return self._prose(line, stripped)

    def _prose(self, line: str, stripped: str) -> tuple[str, tuple[int, str] | None] | None:
        if stripped.startswith("image::") and _BLOCK_MACRO.match(stripped):
            alt = _inline(stripped, self.attributes).strip()
            return (alt, None) if alt else None
        if stripped.startswith("//") or _BLOCK_ATTRIBUTES.match(stripped) or _BLOCK_MACRO.match(stripped):
            return None
        if attribute := _ATTRIBUTE.match(line):
            self.attributes.setdefault(attribute.group(1), (attribute.group(2) or "").strip())
            return None
        if title := _TITLE.match(line):
            text = _inline(title.group(2).strip(), self.attributes).strip()
            return text, (len(title.group(1)) - 1, text)
        if block_title := _BLOCK_TITLE.match(line):
            return _inline(block_title.group(1), self.attributes), None
        return _inline(_ADMONITION.sub("", line, count=1), self.attributes), None


def _metadata(attributes: dict[str, str]) -> dict[str, MetadataValue]:
    return {
        name: value
        for name, value in attributes.items()
        if value and name not in RESERVED_KEYS and not name.startswith("!") and not name.endswith("!")
    }


def read_asciidoc(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """An AsciiDoc file as one unit per section (see the module docstring)."""
    del options  # no option changes AsciiDoc
    decoded = decode_text(data, source)
    result = ReadResult([], warnings=list(decoded.warnings))
    lines = decoded.text.split("\n")
    title, attributes, _ = _header(lines)
    header_fields = _metadata(attributes)
    kept: list[str] = []
    headings: list[Heading] = []
    position = 0
    for _, line, found in _Cleaner(lines, dict(attributes)).run():
        if found is not None:
            headings.append(Heading(position, position + len(line), found[0], found[1]))
        kept.append(line)
        position += len(line) + 1
    text = result.text = "\n".join(kept)
    base: dict[str, MetadataValue] = {**header_fields, "source": source}
    if title is not None:
        base["title"] = _inline(title, attributes).strip()
    stack: list[Heading] = []
    bounds = [*[h.start for h in headings], len(text)]
    pieces: list[tuple[int, int, list[str]]] = [(0, bounds[0], [])]
    for heading, end in zip(headings, bounds[1:], strict=True):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        if heading.level > 0:  # the document title names the document, not a section
            stack.append(heading)
        if text[heading.end : end].strip():
            pieces.append((heading.start, end, [h.title for h in stack]))
    for start, end, names in pieces:
        place = {"section": " > ".join(names) or None, "headings": names or None}
        unit = make_unit(text[start:end], start, {**base, **place})
        if unit is not None:
            result.units.append(unit)
    return result
