"""What `rag query`, `ask`, `chat`, `eval` and `rag serve` show is documents, each text once.

The home's store holds a docs tree with one page copied into another folder, and chat-memory turns
that Python code wrote into the same store through `VectorStoreChatMemoryAdvisor` (as a notebook
sharing the home would). No command returns a turn as a document; the copy is left out unless
`--keep-duplicates` (or, on `/v1/search`, `"keep_duplicates": true`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from ingest import open_home
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.client import ChatClient
from rag.retrieval.scope import KIND_KEY
from rag.testing import FakeChatModel
from tests.e2e.serve_helpers import ServeProcess, rag_env, rag_in_process

Cli = Callable[..., Result]
CORS = "Add the CORS middleware to the application with add_middleware before the routes."
PREFLIGHT = "The CORS middleware answers preflight OPTIONS requests with the allowed origins."
QUESTION = "How do I add the CORS middleware to the application?"
REPLY = "Add the CORS middleware with add_middleware before the routes, as the guide says."


def _home(root: Path, store: str) -> Path:
    """A home: `api/cors.md`, its copy `v1/cors.md`, `faq.md`, and two turns remembered from Python."""
    site = root / "site"
    for folder in ("api", "v1"):
        (site / folder).mkdir(parents=True)
        (site / folder / "cors.md").write_text(f"# CORS\n\n{CORS}\n", encoding="utf-8")
    (site / "faq.md").write_text(f"# FAQ\n\n{PREFLIGHT}\n", encoding="utf-8")
    home = root / "home"
    result = rag_in_process(["ingest", str(site)], {**rag_env(home), "RAG_STORE": store})
    assert result.exit_code == 0, result.stderr
    with open_home(home, store=store) as opened:
        advisor = VectorStoreChatMemoryAdvisor(opened.store)
        client = ChatClient(FakeChatModel(default=REPLY), advisors=[advisor])
        client.prompt(QUESTION).advisors(conversation_id="notebook").call().content()
        assert opened.store.count(f"'{KIND_KEY}' == 'chat_memory'") == 2  # the turns are in the store
        opened.save()
    return home


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _home(tmp_path_factory.mktemp("documents-only"), "numpy")


def _is_turn(text: str) -> bool:
    return text.strip() in (QUESTION, REPLY)


def _paragraph(text: str) -> str:
    """A chunk's last paragraph: chunk text may start with its heading."""
    return text.rsplit("\n", 1)[-1]


def test_query_never_shows_a_turn_and_shows_each_text_once(cli: Cli, home: Path) -> None:
    args = ("query", QUESTION, "--home", home, "--top-k", "10", "--json")
    hits = json.loads(cli(*args).stdout)
    assert not [h for h in hits if _is_turn(h["text"]) or KIND_KEY in h["metadata"]]
    assert sorted(_paragraph(h["text"]) for h in hits) == sorted([CORS, PREFLIGHT])
    copies = json.loads(cli(*args, "--keep-duplicates").stdout)
    assert sorted(_paragraph(h["text"]) for h in copies) == sorted([CORS, CORS, PREFLIGHT])
    assert not [h for h in copies if _is_turn(h["text"])]  # keeping copies never brings memory back


def test_query_on_chroma_never_shows_a_turn(cli: Cli, tmp_path: Path) -> None:
    home = _home(tmp_path, "chroma")
    result = cli("query", QUESTION, "--home", home, "--top-k", "10", "--json")
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)
    assert sorted(_paragraph(h["text"]) for h in hits) == sorted([CORS, PREFLIGHT])


def test_query_in_every_mode_leaves_turns_out(cli: Cli, home: Path) -> None:
    for mode in ("lexical", "hybrid"):
        result = cli("query", QUESTION, "--home", home, "--mode", mode, "--top-k", "10", "--json")
        assert result.exit_code == 0, result.stderr
        assert [h for h in json.loads(result.stdout) if _is_turn(h["text"])] == []


def test_ask_never_answers_from_a_turn(cli: Cli, home: Path) -> None:
    result = cli("ask", QUESTION, "--home", home, "--top-k", "10", "--json")
    assert result.exit_code == 0, result.stderr
    reply = json.loads(result.stdout)
    assert {row["citation"] for row in reply["sources"]} == {"site/api/cors.md", "site/faq.md"}
    assert REPLY not in reply["answer"]


def test_eval_never_ranks_a_turn(cli: Cli, home: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    relevant = [{"source": "api/cors.md"}, {"source": "v1/cors.md"}]
    questions.write_text(json.dumps({"question": QUESTION, "relevant": relevant}) + "\n", encoding="utf-8")
    result = cli("eval", questions, "--home", home, "--top-k", "1", "--filter", "none", "--json")
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)["settings"]
    assert (row["top_k"], row["recall"], row["ndcg"]) == (1, 0.5, 1.0)  # a copy is first, not the turn


def test_chat_lists_each_passage_once(cli: Cli, home: Path) -> None:
    script = f"{QUESTION}\n/sources\n/exit\n"
    common = ("chat", "--home", home, "--top-k", "2", "--no-stream")
    sources = _chat_sources(cli(*common, input=script))
    assert sources == ["site/api/cors.md", "site/faq.md"]
    assert sorted(_chat_sources(cli(*common, "--keep-duplicates", input=script))) == [
        "site/api/cors.md",
        "site/v1/cors.md",
    ]


def _chat_sources(result: Result) -> list[str]:
    """The sources `/sources` listed: `  [1] site/api/cors.md (score ..., cosine ...)`."""
    assert result.exit_code == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("[")]
    return [line.split("] ", 1)[1].split(" (", 1)[0] for line in lines]


# -- rag serve ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(["--rate-limit", "0"], rag_env(home))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def keeping(home: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(["--rate-limit", "0", "--keep-duplicates"], rag_env(home))
    yield process
    process.stop()


def _search(server: ServeProcess, **body: Any) -> list[dict[str, Any]]:
    response = httpx.post(f"{server.base}/v1/search", json={"query": QUESTION, "top_k": 10, **body})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["data"]
    return hits


def _sources(server: ServeProcess) -> list[str]:
    body = {"model": "rag", "top_k": 2, "messages": [{"role": "user", "content": QUESTION}]}
    response = httpx.post(f"{server.base}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return [row["source"] for row in response.json()["sources"]]


def test_search_never_returns_a_turn_and_returns_each_text_once(server: ServeProcess) -> None:
    hits = _search(server)
    assert [h for h in hits if _is_turn(h["text"]) or KIND_KEY in h["metadata"]] == []
    assert sorted(_paragraph(h["text"]) for h in hits) == sorted([CORS, PREFLIGHT])
    copies = _search(server, keep_duplicates=True)
    assert sorted(_paragraph(h["text"]) for h in copies) == sorted([CORS, CORS, PREFLIGHT])
    assert [h for h in copies if _is_turn(h["text"])] == []


def test_search_refuses_a_keep_duplicates_that_is_not_a_boolean(server: ServeProcess) -> None:
    response = httpx.post(f"{server.base}/v1/search", json={"query": "cors", "keep_duplicates": "yes"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "keep_duplicates"
    assert "'keep_duplicates' must be true or false, got 'yes'" in error["message"]


def test_chat_completions_cite_each_passage_once(server: ServeProcess) -> None:
    assert _sources(server) == ["api/cors.md", "faq.md"]


def test_a_server_started_with_keep_duplicates_keeps_them(keeping: ServeProcess) -> None:
    assert sorted(_sources(keeping)) == ["api/cors.md", "v1/cors.md"]
    hits = _search(keeping)
    assert sorted(_paragraph(h["text"]) for h in hits) == sorted([CORS, CORS, PREFLIGHT])
    assert len(_search(keeping, keep_duplicates=False)) == 2  # a request may still ask for distinct hits
