"""`rag ingest` over a hostile folder: odd names, huge or deeply nested files, PDFs that decompress
forever, a store that cannot be created, and an option left out. One bad file never stops the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from tests.ingest.pdfs import shared_stream_pdf, text_pdf

RunCli = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]


def details(result: Result) -> dict[str, dict[str, Any]]:
    """The `--json` report's files by source."""
    return {d["source"]: d for d in json.loads(result.stdout)["details"]}


def test_a_file_name_that_is_not_utf8_is_ingested_under_an_escaped_name(cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    odd = os.path.join(os.fsencode(folder), b"caf\xe9 menu.txt")  # Latin-1 bytes: not UTF-8
    with open(odd, "wb") as handle:
        handle.write(b"The harbour cafe serves chowder on Fridays.\n")
    (folder / "tides.txt").write_text("Spring tides flood the causeway.\n", encoding="utf-8")

    result = cli("ingest", folder, "--store", "numpy", "--json")
    assert result.exit_code == 0, result.stderr
    files = details(result)
    assert files["caf\\xe9 menu.txt"]["status"] == "new" and files["tides.txt"]["status"] == "new"
    assert files["caf\\xe9 menu.txt"]["warnings"] == [
        'file name is not valid UTF-8; recorded as "caf\\xe9 menu.txt"'
    ]
    hits = cli("query", "chowder", "--store", "numpy", "--top-k", "1", "--json")
    assert hits.exit_code == 0, hits.stderr
    assert json.loads(hits.stdout)[0]["metadata"]["source"] == "caf\\xe9 menu.txt"
    again = cli("ingest", folder, "--store", "numpy", "--json")  # the escaped id finds its record
    assert json.loads(again.stdout)["files"]["unchanged"] == 2


def test_a_pdf_over_its_content_budget_fails_alone(cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    # 2,000 pages drawing one stream of 40 KB: 80 MB for the parser (hours of pypdf) from a 31 KB file.
    (folder / "bomb.pdf").write_bytes(shared_stream_pdf(2000, 1000))
    (folder / "manual.pdf").write_bytes(text_pdf(["Grease the lamp gears monthly."]))

    result = cli("ingest", folder, "--store", "numpy", "--pdf-max-content", "0.2", "--json")
    assert result.exit_code == 1
    files = details(result)
    assert files["manual.pdf"]["status"] == "new"
    assert files["bomb.pdf"]["status"] == "failed"
    assert files["bomb.pdf"]["reason"] == (
        "PDF 'bomb.pdf' stopped at page 6 of 2000: its pages hold more than 0.2 MB of content to parse "
        "(--pdf-max-content MB raises the limit)"
    )


def test_a_file_over_the_size_limit_fails_unread_and_the_option_raises_it(
    cli: RunCli, tmp_path: Path, monkeypatch: Any
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "huge.txt").write_text("fog horn sounded " * 200, encoding="utf-8")  # 3,400 bytes
    (folder / "small.txt").write_text("The lamp was lit at dusk.\n", encoding="utf-8")

    refused = cli("ingest", folder, "--store", "numpy", "--max-file-size", "0.002", "--json")
    assert refused.exit_code == 1
    files = details(refused)
    assert files["small.txt"]["status"] == "new"
    assert files["huge.txt"]["status"] == "failed"
    assert files["huge.txt"]["reason"] == (
        "'huge.txt' is 0.0 MB, over the 0.0 MB limit (--max-file-size MB raises it)"
    )
    monkeypatch.setenv("RAG_MAX_FILE_SIZE", "0.01")
    raised = cli("ingest", folder, "--store", "numpy", "--json")
    assert raised.exit_code == 0, raised.stderr
    assert details(raised)["huge.txt"]["status"] == "new"


def test_one_deeply_nested_json_lines_record_is_one_bad_line(cli: RunCli, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    deep = '{"text": "lost", "tree": ' + "[" * 200_000 + "]" * 200_000 + "}"
    lines = ['{"text": "The keeper logs fog."}', deep, '{"text": "The lamp turns at night."}']
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = cli("ingest", corpus, "--store", "numpy", "--json")
    assert result.exit_code == 1
    report = details(result)["corpus.jsonl"]
    assert report["status"] == "new" and report["chunks"] == 2
    assert report["errors"] == ["'corpus.jsonl' line 2: JSON nested too deeply"]


# A `psycopg` that cannot be imported, as on a machine without the `postgres` extra.
_NO_PSYCOPG = "raise ImportError('No module named psycopg (the postgres extra is not installed)')\n"
_MAIN = "import sys\nfrom rag.cli import main\nmain(sys.argv[1:], prog_name='rag')\n"


def test_a_store_that_cannot_be_created_prints_the_install_line_and_records_nothing(
    cli: RunCli, docs: Path, rag_home: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "without_postgres" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(_NO_PSYCOPG, encoding="utf-8")
    env = {**os.environ, "RAG_HOME": str(rag_home), "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}"}
    url = "postgresql://app:s3cret@127.0.0.1:9/rag"
    failed = subprocess.run(
        [sys.executable, "-c", _MAIN, "ingest", str(docs), "--store", "pgvector", "--database-url", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert failed.returncode == 1, failed.stderr
    assert failed.stderr.strip().splitlines() == [
        "error: the Postgres store needs psycopg, which is not installed: "
        'pip install "rag-advisors[postgres]"'
    ]
    assert not (rag_home / "stores.json").exists()
    # The home is not left pointing at a store that was never made: commands without --store work.
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    info = cli("info", "--json")
    assert info.exit_code == 0, info.stderr
    query = cli("query", "fog signals", "--top-k", "1")
    assert query.exit_code == 0, query.stderr


def test_an_as_text_option_left_out_keeps_the_files_it_read(cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "README").write_text("The beacon firmware needs the harbour toolkit.\n", encoding="utf-8")
    (folder / "guide.md").write_text("# Guide\n\nMount the lamp.\n", encoding="utf-8")
    assert cli("ingest", folder, "--store", "numpy", "--as-text", ".").exit_code == 0

    left_out = cli("ingest", folder, "--store", "numpy", "--json")
    assert left_out.exit_code == 0, left_out.stderr
    assert json.loads(left_out.stdout)["chunks_deleted"] == 0
    readme = details(left_out)["README"]
    assert readme["status"] == "skipped" and readme["chunks"] == 1
    assert "give --as-text . again, or --forget-unread to remove them" in readme["reason"]
    assert "--forget-unread to remove them" in left_out.stderr
    hits = cli("query", "harbour toolkit", "--store", "numpy", "--top-k", "1", "--json")
    assert json.loads(hits.stdout)[0]["metadata"]["source"] == "README"

    forgotten = cli("ingest", folder, "--store", "numpy", "--forget-unread", "--json")
    assert forgotten.exit_code == 0, forgotten.stderr
    assert json.loads(forgotten.stdout)["chunks_deleted"] == 1
