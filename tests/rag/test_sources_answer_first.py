"""The sources list of `rag ask` and `rag chat` names the sources the answer used first."""

from __future__ import annotations

from rag import Document
from rag.cli._sources import source_lines

DOCS = [
    Document("a", "Filler about tests.", {"source": "tests.md"}, score=1.0),
    Document("b", "Run valgrind with --leak-check.", {"source": "valgrind-run.md"}, score=0.8),
    Document("c", "Filler about lint.", {"source": "lint.md"}, score=0.5),
    Document("d", "Install valgrind with apt.", {"source": "valgrind-install.md"}, score=0.4),
]


def test_the_extractive_answers_sources_come_first_in_the_order_it_quotes_them() -> None:
    answer = "- Install valgrind with apt. [valgrind-install.md]\n- Run valgrind. [valgrind-run.md]"
    assert [line.split(" (")[0] for line in source_lines(DOCS, answer=answer)] == [
        "  [4] valgrind-install.md",
        "  [2] valgrind-run.md",
        "  [1] tests.md",
        "  [3] lint.md",
    ]


def test_numbered_citations_of_a_language_model_count_too() -> None:
    answer = "Run it with --leak-check [2], after installing it [4, 2]."
    assert [line.split(" (")[0] for line in source_lines(DOCS, answer=answer)][:2] == [
        "  [2] valgrind-run.md",
        "  [4] valgrind-install.md",
    ]


def test_without_citations_the_retrieval_order_stays() -> None:
    for answer in (None, "", "I cannot answer this from the documents."):
        assert [line.split(" (")[0] for line in source_lines(DOCS, answer=answer)] == [
            "  [1] tests.md",
            "  [2] valgrind-run.md",
            "  [3] lint.md",
            "  [4] valgrind-install.md",
        ]
