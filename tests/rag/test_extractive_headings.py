"""The offline answerer quotes sentences, never a bare heading or title line: a heading leads the first
sentence under it when it says more than that sentence."""

from __future__ import annotations

from tests.rag.extractive_quotes import quote_lines


def test_markdown_headings_and_title_lines_are_never_quoted_alone() -> None:
    passages = (
        "[1] (source: upload.md)\n## Optional File Upload\n\nMake a file upload optional with None.\n\n"
        "[2] (source: files.rst)\nOptional File Upload\n\nOptional uploads default to None."
    )
    assert quote_lines(passages, "Is the file upload optional?") == [
        "- Make a file upload optional with None. [upload.md]",  # the heading adds nothing
        "- Optional File Upload: Optional uploads default to None. [files.rst]",
    ]


def test_list_items_and_sentences_without_a_full_stop_are_still_quoted() -> None:
    passages = (
        "[1] (source: steps.md)\n- run the upload server\n\n[2] (source: faq.md)\nThe upload server is up!"
    )
    assert quote_lines(passages, "upload server") == [
        "- run the upload server [steps.md]",
        "- The upload server is up! [faq.md]",
    ]
