"""Build a BEIR-format known-item set from the Python documentation shipped by Debian's `python3-doc`.

The Debian package `python3.X-doc` (the dependency of `python3-doc`) holds the reStructuredText
sources of the whole Python manual under `.../html/_sources/**/*.rst.txt`. This script fetches it with
`apt-get download` (no root needed), unpacks it with `dpkg-deb -x`, and writes a BEIR folder:

- `corpus.jsonl`: one record per section of the manual (tutorial, library and language reference,
  C API, HOWTOs, FAQs, installing/distributing guides; not "What's New" nor the changelog, which repeat
  the rest). `_id` is `PAGE#slug` (`faq/programming#how-do-i-...`), `title` is the *page* title
  ("Programming FAQ"), `text` is the section's body: the lines below its heading up to the next
  heading, with labels, index entries and comments dropped. **No record contains its own section
  heading**: the heading is the query below, so a search cannot win by matching it verbatim.
  Sections whose body is shorter than `MIN_BODY` characters (a heading over subsections) are left out.
- `queries.jsonl`: every section heading that asks something (ends with "?", or starts with "How to",
  "How do", "When to" or "Where to"), in the FAQs and anywhere else in the manual, with inline markup
  removed ("How do I make an executable from a Python script?", "How to work with SQLite URIs").
  One query per distinct question text.
- `qrels/test.tsv`: each query judges the section(s) it headed relevant (score 1); nothing else is
  judged, so the set measures whether retrieval finds the answer a person wrote under that question
  (a known-item task). A section answering the same question elsewhere counts as a miss, which makes
  the figures a lower bound; the FAQ answers rarely repeat elsewhere in the manual.

Usage:
    python benchmarks/datasets/python_faq.py OUT [--package python3.11-doc] [--deb FILE] [--sources DIR]

`--deb` uses a downloaded `.deb`, `--sources` an unpacked `_sources` folder (no download at all).
Nothing from the data is committed: OUT should be outside the repository (e.g. /tmp/python-faq).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MIN_BODY = 80  # characters: shorter bodies are headings over subsections, or a bare "See :ref:..."
SKIPPED_FOLDERS = ("whatsnew", "includes")  # release notes repeat the manual; includes are fragments
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")  # a line of one punctuation character
_NOISE = re.compile(r"^\.\. (_[^:]+:|index::|highlight::|sectionauthor::|moduleauthor::|contents::|\s*$)")
_ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")  # :func:`text <target>` -> text
_LITERAL = re.compile(r"``([^`]+)``")
_SLUG = re.compile(r"[^a-z0-9]+")
_TASK = re.compile(r"^(How (to|do) |When to |Where to )")  # a how-to heading is a question without "?"


@dataclass(frozen=True)
class Section:
    """One section of a page: its heading (cleaned) and its body (raw reStructuredText)."""

    page: str
    heading: str
    body: str


def plain(text: str) -> str:
    """Inline reStructuredText markup removed: roles keep their text, literals lose their backquotes."""
    text = _ROLE.sub(lambda m: m.group(1).lstrip("~!"), text)
    text = _LITERAL.sub(r"\1", text)
    return " ".join(text.replace("`", "").replace("*", "").split())


def _is_heading(lines: list[str], i: int) -> bool:
    """Whether line i is a section title: unindented text with an adornment as long below it."""
    text = lines[i].rstrip()
    if not text or text[0].isspace() or i + 1 >= len(lines) or _ADORNMENT.match(text):
        return False
    under = lines[i + 1].rstrip()
    return bool(_ADORNMENT.match(under)) and len(under) >= len(text) - 2


def _body(lines: list[str]) -> str:
    """The section's text without labels, index entries, comments and their indented continuations."""
    kept: list[str] = []
    skipping = False
    for line in lines:
        if _NOISE.match(line):
            skipping = True
            continue
        if skipping and (not line.strip() or line[0].isspace()):
            continue  # the indented block belongs to the directive just dropped
        skipping = False
        kept.append(line.rstrip())
    return "\n".join(kept).strip()


def sections(page: str, source: str) -> Iterator[Section]:
    """The sections of one `.rst.txt` page, in order, each with the body below its heading."""
    lines = source.splitlines()
    starts = [i for i in range(len(lines)) if _is_heading(lines, i)]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        if end > 0 and n + 1 < len(starts) and _ADORNMENT.match(lines[end - 1]):
            end -= 1  # the next heading's overline
        yield Section(page, plain(lines[start]), _body(lines[start + 2 : end]))


def as_question(heading: str) -> str | None:
    """The heading as a query if it asks something, else None.

    A question ends with "?" or starts as a task does ("How to ...", "When to ..."). The installing and
    distributing guides list questions under a "How do I...?" heading as "... install pip ...?": those
    get their stem back.
    """
    if heading.startswith("..."):
        heading = "How do I " + heading.lstrip(". ")
    return heading if heading.endswith("?") or _TASK.match(heading) else None


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:80] or "section"


def build(sources: Path, out: Path) -> tuple[int, int]:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv under `out`; return (documents, queries)."""
    corpus: list[dict[str, str]] = []
    judged: dict[str, list[str]] = {}  # question text -> corpus ids it headed
    for path in sorted(sources.rglob("*.rst.txt")):
        page = path.relative_to(sources).as_posix().removesuffix(".rst.txt")
        if page.split("/")[0] in SKIPPED_FOLDERS:
            continue
        found = list(sections(page, path.read_text(encoding="utf-8", errors="replace")))
        title = found[0].heading if found else page
        seen: set[str] = set()
        for section in found:
            if len(section.body) < MIN_BODY:
                continue
            slug, k = _slug(section.heading), 2
            while slug in seen:
                slug, k = f"{_slug(section.heading)}-{k}", k + 1
            seen.add(slug)
            doc_id = f"{page}#{slug}"
            corpus.append({"_id": doc_id, "title": title, "text": section.body})
            question = as_question(section.heading)
            if question:
                judged.setdefault(question, []).append(doc_id)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in corpus)
    with (
        (out / "queries.jsonl").open("w", encoding="utf-8") as queries,
        (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for n, (question, ids) in enumerate(judged.items(), start=1):
            qid = f"q{n}"
            queries.write(json.dumps({"_id": qid, "text": question}, ensure_ascii=False) + "\n")
            qrels.writelines(f"{qid}\t{doc_id}\t1\n" for doc_id in ids)
    return len(corpus), len(judged)


def default_package() -> str:
    """The versioned docs package `python3-doc` depends on (`python3.11-doc` on Debian 12)."""
    shown = subprocess.run(
        ["apt-cache", "depends", "python3-doc"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"Depends:\s*(python3\.\d+-doc)", shown)
    if not found:
        raise SystemExit("error: apt-cache does not know python3-doc; run `apt-get update` first")
    return found.group(1)


def fetch_sources(package: str | None, deb: Path | None, workdir: Path) -> Path:
    """Download (unless given) and unpack the docs package; return its `_sources` folder."""
    if deb is None:
        package = package or default_package()
        subprocess.run(["apt-get", "download", package], cwd=workdir, check=True, capture_output=True)
        deb = next(workdir.glob(f"{package}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(workdir / "x")], check=True)
    found = sorted((workdir / "x").glob("usr/share/doc/python3*/html/_sources"))
    if not found:
        raise SystemExit(f"error: no html/_sources folder in {str(deb)!r}")
    return found[0]


def ensure(out: Path, package: str | None = None) -> Path:
    """Build the set into `out` unless it is already there; return `out` (used by benchmarks/quality.py)."""
    if (out / "qrels" / "test.tsv").is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="python-faq-") as work:
        docs, queries = build(fetch_sources(package, None, Path(work)), out)
    print(f"built {out}: {docs} documents, {queries} queries", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="folder to write (outside the repository)")
    parser.add_argument("--package", help="Debian package [default: what python3-doc depends on]")
    parser.add_argument("--deb", type=Path, help="a downloaded python3.X-doc .deb")
    parser.add_argument("--sources", type=Path, help="an unpacked html/_sources folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="python-faq-") as work:
        sources = args.sources or fetch_sources(args.package, args.deb, Path(work))
        docs, queries = build(sources, args.out)
    print(f"{args.out}: {docs} documents, {queries} queries (qrels/test.tsv)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
