"""`read_file`: pick the reader for a file by its suffix and run it.

Readers raise only `SkippedFile` (on purpose: binary, unsupported) and `IngestError` (the file cannot be
read), whatever goes wrong inside them, so one bad file can be reported and the run can go on.

Example:
    >>> from pathlib import Path
    >>> ".md" in SUPPORTED_SUFFIXES and ".pdf" in SUPPORTED_SUFFIXES
    True
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import zlib
from collections.abc import Callable, Mapping
from functools import cache, partial
from pathlib import Path, PurePath
from types import MappingProxyType

from ingest.readers.base import ReaderOptions, ReadResult, SkippedFile, check_size, source_name
from rag.errors import IngestError

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Reader",
    "check_size",
    "file_suffix",
    "read_file",
    "reader_key",
    "readers",
    "source_digest",
    "source_name",
]

Reader = Callable[[bytes, str, ReaderOptions], ReadResult]


@cache
def readers() -> Mapping[str, Reader]:
    """The reader of each suffix in `SUPPORTED_SUFFIXES` (read-only), built on the first call.

    The readers are imported here so that `import ingest` stays cheap (pypdf loads with the first PDF);
    built once, since an ingestion asks for it once per file.
    """
    from ingest.readers.asciidoc import read_asciidoc
    from ingest.readers.html import read_html
    from ingest.readers.jsonl import read_jsonl
    from ingest.readers.markdown import read_markdown
    from ingest.readers.office import read_docx, read_epub, read_odt, read_pptx, read_xlsx
    from ingest.readers.pdf import read_pdf
    from ingest.readers.rst import read_rst
    from ingest.readers.text import read_text

    return MappingProxyType(
        {
            ".txt": read_text,
            ".text": read_text,
            ".md": read_markdown,
            ".markdown": read_markdown,
            ".rst": read_rst,
            ".rest": read_rst,
            ".adoc": read_asciidoc,
            ".asciidoc": read_asciidoc,
            ".html": read_html,
            ".htm": read_html,
            ".pdf": read_pdf,
            ".jsonl": read_jsonl,
            ".ndjson": read_jsonl,
            ".docx": read_docx,
            ".pptx": read_pptx,
            ".xlsx": read_xlsx,
            ".odt": read_odt,
            ".epub": read_epub,
        }
    )


SUPPORTED_SUFFIXES: frozenset[str] = frozenset(
    {
        ".txt",
        ".text",
        ".md",
        ".markdown",
        ".rst",
        ".rest",
        ".adoc",
        ".asciidoc",
        ".html",
        ".htm",
        ".pdf",
        ".jsonl",
        ".ndjson",
        ".docx",
        ".pptx",
        ".xlsx",
        ".odt",
        ".epub",
    }
)
"""The suffixes a reader is registered for; `ReaderOptions.text_suffixes` reads more as plain text."""

_KINDS = {".text": ".txt", ".markdown": ".md", ".rest": ".rst", ".asciidoc": ".adoc", ".htm": ".html"}
"""Suffixes that share a reader, mapped to the one that names it (`.htm` is read as `.html` is)."""


def file_suffix(name: str | os.PathLike[str]) -> str:
    """The lower-case suffix that picks a file's reader; a gzip-compressed file's is the one inside.

    Example:
        >>> file_suffix("guide/Install.MD"), file_suffix("README.md.gz"), file_suffix("changelog.gz")
        ('.md', '.md', '')
    """
    path = PurePath(name)
    if path.suffix.lower() == ".gz":
        path = PurePath(path.stem)
    return path.suffix.lower()


def _gunzip(data: bytes, source: str, options: ReaderOptions) -> bytes:
    """The unpacked bytes of a gzip file, refused past `options.max_file_size` before more is unpacked."""
    limit = options.max_file_size
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as packed:
            plain = packed.read(-1 if limit is None else limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise IngestError(f"cannot read {source!r}: not a valid gzip file ({exc})", path=source) from exc
    if limit is not None and len(plain) > limit:
        raise IngestError(
            f"{source!r} unpacks to over the {limit / 2**20:.1f} MB limit (--max-file-size MB raises it)",
            path=source,
        )
    return plain


def reader_key(suffix: str, options: ReaderOptions) -> str:
    """What decides how a file with `suffix` is read: its reader, and the options that reader uses.

    Two runs that give a file the same key extract the same text from the same bytes, so the ingest
    manifest keeps the file when only options for other files changed: adding `--as-text .cfg`
    re-reads no Markdown file, and a new `--text-field` only JSON Lines files. A suffix no reader takes
    is `"unsupported"`. Only PDFs use the password and only JSON Lines files the field options; the
    password enters as a hash, never as text.

    Example:
        >>> reader_key(".MD", ReaderOptions()), reader_key(".cfg", ReaderOptions(text_suffixes=(".cfg",)))
        ('.md', '.txt')
        >>> reader_key(".cfg", ReaderOptions())
        'unsupported'
    """
    suffix = suffix.lower()
    if suffix in options.text_suffixes:
        return ".txt"  # the plain text reader, which no option changes
    if suffix not in SUPPORTED_SUFFIXES:
        return "unsupported"
    kind = _KINDS.get(suffix, suffix)
    if kind == ".pdf":
        password = options.pdf_password
        secret = "" if password is None else hashlib.sha256(password.encode()).hexdigest()
        return json.dumps([kind, secret])
    if kind == ".jsonl":
        return json.dumps([kind, options.text_fields, options.id_field, options.metadata_fields])
    return kind


def _reads_as_rst(suffix: str, data: bytes, options: ReaderOptions) -> bool:
    """Whether a file is read as reStructuredText: its suffix says so, or a `.txt` file's markup does."""
    if suffix in options.text_suffixes:  # --as-text keeps a file plain
        return False
    kind = _KINDS.get(suffix, suffix)
    if kind != ".txt":
        return kind == ".rst"
    from ingest.readers.rst import looks_like_rst

    return looks_like_rst(data)


def source_digest(path: Path, root: Path, data: bytes, options: ReaderOptions) -> tuple[str, bool]:
    """A hash of what reading the file at `path` (bytes `data`) takes in, and whether other files are in it.

    For most files that is the SHA-256 of their bytes. A reStructuredText page with `.. include::`
    directives hashes its text with its includes resolved as `read_file` resolves them, so the hash
    changes when an included file does; `True` then says the page depends on other files, and an
    ingest compares it by this hash on every run instead of by its size and time.

    Example:
        >>> source_digest(Path("a.txt"), Path("."), b"Hello", ReaderOptions())[1]
        False
    """
    digest = hashlib.sha256(data)
    gzipped = path.suffix.lower() == ".gz"
    if b"include::" not in data or gzipped or not _reads_as_rst(file_suffix(path), data, options):
        return digest.hexdigest(), False
    from ingest.readers.rst_include import expand_includes
    from ingest.readers.text import decode_text

    try:
        lines = decode_text(data, path.name).text.split("\n")
    except SkippedFile:
        return digest.hexdigest(), False
    included = expand_includes(lines, path, root, options)
    if not (included.files or included.warnings):  # "include::" in prose, no directive
        return digest.hexdigest(), False
    digest.update("\n".join(included.lines).encode("utf-8", "surrogatepass"))
    return digest.hexdigest(), True


def read_file(
    path: Path,
    *,
    root: Path,
    options: ReaderOptions | None = None,
    data: bytes | None = None,
    source: str | None = None,
) -> ReadResult:
    """Read one file with the reader its suffix (case-insensitive, `file_suffix`) selects.

    A suffix in `options.text_suffixes` is read as plain text, whatever reader it would otherwise get.
    A `.gz` file is unpacked and read as its inner suffix says (`README.md.gz` as Markdown). A `.txt`
    file holding reStructuredText markup (`ingest.readers.rst.looks_like_rst`) is read as
    reStructuredText, and a reStructuredText file's `.. include::` directives pull in the files they
    name from within `root`.

    Args:
        path: the file.
        root: the folder being ingested; `source` metadata is `path` relative to it.
        options: reader settings (PDF password, JSON Lines fields).
        data: the file's bytes when the caller already read them (to hash them), so the file is read once.
        source: `source_name(path, root)` when the caller already has it (the walker computes it).

    Raises:
        SkippedFile: an unsupported suffix or a binary file (`.reason` says which).
        IngestError: the file is larger than `options.max_file_size` or cannot be read; `.path` is
            the source name and the message gives the reason.
    """
    if source is None:
        source = source_name(path, root)
    suffix = file_suffix(path)
    options = options or ReaderOptions()
    if suffix in options.text_suffixes:
        reader: Reader = readers()[".txt"]
    elif suffix in SUPPORTED_SUFFIXES:
        reader = readers()[suffix]
    else:
        raise SkippedFile(source, f"unsupported file type {suffix or '(no suffix)'!r}")
    if data is None:
        try:
            check_size(path.stat().st_size, source, options)
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read {source!r}: {exc.strerror or exc}", path=source) from exc
    check_size(len(data), source, options)
    if path.suffix.lower() == ".gz":
        data = _gunzip(data, source, options)
    if _reads_as_rst(suffix, data, options):
        from ingest.readers.rst import read_rst

        # A compressed page's includes are not followed (an ingest could not tell when they change).
        reader = read_rst if path.suffix.lower() == ".gz" else partial(read_rst, place=(path, root))
    try:
        return reader(data, source, options)
    except IngestError:
        raise
    except Exception as exc:
        raise IngestError(f"cannot read {source!r}: {type(exc).__name__}: {exc}", path=source) from exc
