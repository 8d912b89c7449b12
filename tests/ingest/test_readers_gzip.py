"""gzip-compressed files (most of /usr/share/doc) are unpacked and read as their inner suffix says."""

from __future__ import annotations

import gzip

import pytest

from ingest.readers import SkippedFile
from rag.errors import IngestError
from tests.ingest.conftest import Read

GUIDE = "# Lantern guide\n\n## Trimming\n\nTrim the wick every evening before the beacon is lit.\n"


def test_a_compressed_markdown_file_is_read_as_markdown(read: Read) -> None:
    packed = read("guide.md.gz", gzip.compress(GUIDE.encode()))
    plain = read("guide.md", GUIDE)
    assert packed.text == plain.text and "Trim the wick every evening" in packed.text
    assert [u.metadata for u in packed.units] == [
        {**u.metadata, "source": "guide.md.gz"} for u in plain.units
    ]


def test_a_compressed_file_without_an_inner_suffix_needs_as_text_dot(read: Read) -> None:
    data = gzip.compress(b"lantern (2.1) stable; urgency=low\n\n  * Brighter beacon.\n")
    with pytest.raises(SkippedFile, match="'\\(no suffix\\)'"):
        read("changelog.gz", data)
    assert "Brighter beacon." in read("changelog.gz", data, text_suffixes=(".",)).text


def test_a_file_that_unpacks_past_the_limit_is_refused_before_it_is_all_unpacked(read: Read) -> None:
    bomb = gzip.compress(b"beacon " * 300_000)  # 2.1 MB unpacked from a few kB
    assert len(bomb) < 20_000
    with pytest.raises(
        IngestError, match=r"'notes.txt.gz' unpacks to over the 1.0 MB limit \(--max-file-size"
    ):
        read("notes.txt.gz", bomb, max_file_size=2**20)
    assert "beacon" in read("notes.txt.gz", bomb, max_file_size=4 * 2**20).text


@pytest.mark.parametrize(
    "data",
    [b"\x1f\x8b\x08 not really gzip", gzip.compress(GUIDE.encode(), mtime=0)[:-12]],
    ids=["not-gzip", "truncated"],
)
def test_a_damaged_gzip_file_is_one_clear_error(read: Read, data: bytes) -> None:
    with pytest.raises(IngestError, match=r"cannot read 'broken\.md\.gz': not a valid gzip file"):
        read("broken.md.gz", data)
