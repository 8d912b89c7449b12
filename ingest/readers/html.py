"""HTML: the visible text of a page, with its `<title>`, through the standard library's `html.parser`.

- Left out: `script`, `style`, `noscript`, `template`, `nav`, `header`, `footer`, `aside`, `form`, `svg`,
  `iframe`, `object`, `canvas`, `select`, `button`, and the whole `<head>` except `<title>`; elements
  with the `hidden` attribute or `aria-hidden="true"`; heading permalinks (`<a class="headerlink">¶</a>`,
  as Sphinx and MkDocs write them). Navigation written without `<nav>` goes too: an element whose ARIA
  `role` is `navigation`, `banner`, `contentinfo` or `search` (Node's and Sphinx's sidebars), or whose
  class is a navigation one (DocBook's `navheader` / `navfooter`, `nav`, `navbar`, `sphinxsidebar`,
  `skip-link`): the same menu on every page of a site is no page's text.
- Block elements (paragraphs, headings, list items, table rows, ...) end a paragraph (a blank line,
  which the splitter cuts on first); `<br>` ends a line; table cells are separated by a tab.
- Whitespace collapses as a browser collapses it, except inside `<pre>`; entities are decoded.
- `title` is `<title>`, else the first `<h1>`. Encoding: a BOM, UTF-8, then `<meta charset>`.

Example:
    >>> page = b"<title>Guide</title><nav>Home</nav><p>Hello&nbsp;<b>world</b></p><script>x()</script>"
    >>> unit = read_html(page, "g.html", ReaderOptions()).units[0]
    >>> unit.text, unit.metadata["title"]
    ('Hello\\xa0world', 'Guide')
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ingest.readers.base import ReaderOptions, ReadResult
from ingest.readers.text import decode_text, make_unit

__all__ = ["read_html", "visible_text"]


def _tags(names: str) -> frozenset[str]:
    return frozenset(names.split())


_SKIP = _tags(
    "script style noscript template nav header footer aside form svg iframe object canvas select button"
)
_SKIP |= {"head"}  # everything in <head> but <title>, which is read on its own
_VOID = _tags("area base br col embed hr img input link meta param source track wbr")
_BLOCK = _tags(
    "address article blockquote body caption dd details dialog div dl dt fieldset figcaption figure "
    "h1 h2 h3 h4 h5 h6 hr html li main ol p pre section summary table tbody thead tfoot tr ul"
)
_CELL = frozenset({"td", "th"})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\n\r\f\v]+")  # HTML whitespace; a no-break space is text
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


_PERMALINK_CLASSES = frozenset({"headerlink", "anchor", "mark", "permalink", "header-anchor"})
_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_NAV_CLASSES = _tags("nav navbar navheader navfooter navigation sphinxsidebar skip-link skip-to-content")


def _is_navigation(attrs: dict[str, str | None]) -> bool:
    """An element that is a site's navigation by its ARIA role or by a navigation class."""
    if (attrs.get("role") or "").lower() in _NAV_ROLES:
        return True
    return not _NAV_CLASSES.isdisjoint((attrs.get("class") or "").lower().split())


def _is_permalink(attrs: dict[str, str | None]) -> bool:
    """A link to its own heading: a permalink class (Sphinx `headerlink`, Node's `mark`...) or an anchor
    whose `href` is `#` plus its own `id`."""
    href = attrs.get("href") or ""
    if not href.startswith("#"):
        return "headerlink" in (attrs.get("class") or "").split()
    classes = set((attrs.get("class") or "").split())
    return bool(classes & _PERMALINK_CLASSES) or (len(href) > 1 and attrs.get("id") == href[1:])


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []  # the open elements whose content is left out
        self.pre = 0
        self.title: list[str] | None = None
        self.titles: list[str] = []
        self.h1: list[str] | None = None
        self.h1s: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        hidden = any(k == "hidden" or (k == "aria-hidden" and v == "true") for k, v in attrs)
        # The "¶" / "#" permalinks that Sphinx, MkDocs and Node's docs put in every heading are not text.
        if attrs:
            named = dict(attrs)
            hidden |= (tag == "a" and _is_permalink(named)) or _is_navigation(named)
        if tag == "title" and self.skipping in ([], ["head"]):
            self.title = []
        elif self.skipping or tag in _SKIP or (hidden and tag not in _VOID):
            if tag not in _VOID:
                self.skipping.append(tag)
        elif tag == "br":
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append("\t")
        elif tag in _BLOCK:
            self.parts.append("\n\n")
            self.pre += tag == "pre"
            if tag == "h1" and self.h1 is None and not self.h1s:
                self.h1 = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title is not None:
            self.titles.append(" ".join("".join(self.title).split()))
            self.title = None
        elif self.skipping:
            if tag in self.skipping:  # also closes elements left open inside it
                del self.skipping[len(self.skipping) - 1 - self.skipping[::-1].index(tag) :]
        elif tag in _BLOCK:
            self.parts.append("\n\n")
            self.pre -= tag == "pre" and self.pre > 0
            if tag == "h1" and self.h1 is not None:
                self.h1s.append(" ".join("".join(self.h1).split()))
                self.h1 = None

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        elif not self.skipping:
            self.parts.append(data if self.pre else _SPACES.sub(" ", data))
            if self.h1 is not None:
                self.h1.append(data)


def visible_text(markup: str) -> tuple[str, str | None]:
    """The visible text of an HTML document and its title (None when it has none)."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    # Trim the spaces that collapsing left around line breaks, then keep at most one blank line.
    text = "\n".join(line.strip(" \t") for line in text.split("\n"))
    text = _BLANK_RUNS.sub("\n\n", text).strip()
    title = next((t for t in [*parser.titles, *parser.h1s] if t), None)
    return text, title


def read_html(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """An HTML page as one unit of visible text (see the module docstring).

    The extracted text, which chunk offsets count in, is the visible text, not the markup.
    """
    del options  # no option changes HTML
    declared = _CHARSET.search(data[:4096])
    decoded = decode_text(data, source, declared=declared.group(1).decode("ascii") if declared else None)
    text, title = visible_text(decoded.text)
    unit = make_unit(text, 0, {"source": source, "title": title})
    return ReadResult([unit] if unit else [], warnings=decoded.warnings, text=text)
