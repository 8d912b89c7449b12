"""Changing a reader option (`--as-text`, `--text-field`) re-reads only the files whose reading changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

Cli = Callable[..., Result]


def _folder(root: Path) -> Path:
    folder = root / "pkg"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nOil the lantern hinges weekly.\n", encoding="utf-8")
    (folder / "guide.txt").write_text("Trim the wick before dusk.\n", encoding="utf-8")
    (folder / "app.cfg").write_text("lamp = brass\n", encoding="utf-8")
    (folder / "README").write_text("The lantern package keeps the beacon lit.\n", encoding="utf-8")
    records = [{"id": "r1", "title": "Tides", "text": "Spring tides flood the causeway."}]
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def _ingest(cli: Cli, folder: Path, *options: str) -> dict[str, Any]:
    result = cli("ingest", folder, "--store", "numpy", "--json", *options)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _by_status(report: dict[str, Any], status: str) -> list[str]:
    return sorted(d["source"] for d in report["details"] if d["status"] == status)


def test_only_files_whose_reading_changes_are_read_again(cli: Cli, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    first = _ingest(cli, folder, "--as-text", ".cfg")
    assert _by_status(first, "new") == ["app.cfg", "guide.txt", "log.jsonl", "notes.md"]

    # Files without a suffix join: README is new, and no other file is read again.
    wider = _ingest(cli, folder, "--as-text", ".cfg", "--as-text", ".")
    assert _by_status(wider, "new") == ["README"]
    assert _by_status(wider, "changed") == []
    assert _by_status(wider, "unchanged") == ["app.cfg", "guide.txt", "log.jsonl", "notes.md"]

    # .cfg left out: its chunks are kept (and reported); with --forget-unread they leave the store.
    kept = _ingest(cli, folder, "--as-text", ".")
    assert _by_status(kept, "skipped") == ["app.cfg"] and kept["chunks_deleted"] == 0
    narrower = _ingest(cli, folder, "--as-text", ".", "--forget-unread")
    assert _by_status(narrower, "skipped") == ["app.cfg"] and narrower["chunks_deleted"] == 1
    assert _by_status(narrower, "unchanged") == ["README", "guide.txt", "log.jsonl", "notes.md"]

    # A JSON Lines option re-reads the JSON Lines files only; --as-text .md the Markdown files only.
    fields = _ingest(cli, folder, "--as-text", ".", "--text-field", "title,text")
    assert _by_status(fields, "changed") == ["log.jsonl"] and fields["chunks_embedded"] == 1
    markdown = _ingest(cli, folder, "--as-text", ".", "--text-field", "title,text", "--as-text", ".md")
    assert _by_status(markdown, "changed") == ["notes.md"]
    assert _by_status(markdown, "unchanged") == ["README", "guide.txt", "log.jsonl"]

    found = cli("query", "lantern hinges tides wick", "--store", "numpy", "--top-k", "10", "--json")
    assert found.exit_code == 0, found.stderr
    hits = {h["source"]: h["text"] for h in json.loads(found.stdout)}
    assert set(hits) == {"README", "guide.txt", "log.jsonl", "notes.md"}
    assert hits["notes.md"].startswith("# Notes")  # read as plain text now: the heading mark stays
    assert hits["log.jsonl"] == "Tides\n\nSpring tides flood the causeway."


def test_a_new_pdf_password_re_reads_the_pdfs_only(cli: Cli, tmp_path: Path) -> None:
    from tests.ingest.pdfs import text_pdf

    folder = _folder(tmp_path)
    (folder / "manual.pdf").write_bytes(text_pdf(["Polish the lens each morning."]))
    first = _ingest(cli, folder)
    assert "manual.pdf" in _by_status(first, "new")
    again = _ingest(cli, folder, "--pdf-password", "harbour")
    assert _by_status(again, "changed") == ["manual.pdf"]
    assert _by_status(again, "unchanged") == ["guide.txt", "log.jsonl", "notes.md"]
