"""Walking folders: globs, hidden files, symlink loops, order; the manifest and the report on their own."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ingest.manifest import Manifest, ManifestEntry
from ingest.progress import ProgressEvent, TerminalProgress
from ingest.report import FileReport, IngestReport
from ingest.walk import LEAVES_ROOT, GlobSet, walk
from rag.errors import IngestError


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def test_walk_sorted_skips_hidden_and_git(tmp_path: Path) -> None:
    _tree(tmp_path, ["b.md", "a.md", "sub/z.txt", "sub/a.txt", ".hidden.md", ".git/config", ".cache/x.md"])
    assert [f.source for f in walk([tmp_path]).files] == ["a.md", "b.md", "sub/a.txt", "sub/z.txt"]


def test_walk_include_exclude(tmp_path: Path) -> None:
    _tree(tmp_path, ["a.md", "b.txt", "drafts/c.md", "docs/deep/d.md", "docs/e.rst"])
    assert [f.source for f in walk([tmp_path], include=["*.md"]).files] == [
        "a.md",
        "docs/deep/d.md",
        "drafts/c.md",
    ]
    assert [f.source for f in walk([tmp_path], exclude=["drafts", "*.txt"]).files] == [
        "a.md",
        "docs/deep/d.md",
        "docs/e.rst",
    ]
    assert [f.source for f in walk([tmp_path], include=["docs/**/*.md"]).files] == ["docs/deep/d.md"]
    assert [f.source for f in walk([tmp_path], exclude=["docs/**"]).files] == ["a.md", "b.txt", "drafts/c.md"]


def test_glob_set_semantics() -> None:
    globs = GlobSet(["*.md", "docs/**/x?.rst", "[ab]*.txt"])
    assert globs.matches("deep/down/readme.md")
    assert globs.matches("docs/x1.rst") and globs.matches("docs/a/b/x2.rst")
    assert not globs.matches("other/x1.rst")
    assert globs.matches("a1.txt") and not globs.matches("c1.txt")
    assert not GlobSet([])


def test_walk_survives_symlink_loops_and_follows_links_on_request(tmp_path: Path) -> None:
    _tree(tmp_path, ["docs/a.md", "docs/sub/b.md", "elsewhere/c.md"])
    os.symlink(tmp_path / "docs", tmp_path / "docs" / "sub" / "loop")  # points back up: a loop
    os.symlink(tmp_path / "elsewhere", tmp_path / "docs" / "linked")
    sources = [f.source for f in walk([tmp_path / "docs"], follow_symlinks=True).files]
    assert sources == ["a.md", "linked/c.md", "sub/b.md"]


def test_walk_skips_links_that_leave_the_root(tmp_path: Path) -> None:
    _tree(tmp_path, ["docs/a.md", "docs/inner/b.md", "elsewhere/c.md", "secret/id_rsa.txt"])
    docs = tmp_path / "docs"
    os.symlink(tmp_path / "elsewhere", docs / "linked")  # a folder outside
    os.symlink(tmp_path / "secret" / "id_rsa.txt", docs / "key.txt")  # a file outside
    os.symlink(docs / "inner" / "b.md", docs / "alias.md")  # a file inside: kept
    os.symlink(docs / "inner", docs / "sub")  # a folder inside: already walked as inner/
    found = walk([docs])
    assert [f.source for f in found.files] == ["a.md", "alias.md", "inner/b.md"]
    assert sorted(source for _, source, _ in found.skipped) == ["key.txt", "linked"]
    assert all("outside the folder" in reason for _, _, reason in found.skipped)


def test_walk_single_file_and_missing_path(tmp_path: Path) -> None:
    _tree(tmp_path, ["one/.secret.md"])
    found = walk([tmp_path / "one" / ".secret.md"])
    assert [(f.source, f.root) for f in found.files] == [(".secret.md", tmp_path / "one")]
    assert found.folder_roots == []
    with pytest.raises(IngestError, match=r"no such file or folder: '.*nope'"):
        walk([tmp_path / "nope"])


def test_manifest_pending_reconcile_and_forget(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with Manifest(path) as m:
        m.put(ManifestEntry("a.md", "/r", 3, 7, "h", "k", ("1", "2"), ("d1", "d2")))
        m.commit()
        m.mark_pending("a.md", "/r", ["2", "3"])
        m.mark_pending("new.md", "/r", ["9"])
        m.commit()
    with Manifest(path) as m:  # as after a crash
        assert m.reconcile() == 2
        a, new = m.get("a.md"), m.get("new.md")
        assert a is not None and new is not None
        assert a.chunk_ids == ("1", "2", "3") and a.size == -1 and a.sha256 == ""
        assert new.chunk_ids == ("9",) and new.settings == ""
        m.forget_ids("a.md", ["1"])
        m.set_meta("k", "v")
        m.commit()
    with Manifest(path) as m:
        assert m.get("a.md").chunk_ids == ("2", "3")  # type: ignore[union-attr]
        assert m.get_meta("k") == "v" and m.reconcile() == 0


def test_manifest_uncommitted_changes_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with Manifest(path) as m:
        m.put(ManifestEntry("a.md", "/r", 1, 1, "h", "k", (), ()))
    with Manifest(path) as m:
        assert m.entries() == {}


def test_report_counts_json_and_lines() -> None:
    report = IngestReport(chunks_embedded=3, chunks_written=3)
    report.add(FileReport("a.md", "new", chunks=3, embedded=3))
    report.add(FileReport("scan.pdf", "new", chunks=0, pages_without_text=2))
    report.add(FileReport("bad.pdf", "failed", reason="damaged"))
    data = report.to_dict()
    assert data["files"] == {"new": 2, "changed": 0, "unchanged": 0, "deleted": 0, "failed": 1, "skipped": 0}
    assert data["pages_without_text"] == 2 and data["ok"] is False
    assert report.files[2].line() == "failed    bad.pdf  damaged"
    assert "2 page(s) without text" in report.files[1].line()
    assert "files: 2 new" in report.summary()


def test_report_counts_warnings_names_errors_and_skipped_types() -> None:
    report = IngestReport()
    noisy = FileReport(
        "log.pdf", "new", chunks=2, root="docs", warnings=[f"pypdf: Object {n} 0 found" for n in range(90)]
    )
    partial = FileReport("c.jsonl", "new", chunks=3, root="docs", errors=["'c.jsonl' line 2: invalid JSON"])
    report.add(noisy)
    report.add(partial)
    for name in ("a.png", "b.PNG", "c.xcf", "Makefile"):
        report.add(FileReport(name, "skipped", reason="unsupported file type", root="docs"))
    report.add(FileReport("key.txt", "skipped", reason=LEAVES_ROOT, root="docs"))
    assert noisy.line() == "new       docs/log.pdf  (2 chunks); 90 warnings (see --verbose)"
    verbose = noisy.line(verbose=True).splitlines()
    assert len(verbose) == 91 and verbose[1] == "    warning: pypdf: Object 0 0 found"
    assert partial.line() == "new       docs/c.jsonl  (3 chunks); 1 error: 'c.jsonl' line 2: invalid JSON"
    assert not report.ok and report.read_anything
    assert report.skipped_by_type() == (
        "skipped 5 files: .png x2, (no suffix) x1, .xcf x1, link outside the folder x1"
    )
    data = report.to_dict()
    assert (
        data["details"][1]["errors"] == partial.errors and data["details"][0]["source_id"] == "docs/log.pdf"
    )
    assert data["skipped_by_type"] == report.skipped_by_type()
    assert IngestReport().skipped_by_type() is None and not IngestReport().read_anything


class _Tty:
    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_terminal_progress_draws_a_bar_on_a_tty_and_plain_lines_elsewhere() -> None:
    tty = _Tty()
    bar = TerminalProgress(tty, interval_s=0.0)  # type: ignore[arg-type]
    bar(ProgressEvent("file", files_done=5, files_total=10, chunks_embedded=100, elapsed_s=2.0))
    bar(ProgressEvent("done", files_done=10, files_total=10, chunks_embedded=200, elapsed_s=4.0))
    assert "5/10 files" in tty.text and "50 chunks/s" in tty.text and "ETA 0:02" in tty.text
    assert tty.text.endswith("\n")
    quick = io.StringIO()  # not a terminal: a run shorter than the line interval prints nothing
    TerminalProgress(quick)(ProgressEvent("done", files_done=1, files_total=1))
    assert quick.getvalue() == ""
    log = io.StringIO()
    lines = TerminalProgress(log, line_interval_s=0.0)
    lines(ProgressEvent("file", files_done=5, files_total=10, chunks_embedded=100, elapsed_s=2.0))
    lines(ProgressEvent("done", files_done=10, files_total=10, chunks_embedded=200, elapsed_s=4.0))
    assert "\r" not in log.getvalue()
    assert [line.split("]")[1].split("  ")[0] for line in log.getvalue().splitlines()] == [
        " 5/10 files",
        " 10/10 files",
    ]
