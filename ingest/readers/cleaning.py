"""Markup noise left out of chunk text: Markdown attribute lists and inline HTML tags.

Readers clean a file's text before they cut it into units, so the extracted text (which chunk offsets
count in) is the cleaned text, as the HTML reader's is the visible text. Code is never touched: fenced and
indented code blocks and inline code spans keep their `{ #id }` and `<br>` literally.

- Attribute lists (Python-Markdown `attr_list`, kramdown IALs, Pandoc): `{ #id }`, `{#id .class}`,
  `{: .class key="v" }` are removed where they follow text and where they stand on a line of their own.
- Inline HTML: tags of the usual HTML elements (`<abbr title="...">`, `</abbr>`, `<kbd>`, `<span>`,
  `<sup>`...) are removed and their text kept; `<br>` becomes a space; comments `<!-- ... -->` are
  removed, also when they span lines (their lines become empty, so line numbers stay). Angle
  brackets that are not such tags (`<https://...>`, `List<T>`, `a < b`) stay.
- A line that held nothing but noise becomes empty, so paragraphs stay apart.

Example:
    >>> clean_markdown('## Go { #go }\\n\\nPress <kbd>Ctrl</kbd>+<kbd>C</kbd> <abbr title="x">now</abbr>.')
    '## Go\\n\\nPress Ctrl+C now.'
"""

from __future__ import annotations

import re

__all__ = ["clean_inline", "clean_markdown"]

_HTML_TAGS = (
    "a abbr acronym address article aside b bdi bdo big blockquote br caption center cite code col "
    "colgroup dd del details dfn div dl dt em figcaption figure font footer h1 h2 h3 h4 h5 h6 header hr i "
    "img ins kbd label li mark nav ol p picture pre q s samp section small source span strike strong sub "
    "summary sup table tbody td tfoot th thead tr tt u ul var wbr"
)
_TAG = re.compile(
    rf"</?(?:{'|'.join(_HTML_TAGS.split())})(?=[\s/>])(?:\s+[^<>]*?)?\s*/?>",
    re.IGNORECASE,
)
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->")
_ATTR = r"(?:[#.][\w:-]+|[\w:-]+=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s}\"']+))"
_ATTR_LIST = re.compile(rf"[ \t]*\{{:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*\}}")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_INDENTED = re.compile(r"(?: {4}|\t)")


def clean_inline(line: str) -> str:
    """One line of prose without attribute lists and HTML tags; inline code spans are kept as they are."""
    if "<" not in line and "{" not in line:
        return line  # the common case, without any regex
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        out.extend((_clean_prose(line[last : span.start()]), span.group(0)))
        last = span.end()
    out.append(_clean_prose(line[last:]))
    return "".join(out)


def _clean_prose(text: str) -> str:
    text = _COMMENT.sub("", text)
    text = _BR.sub(" ", text)
    text = _TAG.sub("", text)
    return _ATTR_LIST.sub("", text)


def _unclosed_comment(line: str) -> int | None:
    """Where a `<!--` that this line does not close begins, outside inline code; None if there is none."""
    opened = line.rfind("<!--")
    if opened < 0 or "-->" in line[opened + 4 :] or line.count("`", 0, opened) % 2:
        return None
    return opened


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence) and set(stripped) == {fence[0]}
    )


def clean_markdown(text: str) -> str:
    """`text` with attribute lists and inline HTML tags removed outside code (see the module docstring)."""
    lines = text.split("\n")
    fence: str | None = None
    after_blank = True  # an indented line opens a code block only after a blank line
    comment = False  # inside an HTML comment that began on an earlier line
    for number, line in enumerate(lines):
        if comment:
            end = line.find("-->")
            if end < 0:
                lines[number] = ""
                continue
            comment = False
            line = lines[number] = line[end + 3 :]
        if fence is not None:
            fence = None if _closes(line, fence) else fence
        elif not line.strip():
            after_blank = True
        elif opening := _FENCE_OPEN.match(line):
            fence, after_blank = opening.group(1), False
        elif not (after_blank and _INDENTED.match(line)):  # indented code stays as it is
            opened = _unclosed_comment(line)
            if opened is not None:
                line, comment = line[:opened], True
            cleaned = clean_inline(line).rstrip()
            lines[number] = cleaned if cleaned.strip() else ""
            after_blank = False
    return "\n".join(lines)
