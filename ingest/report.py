"""What an ingestion run did: one line per file and the totals.

Example:
    >>> report = IngestReport()
    >>> report.add(FileReport("a.md", "new", chunks=3))
    >>> report.add(FileReport("b.pdf", "failed", reason="file is damaged"))
    >>> report.counts["new"], report.counts["failed"], report.ok
    (1, 1, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["STATUSES", "FileReport", "FileStatus", "IngestReport"]

FileStatus = Literal["new", "changed", "unchanged", "deleted", "failed", "skipped"]
STATUSES: tuple[FileStatus, ...] = ("new", "changed", "unchanged", "deleted", "failed", "skipped")


@dataclass
class FileReport:
    """What happened to one file. `reason` says why a file failed or was skipped.

    `chunks` is how many chunks the file has now (or had, when deleted); `embedded` how many of them
    were embedded and written in this run.
    """

    source: str
    status: FileStatus
    chunks: int = 0
    embedded: int = 0
    reason: str | None = None
    pages_without_text: int = 0
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One human-readable line, such as `new       guide.md  (12 chunks)`."""
        detail = f"({self.chunks} chunk{'s' if self.chunks != 1 else ''})"
        if self.reason:
            detail = self.reason
        extra = f"; {self.pages_without_text} page(s) without text" if self.pages_without_text else ""
        warn = "".join(f"; {w}" for w in self.warnings)
        return f"{self.status:<9} {self.source}  {detail}{extra}{warn}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reason": self.reason,
            "pages_without_text": self.pages_without_text,
            "warnings": list(self.warnings),
        }


@dataclass
class IngestReport:
    """The summary of a run: files by status, chunk totals, pages without text, time.

    `truncated_chunks` counts chunks the splitter had to cut to fit the model's input: it must be 0.

    Example:
        >>> r = IngestReport(chunks_written=4, elapsed_s=0.5)
        >>> r.to_dict()["chunks_written"], r.ok
        (4, True)
    """

    files: list[FileReport] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    truncated_chunks: int = 0
    elapsed_s: float = 0.0

    def add(self, file: FileReport) -> None:
        self.files.append(file)

    @property
    def counts(self) -> dict[FileStatus, int]:
        """How many files ended in each status."""
        counts = dict.fromkeys(STATUSES, 0)
        for file in self.files:
            counts[file.status] += 1
        return counts

    @property
    def pages_without_text(self) -> int:
        return sum(f.pages_without_text for f in self.files)

    @property
    def ok(self) -> bool:
        """True when no file failed."""
        return all(f.status != "failed" for f in self.files)

    def by_status(self, status: FileStatus) -> list[FileReport]:
        return [f for f in self.files if f.status == status]

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values (what `rag ingest --json` prints)."""
        return {
            "files": dict(self.counts),
            "chunks_embedded": self.chunks_embedded,
            "chunks_written": self.chunks_written,
            "chunks_deleted": self.chunks_deleted,
            "pages_without_text": self.pages_without_text,
            "truncated_chunks": self.truncated_chunks,
            "elapsed_s": round(self.elapsed_s, 3),
            "ok": self.ok,
            "details": [f.to_dict() for f in self.files],
        }

    def summary(self) -> str:
        """The totals in two lines."""
        counts = self.counts
        files = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
        return (
            f"files: {files}\n"
            f"chunks: {self.chunks_embedded} embedded, {self.chunks_written} written, "
            f"{self.chunks_deleted} deleted; "
            f"{self.pages_without_text} page(s) without text; {self.truncated_chunks} truncated; "
            f"{self.elapsed_s:.2f} s"
        )
