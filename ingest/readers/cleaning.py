"""Markup noise left out of chunk text: Markdown links, escapes, attribute lists and inline HTML tags.

Readers clean a file's text before they cut it into units, so the extracted text (which chunk offsets
count in) is the cleaned text, as the HTML reader's is the visible text. Code is never touched: fenced and
indented code blocks and inline code spans keep their `{ #id }` and `<br>` literally.

- Attribute lists (Python-Markdown `attr_list`, kramdown IALs, Pandoc): `{ #id }`, `{#id .class}`,
  `{: .class key="v" }` are removed where they follow text and where they stand on a line of their own.
- Inline HTML: tags of the usual HTML elements (`<abbr title="...">`, `</abbr>`, `<kbd>`, `<span>`,
  `<sup>`...) are removed and their text kept; `<br>` becomes a space; comments `<!-- ... -->` are
  removed, also when they span lines (their lines become empty, so line numbers stay). Angle
  brackets that are not such tags (`<https://...>`, `List<T>`, `a < b`) stay.
- Links and images keep their text: `[text](url "title")` -> `text`, `![alt](src)` -> `alt`,
  `[![badge](img)](link)` -> `badge`, `[text][label]` -> `text`; a link whose text is inline code
  keeps the code span. Link reference definitions (`[label]: url`) are removed.
- Backslash escapes lose their backslash (`async\\_hooks` -> `async_hooks`), so escaped words are
  found as written; an escape opening a line stays (`\\# 1` must not become a heading).
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
_ATTR_LIST = re.compile(rf"\{{:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*\}}")  # and the blanks before it
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_HELD = re.compile(r"\x00(\d+)\x00")  # a code span held out of the prose (NUL never reaches a reader)
# Patterns written as "unrolled loops" (`a*(?:b a*)*`), which scan a long changelog line in one pass.
_LABEL = r"\[([^\[\]\\\n]*(?:\\.[^\[\]\\\n]*)*)\]"
_TITLE = r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?"
# Links and images; an image's `!` goes first (`_IMAGE`), so every pattern opens with a literal.
_IMAGE = re.compile(r"!(?=\[[^\[\]\n]*\][(\[])")
_LINK = re.compile(rf"{_LABEL}\((?:<[^<>\n]*>|[^()\s\\]*(?:(?:\\.|\([^()\s]*\))[^()\s\\]*)*){_TITLE}[ \t]*\)")
_REF_LINK = re.compile(rf"{_LABEL}\[[^\[\]\n]*\]")
_DEFINITION = re.compile(rf" {{0,3}}\[(?!\^)(?:[^\[\]\\\n]|\\.)+\]:[ \t]*(?:<[^<>\n]*>|\S+){_TITLE}[ \t]*\Z")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_NOISE = re.compile(r"[<{\\]|\]\(|\]\[")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_INDENTED = re.compile(r"(?: {4}|\t)")


def clean_inline(line: str) -> str:
    """One line of prose without links, escapes, attribute lists and HTML tags; inline code spans are
    kept as they are (a link's text may hold one)."""
    if not _NOISE.search(line):
        return line  # the common case, one scan
    spans: list[str] = []

    def hold(span: re.Match[str]) -> str:
        spans.append(span.group(0))
        return f"\x00{len(spans) - 1}\x00"

    prose = _clean_prose(_CODE_SPAN.sub(hold, line) if "`" in line else line)
    return _HELD.sub(lambda held: spans[int(held.group(1))], prose) if spans else prose


def _label(link: re.Match[str]) -> str:
    return link.group(1)


def _clean_prose(text: str) -> str:
    if "<" in text:
        text = _COMMENT.sub("", text)
        text = _BR.sub(" ", text)
        text = _TAG.sub("", text)
    if "{" in text:
        text = _drop_attribute_lists(text)
    if "](" in text or "][" in text:
        if "![" in text:
            text = _IMAGE.sub("", text)
        if "](" in text:
            text, found = _LINK.subn(_label, text)
            if found and "](" in text:  # an image inside a link
                text = _LINK.sub(_label, text)
        if "][" in text:
            text = _REF_LINK.sub(_label, text)
    if "\\" in text:
        start = len(text) - len(text.lstrip())
        start += 2 if text.startswith("\\", start) else 0
        text = text[:start] + _ESCAPE.sub(_label, text[start:])
    return text


def _drop_attribute_lists(text: str) -> str:
    pieces: list[str] = []
    last = 0
    for found in _ATTR_LIST.finditer(text):
        pieces.append(text[last : found.start()].rstrip(" \t"))
        last = found.end()
    return "".join([*pieces, text[last:]]) if pieces else text


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
            cleaned = "" if _DEFINITION.match(line) else clean_inline(line).rstrip()
            lines[number] = cleaned if cleaned.strip() else ""
            after_blank = False
    return "\n".join(lines)
