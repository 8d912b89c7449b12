"""reStructuredText noise left out of chunk text: adornments, directive markers and options, roles.

`clean_rst_lines` decides, line by line, what the extracted text keeps:

- Title adornments (the underline and overline of each section title) and transitions (a lone line of
  punctuation) are dropped; the title line stays.
- Directives: the `.. name:: args` marker line is dropped, and so are its option lines (`:maxdepth: 2`)
  right below it. Admonitions (`note`, `warning`, `tip`, ...) keep their argument text as a line; the
  content of directives that hold no prose (`toctree`, `image`, `include`, `raw`, `index`, ...) is
  dropped; every other directive's content (an admonition's text, a code block's code) stays.
- Comments (`.. anything else`, with their indented block), hyperlink targets (`.. _label:`) and
  substitution definitions (`.. |name| image:: x`) are dropped; a footnote keeps its text.
- Roles are reduced to their text: ``:ref:`Install <install>` `` -> `Install`, ``:func:`~pkg.run` ``
  -> `run`, ``:doc:`guide/install` `` -> `guide/install`; a PEP or RFC keeps the label it is
  rendered with and searched by: ``:pep:`498` `` -> `PEP 498`, ``:rfc:`2616#section-14` `` ->
  `RFC 2616` (an explicit title wins: ``:pep:`f-strings <498>` `` -> `f-strings`). A role's text is
  unescaped (``:variable:`FOO <FOO_\\<N\\>>` `` -> `FOO`, ``:variable:`CMP\\<NNNN\\>` `` ->
  `CMP<NNNN>`), and a role broken across lines joins them into one. Hyperlink
  references are reduced too (`` `Docs <https://x>`_ `` -> `Docs`). A paragraph's closing
  `::` (which introduces a literal block) becomes `:`. Inline literals lose their double backquotes
  (``` ``POST_BUILD`` ``` -> `POST_BUILD`). Literal blocks and code keep their text as is; a
  `parsed-literal` block's roles and references are reduced as prose's are.

Example:
    >>> lines = ["Title", "=====", "", ".. note::", "   :class: tip", "", "   See :ref:`the guide <g>`."]
    >>> [(i, text) for i, text in clean_rst_lines(lines, {1}, 0)]
    [(0, 'Title'), (2, ''), (5, ''), (6, '   See the guide.')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["clean_role_text", "clean_rst_lines"]

_DIRECTIVE = re.compile(r"(\s*)\.\.[ \t]+([\w:.+-]+)::(?:[ \t]+(.*))?\Z")
_EXPLICIT = re.compile(r"(\s*)\.\.(?:[ \t]+(.*))?\Z")
_FOOTNOTE = re.compile(r"(\s*)\.\.[ \t]+\[[^\]]+\][ \t]+(.*)\Z")
_OPTION = re.compile(r"\s+:[\w.+-]+(?:[ \t][^:]*)?:(?:[ \t].*)?\Z")
_ROLE = re.compile(r"((?::[\w.+-]+)+):`([^`]+)`")
_OPEN_ROLE = re.compile(r":[\w.+-]+:`[^`]*\Z")  # a role whose text goes on in the next line
_TARGET = re.compile(r"(.*?)\s*(?<!\\)<(?:\\.|[^<>\\])+>", re.DOTALL)  # `title <target>`, escapes allowed
_ESCAPE = re.compile(r"\\(.)")
_LABELLED = {"pep": "PEP", "rfc": "RFC"}  # roles Sphinx renders as "PEP 8", "RFC 2616"
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]+>`__?")
_REF = re.compile(r"`([^`]+)`__?(?!\w)")
_LITERAL = re.compile(r"``([^`]+?)``")
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*\Z")
_ADMONITIONS = frozenset(
    [
        "admonition",
        "attention",
        "caution",
        "danger",
        "error",
        "hint",
        "important",
        "note",
        "rubric",
        "seealso",
        "sidebar",
        "tip",
        "topic",
        "warning",
    ]
)
_NO_PROSE = frozenset(
    [
        "autoclass",
        "autodata",
        "autoexception",
        "autofunction",
        "automethod",
        "automodule",
        "autosummary",
        "contents",
        "currentmodule",
        "default-role",
        "highlight",
        "image",
        "include",
        "index",
        "literalinclude",
        "meta",
        "module",
        "only",
        "raw",
        "role",
        "sectnum",
        "tabularcolumns",
        "toctree",
    ]
)


def _role_text(match: re.Match[str]) -> str:
    role = match.group(1).rsplit(":", 1)[-1].lower()
    inner = match.group(2).strip()
    named = _TARGET.fullmatch(inner)
    if named and named.group(1):
        return _ESCAPE.sub(r"\1", named.group(1))
    inner = _ESCAPE.sub(r"\1", inner.lstrip("!"))
    if role in _LABELLED:
        return f"{_LABELLED[role]} {inner.split('#', 1)[0].strip()}"
    return inner[1:].rsplit(".", 1)[-1] if inner.startswith("~") else inner


def clean_role_text(line: str) -> str:
    """A line of prose with roles, hyperlink references and inline literals reduced to their text."""
    if "`" not in line:
        return line
    line = _ROLE.sub(_role_text, line)
    line = _LINK.sub(r"\1", line)
    line = _REF.sub(r"\1", line)
    return _LITERAL.sub(r"\1", line)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """The first line after `start` that is not blank and not indented deeper than `indent`."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return end


def _is_transition(lines: list[str], i: int) -> bool:
    line = lines[i]
    blank_around = (i == 0 or not lines[i - 1].strip()) and (i + 1 == len(lines) or not lines[i + 1].strip())
    return bool(_ADORNMENT.match(line)) and len(line.strip()) >= 4 and blank_around


def _directive(lines: list[str], i: int, match: re.Match[str]) -> tuple[list[tuple[int, str]], int]:
    """What a directive at line `i` keeps, and the line where its handling ends."""
    indent, name, args = len(match.group(1)), match.group(2).lower(), (match.group(3) or "").strip()
    kept: list[tuple[int, str]] = []
    if name in _ADMONITIONS and args:
        kept.append((i, match.group(1) + clean_role_text(args)))
    j = i + 1
    while j < len(lines) and lines[j].strip() and _OPTION.match(lines[j]) and _indent(lines[j]) > indent:
        j += 1  # option lines
    if name in _NO_PROSE:
        return kept, _block_end(lines, i, indent)
    if name in {"code", "code-block", "sourcecode", "doctest", "parsed-literal"}:
        end = _block_end(lines, j - 1, indent)
        parsed = name == "parsed-literal"  # a literal block whose inline markup is rendered
        kept.extend((k, clean_role_text(lines[k]) if parsed else lines[k]) for k in range(j, end))
        return kept, end
    return kept, j


def _continues(lines: list[str], i: int, adornments: set[int]) -> bool:
    """Whether line `i` goes on the paragraph above it."""
    return i < len(lines) and bool(lines[i].strip()) and i not in adornments and not _EXPLICIT.match(lines[i])


def clean_rst_lines(lines: list[str], adornments: set[int], first: int) -> Iterator[tuple[int, str]]:
    """`(line number, cleaned line)` for every line from `first` that the text keeps (see the module).

    `adornments` holds the line numbers of title underlines and overlines, found beforehand.
    """
    i = first
    literal_after = -1  # the indentation a literal block must exceed, or -1 outside one
    while i < len(lines):
        line = lines[i]
        if literal_after >= 0 and (not line.strip() or _indent(line) > literal_after):
            yield i, line
            i += 1
            continue
        literal_after = -1
        if i in adornments or _is_transition(lines, i):
            i += 1
            continue
        if directive := _DIRECTIVE.match(line):
            kept, i = _directive(lines, i, directive)
            yield from kept
            continue
        if footnote := _FOOTNOTE.match(line):
            yield i, footnote.group(1) + clean_role_text(footnote.group(2))
            i += 1
            continue
        if explicit := _EXPLICIT.match(line):  # a comment, a target or a substitution definition
            i = _block_end(lines, i, len(explicit.group(1)))
            continue
        stripped, last = line.rstrip(), i
        while _OPEN_ROLE.search(_ROLE.sub("", stripped)) and _continues(lines, last + 1, adornments):
            last += 1  # a role broken across lines: the lines become one, so the role is cleaned whole
            stripped = f"{stripped} {lines[last].strip()}"
        if stripped.endswith("::"):
            literal_after = _indent(line)
            stripped = stripped[:-2].rstrip() + (":" if stripped[:-2].strip() else "")
            if not stripped.strip():
                i += 1
                continue
        yield i, clean_role_text(stripped)
        i = last + 1
