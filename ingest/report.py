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

from ingest.readers.registry import file_suffix
from ingest.walk import LEAVES_ROOT

__all__ = ["STATUSES", "FileReport", "FileStatus", "IngestReport"]

FileStatus = Literal["new", "changed", "unchanged", "deleted", "failed", "skipped"]
STATUSES: tuple[FileStatus, ...] = ("new", "changed", "unchanged", "deleted", "failed", "skipped")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class FileReport:
    """What happened to one file. `reason` says why a file failed or was skipped.

    `source` is the path relative to the root labelled `root`; `source_id` (`root/source`) is the
    file's identity in the store. `chunks` is how many chunks the file has now (or had, when deleted);
    `embedded` how many of them were embedded and written in this run. `warnings` are notes (a PDF
    repaired by pypdf, records without text); `errors` are parts of the file that could not be read
    (a JSON Lines line that is not JSON): the rest of the file is ingested, the run exits 1.
    """

    source: str
    status: FileStatus
    chunks: int = 0
    embedded: int = 0
    reason: str | None = None
    pages_without_text: int = 0
    warnings: list[str] = field(default_factory=list)
    root: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def source_id(self) -> str:
        """`root/source`, or `source` alone when no root is known."""
        return f"{self.root}/{self.source}" if self.root else self.source

    def line(self, *, verbose: bool = False) -> str:
        """One human-readable line, such as `new       docs/guide.md  (12 chunks)`.

        Warnings and errors are counted on the line; `verbose` adds one indented line for each.
        """
        detail = f"({_plural(self.chunks, 'chunk')})"
        if self.reason:
            detail = self.reason
        notes = [f"{self.pages_without_text} page(s) without text"] if self.pages_without_text else []
        if self.errors:
            notes.append(f"{_plural(len(self.errors), 'error')}: {self.errors[0]}")
        if self.warnings:
            notes.append(_plural(len(self.warnings), "warning") + ("" if verbose else " (see --verbose)"))
        text = f"{self.status:<9} {self.source_id}  {detail}" + "".join(f"; {n}" for n in notes)
        if verbose:
            text += "".join(f"\n    error: {e}" for e in self.errors)
            text += "".join(f"\n    warning: {w}" for w in self.warnings)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "root": self.root,
            "source_id": self.source_id,
            "status": self.status,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reason": self.reason,
            "pages_without_text": self.pages_without_text,
            "warnings": list(self.warnings),
            "errors": list(self.errors),
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
        """True when no file failed and no file had parts that could not be read."""
        return all(f.status != "failed" and not f.errors for f in self.files)

    @property
    def read_anything(self) -> bool:
        """True when at least one file was read (new, changed or unchanged)."""
        return any(f.status in ("new", "changed", "unchanged") for f in self.files)

    def skipped_by_type(self, limit: int | None = None) -> str | None:
        """Skipped files counted by suffix, e.g. `skipped 3 files: .png x2, .docx x1`; None if none.

        Links left out for leaving their folder are counted as `link outside the folder`. `limit` names
        that many kinds, the most frequent, and counts the others (`and 12 more kinds`).
        """
        kinds: dict[str, int] = {}
        for file in self.by_status("skipped"):
            if file.reason == LEAVES_ROOT:
                kind = "link outside the folder"
            else:
                kind = file_suffix(file.source) or "(no suffix)"
            kinds[kind] = kinds.get(kind, 0) + 1
        if not kinds:
            return None
        ordered = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
        total = sum(kinds.values())
        shown = ", ".join(f"{k} x{n}" for k, n in ordered[:limit])
        rest = len(ordered) - len(ordered[:limit])
        more = f" and {rest} more kinds" if rest else ""
        return f"skipped {_plural(total, 'file')}: {shown}{more}"

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
            "skipped_by_type": self.skipped_by_type(),
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
