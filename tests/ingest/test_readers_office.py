"""Word, PowerPoint, Excel, OpenDocument and EPUB files, built by the tests, read with their places."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.readers import ReaderOptions, read_file
from ingest.readers.office import archive
from rag import Document
from rag.citations import cited_sources
from rag.errors import IngestError
from tests.ingest.office_files import docx_file, epub_file, odt_file, pptx_file, xlsx_file, zip_bomb


def _read(path: Path) -> list[tuple[str, dict[str, object]]]:
    result = read_file(path, root=path.parent, options=ReaderOptions())
    assert result.text is not None
    for unit in result.units:  # offsets count in the extracted text, as every reader's do
        assert result.text[unit.char_offset : unit.char_offset + len(unit.text)] == unit.text
    return [(unit.text, unit.metadata) for unit in result.units]


def test_docx_sections_follow_headings_and_tables_are_rows(tmp_path: Path) -> None:
    units = _read(docx_file(tmp_path / "handbook.docx"))
    assert [meta.get("section") for _, meta in units] == [None, "Installation > Mounting", "Maintenance"]
    assert all(meta["title"] == "Lantern handbook" and meta["source"] == "handbook.docx" for _, meta in units)
    mounting = units[1][0]
    assert mounting.startswith("Mounting\n\nBolt the quartz prism") and "prism bolt\t12 Nm" in mounting
    assert units[1][1]["headings"] == ["Installation", "Mounting"]


def test_pptx_one_unit_per_slide_with_number_title_table_and_notes(tmp_path: Path) -> None:
    units = _read(pptx_file(tmp_path / "talk.pptx"))
    assert [(meta["slide"], meta["section"]) for _, meta in units] == [
        (1, "Fog signals"),
        (2, "Rotation schedule"),
    ]
    assert "diaphone every thirty seconds" in units[0][0]
    assert "Morwenna\tmidnight" in units[1][0] and "Notes: Remind the keepers" in units[1][0]
    assert units[0][1]["title"] == "Fog signals"


def test_xlsx_one_unit_per_sheet_named_by_the_sheet(tmp_path: Path) -> None:
    units = _read(xlsx_file(tmp_path / "stores.xlsx"))
    assert [meta["sheet"] for _, meta in units] == ["Supplies", "Costs"]
    assert units[0][0] == "Supplies\n\nitem\tquantity\n\nparaffin barrels\t14"
    assert units[1][0] == "Costs\n\nwick\t2.5"


def test_odt_headings_spaces_lists_and_tables(tmp_path: Path) -> None:
    units = _read(odt_file(tmp_path / "almanac.odt"))
    assert [meta.get("section") for _, meta in units] == ["Tide tables", "Tide tables > Neap tides"]
    assert units[0][0] == "Tide tables\n\nSpring  tides flood the causeway.\n\nCheck the gauge at dawn."
    assert units[1][0] == "Neap tides\n\nlow water\t0.4 m"
    assert units[0][1]["title"] == "Harbour almanac"


def test_epub_chapters_in_reading_order_without_the_navigation(tmp_path: Path) -> None:
    units = _read(epub_file(tmp_path / "log.epub"))
    assert [(meta["chapter"], meta["section"]) for _, meta in units] == [(1, "The storm"), (2, "The calm")]
    assert "Gulls sheltered" in units[0][0] and "oranges" in units[1][0]
    assert all(meta["title"] == "The keeper's log" for _, meta in units)
    assert not any("table of contents" in text for text, _ in units)


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx", ".odt", ".epub"])
def test_a_damaged_file_is_one_clear_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(b"PK\x03\x04 this is not really an archive")
    with pytest.raises(IngestError) as caught:
        read_file(path, root=tmp_path)
    assert caught.value.path == f"broken{suffix}" and f"broken{suffix}" in str(caught.value)


def test_an_archive_that_unpacks_too_far_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_UNPACKED", 8 << 20)
    path = zip_bomb(tmp_path / "bomb.docx", 16 << 20)
    assert path.stat().st_size < 100_000
    with pytest.raises(IngestError, match=r"'bomb.docx' would unpack to 16,777,216 bytes"):
        read_file(path, root=tmp_path)


def test_citations_name_slides_sheets_and_chapters() -> None:
    docs = [
        Document("a", "x", {"source": "talk.pptx", "slide": 2}),
        Document("b", "y", {"source": "talk.pptx", "slide": 5}),
        Document("c", "z", {"source": "stores.xlsx", "sheet": "Costs"}),
        Document("d", "w", {"source": "log.epub", "chapter": 1}),
    ]
    assert [s.line() for s in cited_sources(docs)] == [
        "[1, 2] talk.pptx, slides 2, 5",
        "[3] stores.xlsx, sheet Costs",
        "[4] log.epub, chapter 1",
    ]
