"""`rag query` and `rag ask` leave out chunks that repeat a better-ranked one (`--keep-duplicates` keeps
them), on a docs tree where one page is copied into another file, as Node's `all.html` copies every page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag import Document, HashingEmbedding, SearchRequest
from rag.retrieval import DocumentsView
from stores import NumpyVectorStore

Cli = Callable[..., Result]
CORS = "Add the CORS middleware to the application with add_middleware before the routes."
PREFLIGHT = "The CORS middleware answers preflight OPTIONS requests with the allowed origins."


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """`api/cors.md` and its copy `v1/cors.md`; `faq.md` says something else about CORS."""
    site = tmp_path / "site"
    for folder in ("api", "v1"):
        (site / folder).mkdir(parents=True)
        (site / folder / "cors.md").write_text(f"# CORS\n\n{CORS}\n", encoding="utf-8")
    (site / "faq.md").write_text(f"# FAQ\n\n{PREFLIGHT}\n", encoding="utf-8")
    return site


def _query(cli: Cli, *extra: str) -> list[dict[str, object]]:
    result = cli("query", "add the CORS middleware", "--store", "numpy", "--top-k", "2", "--json", *extra)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _paragraph(hit: dict[str, object]) -> str:
    """The hit's last paragraph: chunk text may start with its heading."""
    return str(hit["text"]).rsplit("\n", 1)[-1]


def test_query_drops_the_copy_and_fills_the_page(cli: Cli, tree: Path) -> None:
    assert cli("ingest", tree, "--store", "numpy").exit_code == 0
    kept = _query(cli, "--keep-duplicates")
    assert [_paragraph(h) for h in kept] == [CORS, CORS]
    assert {h["source"] for h in kept} == {"api/cors.md", "v1/cors.md"}
    distinct = _query(cli)
    assert [_paragraph(h) for h in distinct] == [CORS, PREFLIGHT]
    assert distinct[0]["id"] == kept[0]["id"]  # the better-ranked copy stays
    assert distinct[1]["source"] == "faq.md"


def test_ask_lists_each_passage_once(cli: Cli, tree: Path) -> None:
    assert cli("ingest", tree, "--store", "numpy").exit_code == 0
    args = ("ask", "How do I add the CORS middleware?", "--store", "numpy", "--top-k", "2", "--json")
    distinct = json.loads(cli(*args).stdout)["sources"]
    assert [row["source"] for row in distinct][1] == "faq.md"
    copies = json.loads(cli(*args, "--keep-duplicates").stdout)["sources"]
    assert {row["source"] for row in copies} == {"api/cors.md", "v1/cors.md"}


def test_a_page_of_copies_grows_until_it_is_full() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    copies = [Document(f"copy{i}", "beacon lamp lit at dusk", {"source": f"{i}.md"}) for i in range(12)]
    store.add([*copies, Document("other", "the beacon lamp burns oil", {"source": "oil.md"})])
    hits = DocumentsView(store).similarity_search(SearchRequest("beacon lamp lit at dusk", top_k=2))
    assert [h.id for h in hits][1] == "other" and hits[0].id.startswith("copy")
    assert DocumentsView(store).similarity_search(SearchRequest("beacon", top_k=0)) == []
