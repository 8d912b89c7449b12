"""Plain text: encoding detection, binary detection, and the plain-text reader.

Every text-like reader (Markdown, reStructuredText, HTML) decodes through `decode_text`, so they all
accept the same encodings and refuse the same binary files. The order of guesses:

1. a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE);
2. UTF-16 without a BOM, when NUL bytes sit on alternate positions as ASCII text in UTF-16 makes them;
3. binary detection on the first 8 KB: any NUL byte, or more than 10% control characters other than
   the ones text holds (tab, backspace, escape, ...) -> skipped;
4. strict UTF-8;
5. an encoding the file declares (HTML `<meta charset>`), when it is one Python knows;
6. cp1252 (a superset of Latin-1's printable range, and what "ANSI" files on Windows are), then Latin-1,
   which decodes any byte; both add a warning, since the guess may be wrong.

The extracted text has its line endings normalised to `\\n`; chunk offsets count in that text. The
plain-text reader also drops typewriter overstrikes (`N\\bN` bold, `_\\bw` underline, `,\\bc`), as
`nroff` output and some manuals hold them: the words read as they print.

Example:
    >>> decode_text("café".encode("utf-16"), "a.txt").text
    'café'
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from ingest.readers.base import ReaderOptions, ReadResult, SkippedFile, Unit

__all__ = ["DecodedText", "decode_text", "make_unit", "read_text"]

_SAMPLE = 8192
_BOMS = (
    # UTF-32 first: its little-endian BOM starts with the UTF-16 one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Bytes below 0x20 that real text contains: backspace (nroff's overstrikes), tab, newline, vertical
# tab, form feed, carriage return, escape.
_TEXT_CONTROLS = frozenset(b"\b\t\n\x0b\x0c\r\x1b")
_CONTROLS = bytes(b for b in range(32) if b not in _TEXT_CONTROLS) + b"\x7f"
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")


@dataclass
class DecodedText:
    """A file's text with `\\n` line endings, the encoding used, and any warnings about the guess."""

    text: str
    encoding: str
    warnings: list[str] = field(default_factory=list)


def _utf16_without_bom(sample: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when the NUL bytes look like ASCII text in UTF-16, else None."""
    if len(sample) < 4 or b"\x00" not in sample:  # the common case, found without slicing the sample
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    if odd_nul > 0.3 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.3 and odd_nul < 0.05:
        return "utf-16-be"
    return None


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROLS))
    return controls / len(sample) > 0.10


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_text(data: bytes, source: str, *, declared: str | None = None) -> DecodedText:
    """Decode a text file's bytes (see the module docstring for the order of guesses).

    Raises:
        SkippedFile: the bytes look binary ("binary file").
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return DecodedText(_normalise(data[len(bom) :].decode(encoding, errors="replace")), encoding)
    sample = data[:_SAMPLE]
    utf16 = _utf16_without_bom(sample)
    if utf16 is not None:
        try:
            return DecodedText(_normalise(data.decode(utf16)), utf16)
        except UnicodeDecodeError:
            pass  # not UTF-16 after all: the binary check below decides
    if _looks_binary(sample):
        raise SkippedFile(source, "binary file")
    try:
        return DecodedText(_normalise(data.decode("utf-8")), "utf-8")
    except UnicodeDecodeError:
        pass
    codec = _known_codec(declared)
    if codec is not None and codec != "utf-8":
        try:
            return DecodedText(_normalise(data.decode(codec)), codec)
        except UnicodeDecodeError:
            pass
    for legacy in ("cp1252", "latin-1"):
        try:
            text = data.decode(legacy)
        except UnicodeDecodeError:
            continue  # cp1252 leaves five bytes undefined; Latin-1 never fails
        return DecodedText(_normalise(text), legacy, [f"not valid UTF-8; decoded as {legacy}"])
    raise AssertionError("unreachable: latin-1 decodes every byte")  # pragma: no cover


def make_unit(text: str, start: int, metadata: dict[str, object]) -> Unit | None:
    """A unit of `text` (which starts at `start` in the file's text) with outer whitespace trimmed.

    Returns None when the text is blank. Metadata values that are None are dropped.
    """
    stripped = text.lstrip()
    offset = start + len(text) - len(stripped)
    stripped = stripped.rstrip()
    if not stripped:
        return None
    clean = {k: v for k, v in metadata.items() if v is not None}
    return Unit(stripped, clean, char_offset=offset)  # type: ignore[arg-type]


def read_text(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A plain text file as one unit titled by nothing (plain text has no title)."""
    del options  # no option changes plain text
    decoded = decode_text(data, source)
    text = _OVERSTRIKE.sub("", decoded.text) if "\b" in decoded.text else decoded.text
    unit = make_unit(text, 0, {"source": source})
    return ReadResult([unit] if unit else [], warnings=decoded.warnings, text=text)
