"""The sample corpus in data/ is well-formed and its labelled questions point at text that answers them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from pypdf import PdfReader

from rag.filters import matches, parse

DATA = Path(__file__).resolve().parents[2] / "data"
DOCS = DATA / "docs"
QUESTIONS = DATA / "questions.jsonl"
TEXT_SUFFIXES = {".md", ".rst", ".html"}
# Page labels a viewer shows: roman front matter, a prefixed series, and a plain one.
EXPECTED_PDFS = {
    "manuals/node-v2-hardware-manual.pdf": ["i", "ii", "1", "2", "3", "4"],
    "manuals/safety-datasheet.pdf": ["1", "2", "3"],
    "manuals/wiring-quick-reference.pdf": ["W-1", "W-2", "W-3"],
}
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_RFC822_HEADER = re.compile(r"\A(?:[A-Z][A-Za-z-]*: .+\n)+\n")
_DROPPED_TAGS = {"script", "style", "nav", "header", "footer", "aside"}


class _VisibleText(HTMLParser):
    """Collects the text a reader of the page sees: no scripts, styles or navigation boilerplate."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.title = ""
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED_TAGS:
            self._skip_depth += 1
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED_TAGS:
            self._skip_depth -= 1
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._skip_depth == 0:
            self.parts.append(data)


def _visible_html(path: Path) -> _VisibleText:
    parser = _VisibleText()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def _text_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*") if p.suffix in TEXT_SUFFIXES)


def _questions() -> list[dict[str, Any]]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _source_text(source: str, page: int | None) -> str:
    """The text a question's label points at: one PDF page, an HTML page's visible text, or the raw file."""
    path = DOCS / source
    if path.suffix == ".pdf":
        assert page is not None
        return PdfReader(path).pages[page - 1].extract_text()
    if path.suffix == ".html":
        return " ".join(_visible_html(path).parts)
    return path.read_text(encoding="utf-8")


def _approx_metadata(relevant: dict[str, Any]) -> dict[str, Any]:
    """Metadata the readers are expected to give a chunk of this source: source, page, front matter."""
    source = relevant["source"]
    meta: dict[str, Any] = {"source": source}
    path = DOCS / source
    if path.suffix == ".pdf":
        page = relevant["page"]
        meta |= {"page": page, "page_label": EXPECTED_PDFS[source][page - 1]}
    elif path.suffix == ".md":
        found = _FRONT_MATTER.match(path.read_text(encoding="utf-8"))
        if found:
            meta |= yaml.safe_load(found.group(1))
    return meta


def test_text_pages_count_types_and_lengths() -> None:
    pages = _text_pages()
    assert 20 <= len(pages) <= 40
    by_suffix = Counter(p.suffix for p in pages)
    assert all(by_suffix[suffix] >= 5 for suffix in TEXT_SUFFIXES), by_suffix
    assert len({p.parent for p in pages}) >= 4
    for page in pages:
        text = " ".join(_visible_html(page).parts) if page.suffix == ".html" else page.read_text("utf-8")
        assert 150 <= len(text.split()) <= 550, page


def test_docs_hold_only_readable_formats() -> None:
    files = [p for p in DOCS.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == TEXT_SUFFIXES | {".pdf"}
    assert not [p for p in files if p.name.startswith(".")]


def test_markdown_front_matter_and_heading_levels() -> None:
    with_front_matter = 0
    for path in DOCS.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        found = _FRONT_MATTER.match(text)
        if found:
            with_front_matter += 1
            meta = yaml.safe_load(found.group(1))
            assert isinstance(meta["title"], str) and meta["title"], path
            assert isinstance(meta["tags"], list) and all(isinstance(t, str) for t in meta["tags"]), path
            # An unquoted `version: 3.0` would load as the float 3.0 and break `version == '3.0'` filters.
            assert isinstance(meta.get("version", ""), str), path
        assert re.search(r"^# \S", text, re.MULTILINE), path
    assert with_front_matter >= 10
    install = (DOCS / "guide/install.md").read_text(encoding="utf-8")
    assert "\n## From source\n" in install and "\n### Cross-compiling\n" in install


def test_rst_titles_and_rfc822_headers() -> None:
    with_header = []
    for path in DOCS.rglob("*.rst"):
        text = path.read_text(encoding="utf-8")
        header = _RFC822_HEADER.match(text)
        if header:
            with_header.append(path)
            assert {"Title", "Author", "Status"} <= {
                line.split(":")[0] for line in header.group(0).splitlines()
            }
            text = text[header.end() :]
        over, title, under = text.splitlines()[:3]
        assert over == under and set(over) == {"="} and len(over) >= len(title.rstrip()), path
    assert len(with_header) >= 1


def test_html_pages_have_titles_and_boilerplate_to_drop() -> None:
    boilerplate = Counter[str]()
    for path in DOCS.rglob("*.html"):
        raw = path.read_text(encoding="utf-8")
        assert _visible_html(path).title.strip(), path
        boilerplate.update(tag for tag in _DROPPED_TAGS if f"<{tag}" in raw)
    assert all(boilerplate[tag] >= 2 for tag in ("script", "style", "nav", "footer")), boilerplate
    visible = " ".join(_visible_html(DOCS / "guide/backup.html").parts)
    assert "Backups and restore" in visible and "vgDocsAnalytics" not in visible


@pytest.mark.parametrize("source", sorted(EXPECTED_PDFS))
def test_pdfs_open_with_expected_pages_and_labels(source: str) -> None:
    reader = PdfReader(DOCS / source)
    assert len(reader.pages) == len(EXPECTED_PDFS[source])
    assert list(reader.page_labels) == EXPECTED_PDFS[source]
    assert reader.metadata is not None and reader.metadata.title
    for page in reader.pages:
        assert len(page.extract_text().split()) >= 25


def test_pdf_set_is_exactly_the_expected_one() -> None:
    found = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.pdf")}
    assert found == set(EXPECTED_PDFS)


def test_make_pdfs_reproduces_committed_text(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(DATA / "make_pdfs.py"), str(tmp_path)], check=True, capture_output=True
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(s).name for s in EXPECTED_PDFS)
    for source in EXPECTED_PDFS:
        committed = [p.extract_text() for p in PdfReader(DOCS / source).pages]
        fresh = [p.extract_text() for p in PdfReader(tmp_path / Path(source).name).pages]
        assert fresh == committed, source


def test_questions_are_well_formed() -> None:
    questions = _questions()
    assert len(questions) >= 30
    assert len({q["question"] for q in questions}) == len(questions)
    for q in questions:
        assert set(q) <= {"question", "relevant", "answer", "filter"}, q
        assert isinstance(q["question"], str) and q["question"].strip()
        assert isinstance(q["answer"], str) and q["answer"].strip()
        assert isinstance(q["relevant"], list) and q["relevant"], q
        for rel in q["relevant"]:
            assert set(rel) <= {"source", "page", "grade"}, rel
            assert isinstance(rel.get("grade", 1), int) and rel.get("grade", 1) >= 1, rel


def test_every_label_points_at_an_existing_source_and_page() -> None:
    for q in _questions():
        for rel in q["relevant"]:
            source = rel["source"]
            assert "\\" not in source and not source.startswith("/"), source
            assert (DOCS / source).is_file(), source
            if source.endswith(".pdf"):
                assert 1 <= rel["page"] <= len(EXPECTED_PDFS[source]), rel
            else:
                assert "page" not in rel, rel


def test_questions_cover_every_file_and_file_type() -> None:
    sources = {rel["source"] for q in _questions() for rel in q["relevant"]}
    assert {Path(s).suffix for s in sources} == TEXT_SUFFIXES | {".pdf"}
    every_file = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file()}
    assert sources == every_file


def test_answers_appear_in_their_labelled_sources() -> None:
    for q in _questions():
        parts = [_normalise(p) for p in q["answer"].split("; ")]
        texts = [_normalise(_source_text(r["source"], r.get("page"))) for r in q["relevant"]]
        # Every part of the answer is somewhere in the labels, and every label holds some part of it.
        assert all(any(part in text for text in texts) for part in parts), q
        assert all(any(part in text for part in parts) for text in texts), q


def test_pdf_answers_are_on_one_page_only() -> None:
    for q in _questions():
        for rel in q["relevant"]:
            if not rel["source"].endswith(".pdf"):
                continue
            pages = [_normalise(p.extract_text()) for p in PdfReader(DOCS / rel["source"]).pages]
            hits = [i + 1 for i, text in enumerate(pages) if _normalise(q["answer"]) in text]
            assert hits == [rel["page"]], q


def test_filters_parse_and_keep_their_relevant_sources() -> None:
    filtered = [q for q in _questions() if "filter" in q]
    assert len(filtered) >= 5
    for q in filtered:
        tree = parse(q["filter"])
        for rel in q["relevant"]:
            assert matches(tree, _approx_metadata(rel)), (q["filter"], rel)
