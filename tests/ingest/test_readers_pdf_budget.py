"""A PDF's extraction budget: time and decompressed page content, each naming the option that raises it."""

from __future__ import annotations

import pytest

from ingest.readers import ReaderOptions
from ingest.readers.pdf import read_pdf
from rag.errors import IngestError
from tests.ingest.pdfs import shared_stream_pdf


def test_a_pdf_out_of_time_fails_with_the_option_that_raises_the_limit() -> None:
    with pytest.raises(IngestError) as caught:
        read_pdf(shared_stream_pdf(3, 5), "slow.pdf", ReaderOptions(pdf_timeout=0.0))
    assert (
        str(caught.value)
        == "PDF 'slow.pdf' took more than 0 s to extract (--pdf-timeout SECONDS raises the limit)"
    )
    assert caught.value.path == "slow.pdf"


def test_a_shared_stream_counts_once_per_page_that_draws_it() -> None:
    data = shared_stream_pdf(3, 100)  # 3,900 bytes of content, drawn by each of 3 pages
    within = read_pdf(data, "ok.pdf", ReaderOptions(pdf_max_content=3 * 3900, pdf_timeout=None))
    assert [u.metadata["page"] for u in within.units] == [1, 2, 3]
    with pytest.raises(IngestError, match=r"stopped at page 3 of 3: .* \(--pdf-max-content MB raises"):
        read_pdf(data, "ok.pdf", ReaderOptions(pdf_max_content=3 * 3900 - 1))


@pytest.mark.parametrize("field", ["max_file_size", "pdf_timeout", "pdf_max_content"])
def test_a_negative_limit_is_refused(field: str) -> None:
    with pytest.raises(IngestError, match=f"{field} must be a number >= 0 or None"):
        ReaderOptions(**{field: -1})  # type: ignore[arg-type]
