"""PDF through pypdf: one unit per page, with `page` (1-based) and `page_label`.

- Encrypted files are opened with the empty user password (many "protected" PDFs only restrict
  printing), then with `ReaderOptions.pdf_password`; otherwise `IngestError("encrypted PDF; pass
  --pdf-password")`, or "wrong PDF password" when a password was given.
- Pages without a text layer (scans) give no unit; they are counted in `pages_without_text` and the
  result carries the warning "N of M pages have no text layer (scanned?)".
- A damaged file raises `IngestError` with pypdf's reason, whatever pypdf raised: pypdf's exception types
  are many and not all derive from `PdfError`, so everything is caught here on purpose. A page whose
  text cannot be extracted is counted as a page without text, with its own warning.
- pypdf reports the repairs it makes through the `pypdf` logger. While a PDF is read those records go to
  `ReadResult.warnings` instead of stderr (thread-safe: each read collects its own).
- Budget: a PDF may take `ReaderOptions.pdf_timeout` seconds of extraction and hand the parser
  `pdf_max_content` bytes of decompressed page content (a stream shared by many pages counts once per
  page that draws it). Past either, the file fails with one error naming the option that raises it; a
  small file whose pages all draw one huge compressed stream cannot hold the run for an hour.
- Title: the document information's `/Title` when set. The extracted text of a file, which chunk offsets
  count in, is its pages' texts joined by a form feed (`\\f`); `char_offset` places each page there.

Example:
    >>> from pathlib import Path
    >>> # read_pdf(Path("manual.pdf").read_bytes(), "manual.pdf", ReaderOptions()).units[0].metadata["page"]
"""

from __future__ import annotations

import contextvars
import io
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.text import make_unit
from rag.errors import IngestError

__all__ = ["read_pdf"]

_collector: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("pdf_warnings", default=None)
_lock = threading.Lock()
_active = 0


class _Collect(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sink = _collector.get()
        if sink is not None:
            sink.append(f"pypdf: {record.getMessage()}")


_HANDLER = _Collect(logging.WARNING)


@contextmanager
def _pypdf_warnings(sink: list[str]) -> Iterator[None]:
    """Send pypdf's log warnings to `sink` instead of the root logger's handlers while reading."""
    global _active
    logger = logging.getLogger("pypdf")
    with _lock:
        if _active == 0:
            logger.addHandler(_HANDLER)
            logger.propagate = False
        _active += 1
    token = _collector.set(sink)
    try:
        yield
    finally:
        _collector.reset(token)
        with _lock:
            _active -= 1
            if _active == 0:
                logger.removeHandler(_HANDLER)
                logger.propagate = True


def _reason(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _open(data: bytes, source: str, password: str | None) -> Any:
    from pypdf import PasswordType, PdfReader

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except Exception as exc:
        raise IngestError(f"damaged PDF {source!r}: {_reason(exc)}", path=source) from exc
    if not reader.is_encrypted:
        return reader
    candidates = ["", password] if password else [""]
    for candidate in candidates:
        try:
            if reader.decrypt(candidate) != PasswordType.NOT_DECRYPTED:
                return reader
        except Exception as exc:
            raise IngestError(f"cannot decrypt PDF {source!r}: {_reason(exc)}", path=source) from exc
    if password:
        raise IngestError(f"wrong PDF password for {source!r}", path=source)
    raise IngestError(f"encrypted PDF {source!r}; pass --pdf-password", path=source)


def _labels(reader: Any, count: int) -> list[str]:
    try:
        labels = list(reader.page_labels)
    except Exception:
        labels = []
    return labels if len(labels) == count else [str(n + 1) for n in range(count)]


def _title(reader: Any) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    return (" ".join(str(title).split()) or None) if title else None


class _OverBudget(IngestError):
    """A PDF that needs more work than its budget allows (`ReaderOptions.pdf_timeout`, `pdf_max_content`)."""


def _stream_size(obj: Any) -> int:
    """The decompressed size of a content stream (pypdf keeps the decoded bytes: counted once, reused)."""
    try:
        return len(obj.get_object().get_data())
    except Exception:
        return 0  # a stream that cannot be decoded gives the parser nothing to do


def _content_size(page: Any) -> int:
    """Bytes the parser meets on `page`: its content streams and the form XObjects it may draw."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = list(contents) if isinstance(contents, list) else [contents]
    size = sum(_stream_size(stream) for stream in streams)
    try:
        xobjects = page["/Resources"].get_object()["/XObject"].get_object()
        forms = [x for x in xobjects.values() if x.get_object().get("/Subtype") == "/Form"]
    except Exception:
        forms = []
    return size + sum(_stream_size(form) for form in forms)


class _Budget:
    """The time and the page content a PDF may use, checked before each page and between operators.

    pypdf parses a page's whole content stream before it interprets any operator, and that parse cannot be
    interrupted: the content budget is spent before each parse starts, so no parse runs past it; the
    time is checked between pages and at every operator pypdf interprets.
    """

    def __init__(self, source: str, options: ReaderOptions) -> None:
        self.source = source
        self.timeout = options.pdf_timeout
        self.deadline = None if self.timeout is None else time.monotonic() + self.timeout
        self.limit = options.pdf_max_content
        self.used = 0

    def spend(self, page: Any, number: int, count: int) -> None:
        """Count `page`'s content before it is parsed; `_OverBudget` when it would pass the limit."""
        self.check()
        if self.limit is None:
            return
        self.used += _content_size(page)
        if self.used > self.limit:
            raise _OverBudget(
                f"PDF {self.source!r} stopped at page {number} of {count}: its pages hold more than "
                f"{self.limit / 2**20:.1f} MB of content to parse (--pdf-max-content MB raises the limit)",
                path=self.source,
            )

    def check(self, *_: Any) -> None:
        """`_OverBudget` once the time is up (also pypdf's per-operator visitor: it takes 4 arguments)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _OverBudget(
                f"PDF {self.source!r} took more than {self.timeout:g} s to extract "
                "(--pdf-timeout SECONDS raises the limit)",
                path=self.source,
            )


def _read(data: bytes, source: str, options: ReaderOptions, result: ReadResult) -> None:
    budget = _Budget(source, options)
    reader = _open(data, source, options.pdf_password)
    try:
        pages = list(reader.pages)
    except Exception as exc:
        raise IngestError(f"damaged PDF {source!r}: {_reason(exc)}", path=source) from exc
    labels = _labels(reader, len(pages))
    base: dict[str, MetadataValue] = {"source": source}
    title = _title(reader)
    if title:
        base["title"] = title
    offset = 0
    for number, page in enumerate(pages, start=1):
        try:
            budget.spend(page, number, len(pages))
            text = page.extract_text(visitor_operand_before=budget.check) or ""
        except _OverBudget:
            raise
        except Exception as exc:
            result.warnings.append(f"page {number}: text extraction failed ({_reason(exc)})")
            text = ""
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
        unit = make_unit(text, offset, {**base, "page": number, "page_label": labels[number - 1]})
        if unit is None:
            result.pages_without_text += 1
        else:
            result.units.append(unit)
        offset += len(text) + 1  # the form feed that separates pages
    if result.pages_without_text:
        result.warnings.append(
            f"{result.pages_without_text} of {len(pages)} pages have no text layer (scanned?)"
        )


def read_pdf(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A PDF as one unit per page with text (see the module docstring)."""
    result = ReadResult([])
    with _pypdf_warnings(result.warnings):
        _read(data, source, options, result)
    return result
