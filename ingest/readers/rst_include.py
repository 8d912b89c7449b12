"""reStructuredText includes and substitutions, resolved as Sphinx renders them.

`.. include:: FILE` puts FILE's text in the page at that place, so the words of a shared fragment
(CMake's `FIND_XXX.txt` behind every `find_*` command, a `DEPRECATED.txt` note on each old policy)
are found on the page a reader opens:

- A relative path is taken from the including file's folder; an absolute one (`/include/NOTE.txt`)
  from the ingested root, as Sphinx takes it from the source folder. A file outside the root, a
  missing or binary one, or an include cycle leaves the directive out with a warning; a standard
  docutils include (`<isonum.txt>`) is left out silently.
- The directive's indentation is added to each included line (an include inside a definition stays
  in it). `:start-line:` / `:end-line:` and `:start-after:` / `:end-before:` select part of the
  file; `:literal:` and `:code:` include it as a literal block. Includes nest up to 8 deep, and
  together take at most `ReaderOptions.max_file_size` bytes per page.
- An include line inside a literal block or a code block is an example, and stays as written.

`substitute` replaces `|name|` by the text of a `.. |name| replace:: text` definition in the page
(`|FIND_XXX|` -> `find_library`); references without a `replace` definition stay as written.

Example:
    >>> substitute([".. |cmd| replace:: ``find_file``", "", "Use |cmd| to find a file."])[2]
    'Use ``find_file`` to find a file.'
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ingest.readers.base import ReaderOptions, SkippedFile, check_size, source_name
from ingest.readers.text import decode_text
from rag.errors import IngestError

__all__ = ["Included", "expand_includes", "substitute"]

MAX_DEPTH = 8
SUBSTITUTION_GROWTH = 1_000_000
"""Characters `replace::` substitutions may add to one page. A page defining `|a|` as a thousand `|b|`
and `|b|` as a thousand more would otherwise grow without bound."""
_INCLUDE = re.compile(r"([ \t]*)\.\.[ \t]+include::[ \t]+(\S.*?)[ \t]*\Z")
_OPTION = re.compile(r"[ \t]+:([\w-]+):(?:[ \t]+(.*?))?[ \t]*\Z")
_CODE = re.compile(r"[ \t]*\.\.[ \t]+(?:code|code-block|sourcecode|parsed-literal)::")
_REPLACE = re.compile(r"[ \t]*\.\.[ \t]+\|([^|\s](?:[^|]*[^|\s])?)\|[ \t]+replace::(?:[ \t]+(.*))?\Z")
_REFERENCE = re.compile(r"\|([^|\s](?:[^|]*[^|\s])?)\|(?:__?)?")
# Links resolved once per path: a tree includes the same few fragments from hundreds of pages.
_real_path = lru_cache(maxsize=4096)(os.path.realpath)


def _real(path: Path) -> Path:
    return Path(_real_path(str(path)))


@dataclass
class Included:
    """A page's lines with its includes resolved, the files they came from, and what was left out."""

    lines: list[str]
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Context:
    root: Path
    options: ReaderOptions
    found: Included
    left: int | None  # bytes the page's includes may still take (None: no limit)


def expand_includes(lines: list[str], path: Path, root: Path, options: ReaderOptions) -> Included:
    """`lines` of the file at `path` with every `.. include::` replaced (see the module docstring).

    `root` is the ingested folder (or the file itself); `Included.files` names the files read, by
    their path in it.
    """
    top = root if root.is_dir() else root.parent
    found = Included([])
    context = _Context(_real(top.absolute()), options, found, options.max_file_size)
    found.lines = _expand(lines, path, context, (_real(path.absolute()),))
    return found


def _opens_literal(line: str) -> bool:
    """Whether the lines indented below `line` are a literal block (`Example::`, `.. code-block::`)."""
    stripped = line.rstrip()
    if stripped.lstrip().startswith(".."):
        return bool(_CODE.match(line))
    return stripped.endswith("::")


def _expand(lines: list[str], here: Path, context: _Context, chain: tuple[Path, ...]) -> list[str]:
    out: list[str] = []
    i = 0
    literal = -1  # the indentation a literal block's lines exceed, or -1 outside one
    while i < len(lines):
        line = lines[i]
        if literal >= 0 and (not line.strip() or len(line) - len(line.lstrip()) > literal):
            out.append(line)
            i += 1
            continue
        match = _INCLUDE.match(line) if "include::" in line else None
        if match is None:
            literal = len(line) - len(line.lstrip()) if _opens_literal(line) else -1
            out.append(line)
            i += 1
            continue
        literal = -1
        indent, target = match.group(1), match.group(2)
        options: dict[str, str] = {}
        i += 1
        while i < len(lines) and (option := _OPTION.match(lines[i])) and lines[i].find(":") > len(indent):
            options[option.group(1).lower()] = option.group(2) or ""
            i += 1
        loaded = _load(target, here, context, chain)
        if loaded is None:
            continue
        file, text = loaded
        part = _select(text.split("\n"), options)
        if "literal" in options or "code" in options:
            out.extend([f"{indent}::", "", *(f"{indent}   {line}" for line in part), ""])
            continue
        if len(chain) < MAX_DEPTH:
            part = _expand(part, file, context, (*chain, file))
        out.extend(f"{indent}{line}" if line.strip() else "" for line in part)
    return out


def _load(target: str, here: Path, context: _Context, chain: tuple[Path, ...]) -> tuple[Path, str] | None:
    """The included file and its text, or None (with a warning unless it is a standard include)."""
    if target.startswith("<") and target.endswith(">"):
        return None  # docutils' own definition files (<isonum.txt>): substitutions, no prose
    base = context.root if target.startswith("/") else here.parent
    file = _real(base.absolute() / target.lstrip("/"))
    name = source_name(file, context.root)
    reason = None
    if not file.is_relative_to(context.root):
        reason = "outside the ingested folder"
    elif file in chain:
        reason = "it includes itself"
    else:
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode):  # a named pipe would block the read, a folder fail it
                raise SkippedFile(name, "not a regular file")
            size = info.st_size
            check_size(size, name, context.options)
            if context.left is not None and size > context.left:
                raise IngestError(
                    f"the page's includes pass {context.options.max_file_size} bytes "
                    "(--max-file-size MB raises it)"
                )
            context.left = None if context.left is None else context.left - size
            text = decode_text(file.read_bytes(), name).text
        except OSError as exc:
            reason = exc.strerror or str(exc)
        except SkippedFile as exc:
            reason = exc.reason
        except IngestError as exc:
            reason = str(exc)
    if reason is not None:
        context.found.warnings.append(f"include {target!r} left out: {reason}")
        return None
    if name not in context.found.files:
        context.found.files.append(name)
    return file, text


def _select(lines: list[str], options: dict[str, str]) -> list[str]:
    """The part of an included file's lines that the directive's options choose."""
    lines = lines[_number(options.get("start-line")) : _number(options.get("end-line"))]
    text = "\n".join(lines)
    if after := options.get("start-after"):
        text = text.split(after, 1)[1] if after in text else text
    if before := options.get("end-before"):
        text = text.split(before, 1)[0]
    return text.split("\n")


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def _definitions(lines: list[str]) -> dict[str, str]:
    """The page's `.. |name| replace:: text` definitions: name -> text (its indented lines joined)."""
    definitions: dict[str, str] = {}
    for n, line in enumerate(lines):
        if "replace::" in line and (match := _REPLACE.match(line)):
            words = [match.group(2) or ""]
            for more in lines[n + 1 :]:
                if not more.strip() or not more[:1].isspace() or more.lstrip().startswith(".."):
                    break
                words.append(more.strip())
            definitions[match.group(1)] = " ".join(w.strip() for w in words if w.strip())
    return definitions


def substitute(lines: list[str], warnings: list[str] | None = None) -> list[str]:
    """`lines` with `|name|` replaced wherever the page defines `.. |name| replace:: text`.

    A definition's text goes on in the indented lines below it; a replacement may use other
    substitutions (resolved up to 4 levels). Definition lines themselves are left as they are.
    Replacements add at most `SUBSTITUTION_GROWTH` characters to the page; past that, references stay
    as written and a warning is added to `warnings`.
    """
    definitions = _definitions(lines)
    if not definitions:
        return lines

    room = SUBSTITUTION_GROWTH
    stopped = False

    def replace(match: re.Match[str]) -> str:
        nonlocal room, stopped
        text = definitions.get(match.group(1))
        if text is None:
            return match.group(0)
        growth = len(text) - len(match.group(0))
        if growth > room:
            stopped = True
            return match.group(0)
        room -= max(growth, 0)
        return text

    out = list(lines)
    for n, line in enumerate(out):
        if "|" not in line or _REPLACE.match(line):
            continue
        for _ in range(4):
            changed = _REFERENCE.sub(replace, line)
            if changed == line:
                break
            line = changed
        out[n] = line
    if stopped and warnings is not None:
        warnings.append(
            f"substitutions stopped at {SUBSTITUTION_GROWTH:,} added characters; the rest stay as written"
        )
    return out
