"""The values every reader returns, and the errors it raises.

A reader turns one file into `Unit`s: the pieces a splitter cuts into chunks (a whole text file, a
Markdown section, a PDF page, a JSON Lines record). Each unit remembers where its text starts in the
file's extracted text, so chunk offsets are file-level.

Example:
    >>> unit = Unit("Some text.", {"source": "notes.txt"}, char_offset=0)
    >>> result = ReadResult([unit])
    >>> result.units[0].metadata["source"], result.pages_without_text
    ('notes.txt', 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rag.documents import MetadataValue
from rag.errors import IngestError

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "DEFAULT_PDF_MAX_CONTENT",
    "DEFAULT_PDF_TIMEOUT",
    "MetadataValue",
    "ReadResult",
    "ReaderOptions",
    "SkippedFile",
    "Unit",
    "check_size",
    "source_name",
]

MB = 1024 * 1024
DEFAULT_MAX_FILE_SIZE = 32 * MB
"""The largest file read by default: reading and splitting hold a few copies of its text."""
DEFAULT_PDF_TIMEOUT = 60.0
"""Seconds of text extraction a PDF gets by default (pypdf reads about 200 ordinary pages a second)."""
DEFAULT_PDF_MAX_CONTENT = 16 * MB
"""Bytes of decompressed page content a PDF may hand the parser by default (pypdf parses about
0.3 MB a second and holds about 35 bytes per byte of the page it parses)."""


@dataclass(frozen=True)
class Unit:
    """One readable unit of a file, with its provenance.

    `metadata` always holds `source` (the POSIX path relative to the ingested root); `title` where the
    format has one; `page` and `page_label` for PDF pages; `section` (a heading path such as
    `"Install > From source"`) for Markdown and reStructuredText sections; front matter / header fields.
    `char_offset` is where `text` starts in the file's extracted text. `id` is a record id given by the
    file itself (JSON Lines with an id field), else None.

    Example:
        >>> u = Unit("Body.", {"source": "guide.md", "section": "Install"}, char_offset=42)
        >>> u.char_offset + len(u.text)
        47
    """

    text: str
    metadata: dict[str, MetadataValue]
    char_offset: int = 0
    id: str | None = None

    __hash__ = None  # type: ignore[assignment]  # metadata is a dict


@dataclass
class ReadResult:
    """What reading one file produced: its units, pages without a text layer, warnings, and errors.

    `errors` name the parts of the file that could not be read (a JSON Lines line that is not JSON):
    the units hold everything else, and the run reports the file with its errors and exits 1.
    `text` is the extracted text that unit offsets count in, where the reader has one (text, Markdown,
    reStructuredText, AsciiDoc, HTML): `text[u.char_offset:u.char_offset + len(u.text)] == u.text`.
    `included` names the other files whose text the file pulled in (reStructuredText includes), by
    their path in the ingested root.

    Example:
        >>> r = ReadResult([], pages_without_text=2, warnings=["2 of 2 pages have no text layer (scanned?)"])
        >>> r.pages_without_text
        2
    """

    units: list[Unit]
    pages_without_text: int = 0
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    text: str | None = None
    included: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReaderOptions:
    """Settings that change what readers extract.

    - `pdf_password`: tried after the empty password on encrypted PDFs.
    - `text_field`: the JSON Lines field(s) holding the text; several names separated by commas are
      joined with a blank line (`"title,text"` for BEIR corpora); missing or empty ones are left out.
    - `id_field`: the JSON Lines field holding a record id (`"_id"` for BEIR), or None.
    - `metadata_fields`: the JSON Lines fields kept as metadata; None keeps every other scalar field.
    - `text_suffixes`: more suffixes read as plain text (`(".cfg", ".log")`); written with or without the
      dot, in any case (`rag ingest --as-text .cfg`). A lone `.` stands for files without a suffix
      (`README`, `NEWS`, `copyright`), kept as `""`; a binary one is still skipped.
    - `max_file_size`: bytes; a larger file is not read and fails with a message naming
      `--max-file-size` (reading holds several copies of a file's text at once). None: no limit.
    - `pdf_timeout`: seconds of text extraction a PDF may take; `pdf_max_content`: bytes of page
      content (decompressed) a PDF may give the parser, counted before each page is parsed. A PDF over
      either budget fails with a message naming the option that raises it. None: no limit.

    The limits do not change what a file that is read gives, so they are left out of the repr (which
    older manifests recorded) and of the per-file settings keys.

    Example:
        >>> opts = ReaderOptions(text_field="title,text", id_field="_id")
        >>> opts.text_fields
        ('title', 'text')
    """

    pdf_password: str | None = None
    text_field: str = "text"
    id_field: str | None = None
    metadata_fields: tuple[str, ...] | None = None
    text_suffixes: tuple[str, ...] = ()
    max_file_size: int | None = field(default=DEFAULT_MAX_FILE_SIZE, repr=False)
    pdf_timeout: float | None = field(default=DEFAULT_PDF_TIMEOUT, repr=False)
    pdf_max_content: int | None = field(default=DEFAULT_PDF_MAX_CONTENT, repr=False)

    def __post_init__(self) -> None:
        for name in ("max_file_size", "pdf_timeout", "pdf_max_content"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value >= 0):
                raise IngestError(f"{name} must be a number >= 0 or None, got {value!r}")
        normalised = []
        for raw in self.text_suffixes:
            suffix = raw.strip().lower()
            if suffix == ".":
                normalised.append("")  # what `Path.suffix` gives a file without one
                continue
            suffix = suffix if suffix.startswith(".") else f".{suffix}"
            if len(suffix) < 2 or "/" in suffix or " " in suffix:
                raise IngestError(f"not a file suffix: {raw!r} (expected something like '.cfg')")
            normalised.append(suffix)
        object.__setattr__(self, "text_suffixes", tuple(sorted(set(normalised))))

    @property
    def text_fields(self) -> tuple[str, ...]:
        """`text_field` split on commas, blanks removed."""
        return tuple(name.strip() for name in self.text_field.split(",") if name.strip())


class SkippedFile(IngestError):
    """A file skipped on purpose (binary, unsupported suffix). `.path` and `.reason` say which and why.

    Example:
        >>> err = SkippedFile("logo.md", "binary file")
        >>> str(err), err.reason
        ("skipped 'logo.md': binary file", 'binary file')
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"skipped {path!r}: {reason}", path=path)
        self.reason = reason


def check_size(size: int, source: str, options: ReaderOptions) -> None:
    """Refuse a file larger than `options.max_file_size` before it is read.

    Raises:
        IngestError: the file is too large; the message names the option that raises the limit.

    Example:
        >>> check_size(10, "a.txt", ReaderOptions(max_file_size=100))
        >>> check_size(3 * 2**20, "big.txt", ReaderOptions(max_file_size=2**20))
        Traceback (most recent call last):
        ...
        rag.errors.IngestError: 'big.txt' is 3.0 MB, over the 1.0 MB limit (--max-file-size MB raises it)
    """
    limit = options.max_file_size
    if limit is not None and size > limit:
        raise IngestError(
            f"{source!r} is {size / 2**20:.1f} MB, over the {limit / 2**20:.1f} MB limit "
            "(--max-file-size MB raises it)",
            path=source,
        )


def source_name(path: Path, root: Path) -> str:
    """`path` relative to `root` as a POSIX string; the file name when `root` is the file itself."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return path.as_posix()
    return relative.as_posix() if relative.parts else path.name
