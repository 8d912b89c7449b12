"""A docs tree's names find its pages: stub pages of titles alone, identifiers written in mixed case."""

from __future__ import annotations

from pathlib import Path

from ingest.pipeline import IngestPipeline
from ingest.splitters import RecursiveSplitter
from rag import HashingEmbedding, SearchRequest
from stores import NumpyVectorStore

_FILLER = "It is read when the project is configured, and its value is kept in the cache."


def _tree(root: Path, pages: dict[str, str]) -> NumpyVectorStore:
    """Ingest `pages` (relative path -> text) written under `root/docs` into an in-memory store."""
    docs = root / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    store = NumpyVectorStore(HashingEmbedding(64))
    pipeline = IngestPipeline(store, RecursiveSplitter(), manifest=root / "manifest.sqlite")
    pipeline.run([docs])
    pipeline.manifest.close()
    return store


def _pages(store: NumpyVectorStore, query: str) -> list[str]:
    hits = store.similarity_search(SearchRequest(query, top_k=5, mode="lexical"))
    return [str(hit.metadata["source"]) for hit in hits]


def test_a_page_of_titles_alone_is_found_by_its_title(tmp_path: Path) -> None:
    store = _tree(
        tmp_path,
        {
            "variable/CTEST_DROP_SITE_PASSWORD.rst": (
                "CTEST_DROP_SITE_PASSWORD\n------------------------\n\n.. versionadded:: 3.1\n"
            ),
            "variable/CTEST_SITE.rst": f"CTEST_SITE\n----------\n\nThe site name. {_FILLER}\n",
            "guide/empty-section.md": "# Release channels\n\n## Nightly\n",
            "guide/install.md": f"# Installing\n\nDownload the archive. {_FILLER}\n",
        },
    )
    assert _pages(store, "ctest drop site password")[0] == "variable/CTEST_DROP_SITE_PASSWORD.rst"
    assert _pages(store, "nightly release channels") == ["guide/empty-section.md"]
    [stub] = store.get(filter="source == 'variable/CTEST_DROP_SITE_PASSWORD.rst'")
    assert stub.text == "CTEST_DROP_SITE_PASSWORD"
    assert stub.metadata["title"] == "CTEST_DROP_SITE_PASSWORD"


def test_an_identifier_in_mixed_case_and_its_words_find_each_other(tmp_path: Path) -> None:
    store = _tree(
        tmp_path,
        {
            "api/HttpClient.md": f"# HttpClient\n\nSends requests over one pooled connection. {_FILLER}\n",
            "api/client.md": f"# Client\n\nThe client of the service. {_FILLER}\n",
            "api/settings.md": f"# Settings\n\nSet `dropSitePassword` before the upload. {_FILLER}\n",
        },
    )
    assert _pages(store, "http client")[0] == "api/HttpClient.md"
    assert _pages(store, "drop site password") == ["api/settings.md"]
    assert _pages(store, "DropSitePassword") == ["api/settings.md"]
