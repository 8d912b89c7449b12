"""Test PDFs generated on the fly with fpdf2 (layout) and pypdf (labels, encryption, rotation).

Every builder returns the file's bytes; nothing is read from disk.

Example:
    >>> data = text_pdf(["First page.", "Second page."])
    >>> data[:5]
    b'%PDF-'
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence

from fpdf import FPDF
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.constants import PageLabelStyle

__all__ = [
    "damaged_pdf",
    "encrypted_pdf",
    "image_only_pdf",
    "labelled_pdf",
    "mixed_scan_pdf",
    "rotated_pdf",
    "shared_stream_pdf",
    "text_pdf",
]


def _new_pdf(title: str | None) -> FPDF:
    pdf = FPDF()
    pdf.set_auto_page_break(auto=False)
    if title is not None:
        pdf.set_title(title)
    return pdf


def _write_text(pdf: FPDF, text: str) -> None:
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.set_xy(20, 20)
    pdf.multi_cell(170, 8, text)


def _add_image_page(pdf: FPDF) -> None:
    """A page holding only a picture, as a scanner makes it: no text layer at all."""
    picture = Image.new("RGB", (60, 40), (200, 30, 30))
    pdf.add_page()
    pdf.image(picture, x=20, y=20, w=120)


def _bytes(pdf: FPDF) -> bytes:
    return bytes(pdf.output())


def _rewrite(data: bytes) -> PdfWriter:
    return PdfWriter(clone_from=PdfReader(io.BytesIO(data)))


def _writer_bytes(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_pdf(pages: Sequence[str], *, title: str | None = None) -> bytes:
    """A PDF with one page of (Latin-1) text per entry."""
    pdf = _new_pdf(title)
    for text in pages:
        _write_text(pdf, text)
    return _bytes(pdf)


def labelled_pdf(pages: Sequence[str]) -> bytes:
    """A PDF whose first two pages are labelled i, ii and the rest 1, 2, ... (front matter, then body)."""
    writer = _rewrite(text_pdf(pages, title="Labelled manual"))
    writer.set_page_label(0, 1, style=PageLabelStyle.LOWERCASE_ROMAN, start=1)
    writer.set_page_label(2, len(pages) - 1, style=PageLabelStyle.DECIMAL, start=1)
    return _writer_bytes(writer)


def encrypted_pdf(pages: Sequence[str], *, user_password: str, owner_password: str = "owner-secret") -> bytes:
    """An AES-256 encrypted PDF; `user_password=""` opens without a password, as many such files do."""
    writer = _rewrite(text_pdf(pages))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    return _writer_bytes(writer)


def image_only_pdf(pages: int = 2) -> bytes:
    """A 'scanned' PDF: every page is a picture, none has a text layer."""
    pdf = _new_pdf(None)
    for _ in range(pages):
        _add_image_page(pdf)
    return _bytes(pdf)


def mixed_scan_pdf() -> bytes:
    """Three pages: text, a picture without text, text."""
    pdf = _new_pdf(None)
    _write_text(pdf, "Page one has text.")
    _add_image_page(pdf)
    _write_text(pdf, "Page three has text too.")
    return _bytes(pdf)


def rotated_pdf(text: str, degrees: int = 90) -> bytes:
    """A one-page PDF displayed rotated (the page's /Rotate entry), as scanners often leave pages."""
    writer = _rewrite(text_pdf([text]))
    writer.pages[0].rotate(degrees)
    return _writer_bytes(writer)


def damaged_pdf(kind: str = "truncated") -> bytes:
    """A broken PDF: `truncated` (cut mid-file), `garbage` (a header and noise), `empty` (0 bytes),
    `bad-xref` (a wrong cross-reference offset, which pypdf repairs, logging a warning), or `lost-xref`
    (30 readable pages whose cross-reference entries all say "free": pypdf finds each object by
    scanning the file and logs "Object N 0 found" for every one, about 90 warnings).
    """
    if kind == "truncated":
        data = text_pdf(["This file will be cut in half."] * 3)
        return data[: len(data) // 3]
    if kind == "garbage":
        return b"%PDF-1.7\n" + bytes(range(256)) * 8
    if kind == "empty":
        return b""
    if kind == "bad-xref":
        data = text_pdf(["Readable after repair."])
        return data[: data.rindex(b"startxref")] + b"startxref\n999\n%%EOF\n"
    if kind == "lost-xref":
        data = text_pdf([f"Page {n} of the lantern log." for n in range(1, 31)])
        start, end = data.rindex(b"\nxref\n"), data.rindex(b"trailer")
        return data[:start] + data[start:end].replace(b" 00000 n", b" 00000 f") + data[end:]
    raise ValueError(f"unknown kind of damage: {kind!r}")


def shared_stream_pdf(pages: int, repeats: int, word: str = "lantern") -> bytes:
    """`pages` pages that all draw one compressed content stream of `repeats` text operations.

    Written object by object: the file stays small (one compressed stream, a few bytes per page) while
    every page hands pypdf the whole decompressed stream to parse, as in a decompression-bomb PDF.
    """
    body = b"BT /F1 12 Tf 72 700 Td (%s) Tj ET\n" % word.encode("ascii") * repeats
    packed = zlib.compress(body, 9)
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    objects += [page] * pages
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
