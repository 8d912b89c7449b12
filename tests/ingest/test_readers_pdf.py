"""PDF: pages, labels, encryption, scans, rotation and damaged files, all generated here."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from ingest.readers import ReaderOptions
from ingest.readers.pdf import read_pdf
from rag.errors import IngestError
from tests.ingest.conftest import Read
from tests.ingest.pdfs import (
    damaged_pdf,
    encrypted_pdf,
    image_only_pdf,
    labelled_pdf,
    mixed_scan_pdf,
    rotated_pdf,
    text_pdf,
)

PAGES = ["Front matter one.", "Front matter two.", "Chapter one begins.", "Chapter one ends."]


def test_one_unit_per_page_with_page_and_label(read: Read) -> None:
    result = read("manual.pdf", labelled_pdf(PAGES))
    assert [u.text for u in result.units] == PAGES
    assert [(u.metadata["page"], u.metadata["page_label"]) for u in result.units] == [
        (1, "i"),
        (2, "ii"),
        (3, "1"),
        (4, "2"),
    ]
    assert {u.metadata["title"] for u in result.units} == {"Labelled manual"}
    assert {u.metadata["source"] for u in result.units} == {"manual.pdf"}
    assert result.pages_without_text == 0
    assert result.warnings == []


def test_page_offsets_place_pages_in_the_file_text(read: Read) -> None:
    result = read("plain.pdf", text_pdf(["Alpha page.", "Beta page."]))
    file_text = "\f".join(u.text for u in result.units)  # each page's text is exactly its unit here
    assert all(file_text[u.char_offset : u.char_offset + len(u.text)] == u.text for u in result.units)
    assert [u.metadata["page_label"] for u in result.units] == ["1", "2"]  # no labels: page numbers


def test_encrypted_with_empty_user_password_opens(read: Read) -> None:
    result = read("locked.pdf", encrypted_pdf(["Owner-locked text."], user_password=""))
    assert [u.text for u in result.units] == ["Owner-locked text."]


def test_encrypted_with_a_password_needs_it(read: Read) -> None:
    data = encrypted_pdf(["Top secret text."], user_password="s3cret")
    with pytest.raises(IngestError, match=r"encrypted PDF 'secret\.pdf'; pass --pdf-password") as info:
        read("secret.pdf", data)
    assert info.value.path == "secret.pdf"
    with pytest.raises(IngestError, match=r"wrong PDF password for 'secret\.pdf'"):
        read("secret.pdf", data, pdf_password="guess")
    assert read("secret.pdf", data, pdf_password="s3cret").units[0].text == "Top secret text."


def test_image_only_pdf_reports_pages_without_text(read: Read) -> None:
    result = read("scan.pdf", image_only_pdf(pages=3))
    assert result.units == []
    assert result.pages_without_text == 3
    assert result.warnings == ["3 of 3 pages have no text layer (scanned?)"]


def test_mixed_pdf_counts_only_the_empty_page(read: Read) -> None:
    result = read("mixed.pdf", mixed_scan_pdf())
    assert [u.metadata["page"] for u in result.units] == [1, 3]
    assert result.pages_without_text == 1
    assert result.warnings == ["1 of 3 pages have no text layer (scanned?)"]


@pytest.mark.parametrize("degrees", [90, 180, 270])
def test_rotated_page_text_is_extracted(read: Read, degrees: int) -> None:
    result = read("rotated.pdf", rotated_pdf("Sideways words here.", degrees))
    assert result.units[0].text == "Sideways words here."


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("truncated", "PdfStreamError"), ("garbage", "PdfStreamError"), ("empty", "EmptyFileError")],
)
def test_damaged_pdf_fails_alone_with_the_reason(read: Read, kind: str, reason: str) -> None:
    with pytest.raises(IngestError, match=rf"damaged PDF 'broken\.pdf': {reason}") as info:
        read("broken.pdf", damaged_pdf(kind))
    assert info.value.path == "broken.pdf"


def test_pypdf_repair_warnings_are_collected_not_logged(read: Read, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    result = read("repaired.pdf", damaged_pdf("bad-xref"))
    assert result.units[0].text == "Readable after repair."
    assert any(w.startswith("pypdf: incorrect startxref pointer") for w in result.warnings)
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    assert logging.getLogger("pypdf").propagate  # restored after the read


def test_concurrent_reads_keep_their_own_warnings() -> None:
    repaired, clean = damaged_pdf("bad-xref"), text_pdf(["Clean page."])
    jobs = [repaired, clean] * 8
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda data: read_pdf(data, "x.pdf", ReaderOptions()), jobs))
    for data, result in zip(jobs, results, strict=True):
        assert bool(result.warnings) == (data is repaired)
