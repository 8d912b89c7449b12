"""`rag ingest` over a folder of office documents and e-books: each found with its place, a damaged one
reported on one line, and a missing `office` extra named per file while the rest is ingested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from tests.ingest.office_files import docx_file, epub_file, odt_file, pptx_file, xlsx_file

ROOT = Path(__file__).resolve().parents[2]
RunCli = Callable[..., Result]


def _office_folder(folder: Path) -> Path:
    folder.mkdir()
    docx_file(folder / "handbook.docx")
    pptx_file(folder / "talk.pptx")
    xlsx_file(folder / "stores.xlsx")
    odt_file(folder / "almanac.odt")
    epub_file(folder / "log.epub")
    return folder


def test_office_files_are_ingested_and_found_with_their_places(cli: RunCli, tmp_path: Path) -> None:
    folder = _office_folder(tmp_path / "office")
    (folder / "broken.pptx").write_bytes(b"PK\x03\x04 not a deck")
    result = cli("ingest", folder, "--store", "numpy", "--json")
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    failed = [d for d in report["details"] if d["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["source"].endswith("broken.pptx")
    assert "broken.pptx" in failed[0]["reason"]
    assert report["files"]["new"] == 5
    expected = {
        "Fresnel lens solstice": ("office/handbook.docx", "section", "Maintenance"),
        "diaphone thirty seconds": ("office/talk.pptx", "slide", 1),
        "paraffin barrels": ("office/stores.xlsx", "sheet", "Supplies"),
        "gauge at dawn causeway": ("office/almanac.odt", "section", "Tide tables"),
        "supply boat oranges": ("office/log.epub", "chapter", 2),
    }
    for question, (source, key, value) in expected.items():
        hits = cli("query", question, "--store", "numpy", "--mode", "lexical", "--top-k", "1", "--json")
        assert hits.exit_code == 0, hits.stderr
        top = json.loads(hits.stdout)[0]
        assert top["metadata"]["source"].endswith(source.removeprefix("office/"))
        assert top["metadata"][key] == value, (question, top)


_WITHOUT_OFFICE = (
    "import sys\nsys.modules['docx'] = None\nfrom rag.cli import main\nmain(sys.argv[1:], prog_name='rag')\n"
)


def test_a_docx_without_the_office_extra_names_the_install_line(rag_home: Path, tmp_path: Path) -> None:
    folder = _office_folder(tmp_path / "office")
    env = {**os.environ, "RAG_HOME": str(rag_home), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_OFFICE, "ingest", str(folder), "--store", "numpy", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    failed = {d["source"]: d["reason"] for d in report["details"] if d["status"] == "failed"}
    assert len(failed) == 1
    [(source, reason)] = failed.items()
    assert source.endswith("handbook.docx") and 'pip install "rag-advisors[office]"' in reason
    assert report["files"]["new"] == 4
