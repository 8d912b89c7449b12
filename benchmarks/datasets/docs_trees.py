"""Build docs-tree question sets from documentation installed on this machine: one page answers each question.

Each set is a folder holding `docs/` (a tree of Markdown or reStructuredText pages, read by `rag ingest`)
and `questions.jsonl` (`rag eval`'s format: `{"question", "relevant": [{"source": PAGE}]}`). A question
is the one-line summary a page gives of itself, and that line is **removed from the page** written to
`docs/`, so a search cannot win by matching it verbatim; the page keeps its title, its headings and
the rest of its text. Nothing from the data is committed: the sets are built under a temporary folder.

- `cmake`: CMake's reStructuredText Help (`/usr/share/cmake-*/Help`): every page of `command/`,
  `module/`, `variable/`, `envvar/`, `policy/`, `prop_*/` and `manual/`; a question is a sampled page's
  first sentence after its title ("Add an executable to the project using the specified source files."
  for `command/add_executable.rst`). Only that sentence leaves the page (the rest of its paragraph
  stays), and a page is a candidate only when at least `MIN_WORDS` words of text remain besides its
  title: many CMake pages are a title and that one sentence, and a page with nothing left holds no
  evidence for its question (about a third of the pages sampled before this rule kept under 20 words).
- `man-en`, `man-de`, `man-fr`: manual pages (`/usr/share/man/man5`, `man8`; `/usr/share/man/de`,
  `/usr/share/man/fr`, every section), turned into Markdown (`# name`, a `##` heading per section); a
  question is the description of the NAME line ("ls - list directory contents" gives "list directory
  contents"). The German and French sets are the non-English sets.

Usage:
    python benchmarks/datasets/docs_trees.py OUT [--sets cmake,man-en,man-de,man-fr] [--sample 150]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

SETS = ("cmake", "man-en", "man-de", "man-fr")
SAMPLE = 150  # questions per set (a fixed-seed sample of the pages that have a summary)
MIN_WORDS = 30  # words a CMake page must keep besides its title and its summary sentence
_CMAKE_FOLDERS = ("command", "module", "variable", "envvar", "policy", "manual")
_MAN_ROOTS = {
    "man-en": [Path("/usr/share/man/man5"), Path("/usr/share/man/man8")],
    "man-de": [Path("/usr/share/man/de")],
    "man-fr": [Path("/usr/share/man/fr")],
}
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
# A sentence ends at . ! or ? before a capital, markup or the end: "(i.e. the ...)" goes on.
_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s+(?=[A-Z(`:*\\])|\s*$)", re.S)
_TROFF_ESCAPE = re.compile(r"\\f[BIRP1-4]|\\f\(..|\\f\[[^\]]*\]|\\[&|^%]|\\s[-+]?\d|\\\*\(..|\\\*.")
_TROFF_CHARS = {r"\-": "-", r"\(em": "—", r"\(en": "–", r"\(aq": "'", r"\(dq": '"', r"\e": "\\", r"\ ": " "}
# Strings that pod2man and po4a pages define (`.ds Aq '`): the apostrophe of every French "l'option".
_TROFF_STRINGS = {
    r"\*(Aq": "'",
    r"\*(AQ": "'",
    r'\*(L"': '"',
    r'\*(R"': '"',
    r"\*(C`": '"',
    r"\*(C'": '"',
    r"\*(C+": "C++",
    r"\*(--": "--",
    r"\*(PI": "pi",
}
_SPECIAL = re.compile(r"\\\[(\w+)\]|\\\((\w\w)")
_NAMED = {"em": "—", "en": "–", "aq": "'", "dq": '"', "co": "©", "Fo": "«", "Fc": "»"}


def _plain_rst(text: str) -> str:
    return re.sub(r"``([^`]+)``", r"\1", _ROLE.sub(r"\1", text)).strip()


def cmake_summary(lines: list[str]) -> tuple[list[str], str] | None:
    """The page without the first sentence of its first prose paragraph after the title, and that
    sentence (roles and literals made plain); None when the page has no such sentence of 5+ words."""
    i = 2 if len(lines) > 1 and _ADORNMENT.match(lines[1]) else 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith((" ", "\t", "..")) or _ADORNMENT.match(line):
            i += 1
            continue
        if i + 1 < len(lines) and _ADORNMENT.match(lines[i + 1]):
            return None  # a heading before any prose
        end = i
        while end < len(lines) and lines[end].strip():
            end += 1
        paragraph = " ".join(part.strip() for part in lines[i:end])
        found = _SENTENCE.match(paragraph)
        if found is None:
            return None
        sentence = _plain_rst(found.group(1))
        if len(sentence.split()) < 5:
            return None
        rest = paragraph[found.end() :].strip()
        return [*lines[:i], *([rest] if rest else []), *lines[end:]], sentence
    return None


def words_besides_title(lines: list[str]) -> int:
    """Words of an reStructuredText page outside its title, adornments and directive lines."""
    start = 2 if len(lines) > 1 and _ADORNMENT.match(lines[1]) else 1
    kept = [line for line in lines[start:] if not _ADORNMENT.match(line) and not line.startswith("..")]
    return len(" ".join(kept).split())


def build_cmake(out: Path, sample: int, seed: int = 7) -> int:
    helps = sorted(Path("/usr/share").glob("cmake-*/Help"))
    if not helps:
        raise SystemExit("no CMake Help under /usr/share/cmake-*/Help (apt-get install cmake-data)")
    help_root = helps[-1]
    pages = [
        path
        for folder in help_root.iterdir()
        if folder.is_dir() and (folder.name in _CMAKE_FOLDERS or folder.name.startswith("prop_"))
        for path in sorted(folder.glob("*.rst"))
    ]
    candidates: list[tuple[Path, str, list[str]]] = []
    docs = out / "docs"
    for path in pages:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        summary = cmake_summary(lines)
        target = docs / path.relative_to(help_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if summary is None:
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
            continue
        kept, sentence = summary
        if words_besides_title(kept) >= MIN_WORDS:
            candidates.append((path.relative_to(help_root), sentence, kept))
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    chosen = random.Random(seed).sample(candidates, min(sample, len(candidates)))
    for relative, _, kept in chosen:  # only the sampled pages lose their summary
        (docs / relative).write_text("\n".join(kept) + "\n", encoding="utf-8")
    _write_questions(out, [(sentence, relative.as_posix()) for relative, sentence, _ in chosen])
    return len(chosen)


_ACCENTED = re.compile(r"\\(?:\(|\[)([:^'`~,])([A-Za-z])\]?")
_COMBINING = {":": "\u0308", "^": "\u0302", "'": "\u0301", "`": "\u0300", "~": "\u0303", ",": "\u0327"}


def _troff_text(line: str) -> str:
    line = _ACCENTED.sub(lambda m: unicodedata.normalize("NFC", m.group(2) + _COMBINING[m.group(1)]), line)
    line = line.replace("\\(ss", "ß").replace("\\[ss]", "ß")
    for code, char in [*_TROFF_STRINGS.items(), *_TROFF_CHARS.items()]:
        line = line.replace(code, char)
    line = _SPECIAL.sub(
        lambda m: _NAMED.get(m.group(1) or m.group(2), ""),
        line,
    )
    return _TROFF_ESCAPE.sub("", line).replace("\\", "")


def _man_sections(text: str) -> Iterator[tuple[str, list[str]]]:
    """(heading, lines) of each .SH section of a man page's troff source, inline markup removed."""
    heading = ""
    body: list[str] = []
    for raw in text.splitlines():
        if raw.startswith(('.\\"', "'\\\"")):
            continue
        if raw.startswith((".SH", ".Sh")):
            if heading or body:
                yield heading, body
            heading, body = _troff_text(raw[3:].strip().strip('"')), []
            continue
        if raw.startswith((".B ", ".I ", ".BR ", ".IR ", ".BI ", ".RB ", ".RI ", ".IB ", ".SM ")):
            words = re.findall(r'"[^"]*"|\S+', raw.split(" ", 1)[1])
            body.append(_troff_text("".join(word.strip('"') for word in words)))
        elif raw.startswith((".SS", ".Ss")):
            body.append("")
            body.append("### " + _troff_text(raw[3:].strip().strip('"')))
            body.append("")
        elif raw.startswith((".PP", ".P", ".LP", ".TP", ".IP", ".sp", ".br")):
            body.append("")
        elif raw.startswith((".", "'")):
            continue
        else:
            body.append(_troff_text(raw))
    if heading or body:
        yield heading, body


def man_page(path: Path) -> tuple[str, str, str] | None:
    """(name, NAME description, Markdown without the NAME section) of one man page."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    if text.startswith(".so "):
        return None  # an alias of another page
    sections = list(_man_sections(text))
    names = [body for heading, body in sections if heading.upper() in {"NAME", "NOM", "BEZEICHNUNG"}]
    if not names:
        return None
    line = " ".join(part.strip() for part in names[0] if part.strip())
    found = re.match(r"^(.+?)\s+[-—–]+\s+(.+)$", line)
    if found is None or len(found.group(2).split()) < 2:
        return None
    name, description = found.group(1).strip(), found.group(2).strip()
    parts = [f"# {name}", ""]
    for heading, body in sections:
        if heading.upper() in {"NAME", "NOM", "BEZEICHNUNG"} or not heading:
            continue
        parts += [f"## {heading.title()}", "", *body, ""]
    return name, description, re.sub(r"\n{3,}", "\n\n", "\n".join(parts))


def build_man(name: str, out: Path, sample: int, seed: int = 7) -> int:
    candidates: list[tuple[str, str]] = []
    docs = out / "docs"
    seen: set[str] = set()
    for root in _MAN_ROOTS[name]:
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            page = man_page(path)
            if page is None:
                continue
            _, description, markdown = page
            relative = f"{path.parent.name}/{path.name.removesuffix('.gz')}.md"
            if relative in seen or description in {d for d, _ in candidates}:
                continue
            seen.add(relative)
            target = docs / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(markdown, encoding="utf-8")
            candidates.append((description, relative))
    chosen = random.Random(seed).sample(candidates, min(sample, len(candidates)))
    _write_questions(out, chosen)
    return len(chosen)


def _write_questions(out: Path, pairs: list[tuple[str, str]]) -> None:
    with (out / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for question, source in pairs:
            record = {"question": question, "relevant": [{"source": source}]}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def ensure(name: str, out: Path, sample: int = SAMPLE) -> Path:
    """The set `name` built into `out` (kept when already there)."""
    if (out / "questions.jsonl").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    count = build_cmake(out, sample) if name == "cmake" else build_man(name, out, sample)
    print(f"built {name}: {count} questions in {out}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sample", type=int, default=SAMPLE)
    args = parser.parse_args(argv)
    for name in args.sets.split(","):
        ensure(name, args.out / name, args.sample)
    return 0


if __name__ == "__main__":
    sys.exit(main())
