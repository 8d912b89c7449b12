"""Plain text: encodings, binary files, odd inputs, and what `read_file` does around the readers."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ingest.readers import SUPPORTED_SUFFIXES, ReaderOptions, SkippedFile, read_file, source_name
from ingest.readers.text import decode_text
from ingest.splitters import RecursiveSplitter
from rag.errors import IngestError
from tests.ingest.conftest import Read, Write

TEXT = "Crème brûlée costs 5 €.\nZürich — naïve café.\n"


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (TEXT.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "utf-8"),
        (TEXT.encode("utf-16"), "utf-16-le"),  # Python writes a little-endian BOM
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16-be"),
        (TEXT.encode("utf-32"), "utf-32-le"),
        (TEXT.encode("utf-16-le"), "utf-16-le"),  # no BOM: found by where the NUL bytes sit
        (TEXT.encode("utf-16-be"), "utf-16-be"),
        (TEXT.encode("cp1252"), "cp1252"),
    ],
)
def test_encodings_decode_to_the_same_text(encoded: bytes, encoding: str) -> None:
    decoded = decode_text(encoded, "a.txt")
    assert decoded.text == TEXT
    assert decoded.encoding == encoding


def test_legacy_8_bit_is_decoded_with_a_warning(read: Read) -> None:
    result = read("latin.txt", "Größe: 10 µm; ½ Preis".encode("latin-1"))
    assert result.units[0].text == "Größe: 10 µm; ½ Preis"
    assert result.warnings == ["not valid UTF-8; decoded as cp1252"]


def test_bytes_cp1252_leaves_undefined_fall_back_to_latin_1() -> None:
    decoded = decode_text(b"caf\xe9 \x81", "a.txt")
    assert decoded.encoding == "latin-1"
    assert decoded.text == "café \x81"


def test_crlf_and_cr_line_endings_become_newlines(read: Read) -> None:
    result = read("dos.txt", b"one\r\ntwo\rthree\n")
    assert result.units[0].text == "one\ntwo\nthree"


@pytest.mark.parametrize("name", ["logo.md", "blob.txt", "page.html", "notes.rst"])
def test_binary_files_are_skipped_with_a_reason(read: Read, name: str) -> None:
    png_like = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    with pytest.raises(SkippedFile, match="binary file") as info:
        read(name, png_like)
    assert info.value.path == name
    assert info.value.reason == "binary file"


def test_control_characters_without_nul_also_mean_binary() -> None:
    with pytest.raises(SkippedFile):
        decode_text(bytes([1, 2, 3, 4, 5, 65, 66]) * 100, "x.txt")


def test_unsupported_suffix_is_skipped(read: Read) -> None:
    with pytest.raises(SkippedFile, match=r"unsupported file type '\.exe'") as info:
        read("tool.exe", b"MZ")
    assert info.value.path == "tool.exe"
    assert {".txt", ".md", ".rst", ".html", ".pdf", ".jsonl"} <= SUPPORTED_SUFFIXES


def test_suffix_is_case_insensitive(read: Read) -> None:
    assert read("README.TXT", "Hello").units[0].text == "Hello"


def test_empty_and_blank_files_give_no_units(read: Read) -> None:
    assert read("empty.txt", b"").units == []
    assert read("blank.txt", " \n\t\n").units == []


def test_source_is_the_posix_path_relative_to_the_root(read: Read) -> None:
    unit = read("guides/deep/notes.txt", "  Indented start.\n").units[0]
    assert unit.metadata == {"source": "guides/deep/notes.txt"}
    assert unit.text == "Indented start."
    assert unit.char_offset == 2  # leading blanks trimmed by moving the offset


def test_source_name_of_a_single_file_root(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    assert source_name(path, path) == "a.txt"
    assert source_name(path, tmp_path / "elsewhere") == path.as_posix()


def test_a_missing_file_is_an_ingest_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"cannot read 'gone\.txt'") as info:
        read_file(tmp_path / "gone.txt", root=tmp_path)
    assert info.value.path == "gone.txt"


def test_bytes_given_by_the_caller_are_used_instead_of_reading(tmp_path: Path) -> None:
    result = read_file(tmp_path / "never-written.txt", root=tmp_path, data=b"from memory", options=None)
    assert result.units[0].text == "from memory"


def test_a_record_nested_too_deeply_is_one_bad_line(write: Write, tmp_path: Path) -> None:
    # json.loads raises RecursionError, not a JSON error: the line is named, the others are read.
    path = write("deep.jsonl", "[" * 100_000 + "\n" + '{"text": "kept"}\n')
    result = read_file(path, root=tmp_path)
    assert [u.text for u in result.units] == ["kept"]
    assert result.errors == ["'deep.jsonl' line 1: JSON nested too deeply"]


def test_five_megabyte_single_line_file_reads_and_splits(read: Read) -> None:
    words = ["retrieval", "augmented", "generation", "vector", "store", "chunk", "embedding", "query"]
    line = " ".join(words[i % 7] + str(i % 13) for i in range(560_000))
    assert len(line) > 5_000_000 and "\n" not in line
    result = read("huge.txt", line, pdf_password=None)
    unit = result.units[0]
    assert len(unit.text) == len(line)
    splitter = RecursiveSplitter(chunk_size=200, chunk_overlap=30)
    chunks = splitter.split(unit)
    assert len(chunks) == pytest.approx(560_000 / 170, rel=0.02)
    assert all(c.text == line[c.char_start : c.char_end] for c in chunks[:50])
    assert max(len(c.text.split()) for c in chunks) <= 200
    assert chunks[-1].char_end == len(line)


def test_reader_options_split_text_fields() -> None:
    assert ReaderOptions(text_field=" title , text ,").text_fields == ("title", "text")


def test_overstrikes_leave_plain_text_as_it_prints(read: Read) -> None:
    # nroff output: bold is a letter struck twice, underline an underscore struck under it, an accent
    # a comma struck over c. Even a page of bold headings is text, not a binary file.
    bold = "".join(f"{c}\b{c}" for c in "SYNOPSIS")
    text = read("manual.txt", f"{bold}\n  _\bm_\ba_\bn -k {bold}\nNicolas Fran,\bcois\n").text
    assert text == "SYNOPSIS\n  man -k SYNOPSIS\nNicolas Francois\n"
