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
    assert [row["citation"] for row in distinct][1] == "site/faq.md"  # as `rag query` names it
    copies = json.loads(cli(*args, "--keep-duplicates").stdout)["sources"]
    assert {row["citation"] for row in copies} == {"site/api/cors.md", "site/v1/cors.md"}


def test_a_page_of_copies_grows_until_it_is_full() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    copies = [Document(f"copy{i}", "beacon lamp lit at dusk", {"source": f"{i}.md"}) for i in range(12)]
    store.add([*copies, Document("other", "the beacon lamp burns oil", {"source": "oil.md"})])
    hits = DocumentsView(store).similarity_search(SearchRequest("beacon lamp lit at dusk", top_k=2))
    assert [h.id for h in hits][1] == "other" and hits[0].id.startswith("copy")
    assert DocumentsView(store).similarity_search(SearchRequest("beacon", top_k=0)) == []


SHARED = "Export the API key as SPRING_AI_OPENAI_API_KEY before you start the application."


@pytest.fixture
def guides(tmp_path: Path) -> Path:
    """Three different guides that repeat one Prerequisites paragraph, as Spring AI's OpenAI pages do."""
    site = tmp_path / "guides"
    site.mkdir()
    for name, body in (
        ("chat", "The chat client sends messages and streams the replies token by token."),
        ("embeddings", "The embedding client turns texts into vectors of 1536 numbers."),
        ("image", "The image client draws pictures from a prompt at three sizes."),
    ):
        (site / f"openai-{name}.md").write_text(
            f"# OpenAI {name}\n\n{body}\n\n## Prerequisites\n\n{SHARED}\n", encoding="utf-8"
        )
    return site


def test_pages_that_share_a_paragraph_are_not_copies(cli: Cli, guides: Path) -> None:
    assert cli("ingest", guides, "--store", "numpy").exit_code == 0
    result = cli("query", "set the OpenAI API key", "--store", "numpy", "--top-k", "3", "--json")
    hits = json.loads(result.stdout)
    assert {h["source"] for h in hits} == {"openai-chat.md", "openai-embeddings.md", "openai-image.md"}
    assert all(_paragraph(h) == SHARED for h in hits)


def test_eval_counts_the_hits_the_user_sees(cli: Cli, tree: Path, tmp_path: Path) -> None:
    """`faq.md` is second in what `rag query` shows (the copy of cors.md left out), so it is found at
    top-k 2; counted over the copies it would be third."""
    assert cli("ingest", tree, "--store", "numpy").exit_code == 0
    questions = tmp_path / "q.jsonl"
    row = {"question": "add the CORS middleware", "relevant": [{"source": "faq.md"}]}
    questions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = cli("eval", questions, "--store", "numpy", "--top-k", "2", "--mode", "hybrid", "--json")
    assert result.exit_code == 0, result.stderr
    [line] = json.loads(result.stdout)["settings"]
    assert line["hit_rate"] == 1.0
