"""`rag ask` through the real entry point: offline (extractive) and against a loopback OpenAI server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from rag.hits import HIT_KEYS
from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse, stream_reply

RunCli = Callable[..., Result]


@pytest.fixture(autouse=True)
def _no_chat_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)


@pytest.fixture
def ingested(cli: RunCli, docs: Path) -> RunCli:
    result = cli("ingest", docs, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    return cli


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_offline_answer_then_numbered_sources(ingested: RunCli) -> None:
    result = ingested("ask", "Who logs fog signals?", "--store", "numpy", "--top-k", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("From the documents (no language model was used")
    assert "- Each keeper logs fog signals in the ledger. [docs/keepers.txt]" in lines
    sources = lines[lines.index("Sources:") + 1 :]
    assert len(sources) == 1  # the other files hold no word of the question and a cosine of 0
    shown = r"  \[1\] docs/keepers\.txt \(score \d\.\d{3}, cosine \d\.\d{3}\)"
    assert re.fullmatch(shown, sources[0]), sources[0]


def test_offline_json_with_filter_and_stream(ingested: RunCli) -> None:
    data = _json(
        ingested(
            "ask", "brass bolts", "--store", "numpy", "--filter", "source == 'guide/install.md'", "--json"
        )
    )
    assert set(data) == {"answer", "sources"} and "Tighten the brass bolts" in data["answer"]
    assert {s["citation"] for s in data["sources"]} == {"docs/guide/install.md"}
    assert {s["source"] for s in data["sources"]} == {"guide/install.md"}
    assert tuple(data["sources"][0]) == HIT_KEYS
    streamed = ingested("ask", "brass bolts", "--store", "numpy", "--stream", "--top-k", "1")
    assert streamed.exit_code == 0 and "Tighten the brass bolts" in streamed.stdout
    assert "[1] docs/guide/install.md (score" in streamed.stdout


def test_nothing_retrieved_says_so(ingested: RunCli) -> None:
    result = ingested("ask", "fog signals", "--store", "numpy", "--threshold", "0.99")
    assert result.exit_code == 0
    assert result.stdout.startswith("I cannot answer this from the documents")
    assert "no passages matched the question" in result.stderr


def test_a_filter_that_selects_nothing_is_named(ingested: RunCli) -> None:
    misspelt = "sourc == 'docs/keepers.txt'"
    for command in ("ask", "query"):
        result = ingested(command, "fog signals", "--store", "numpy", "--filter", misspelt)
        assert result.exit_code == 0, result.output
        assert result.stderr == f"no chunk matches --filter {misspelt!r}\n", command


def test_against_an_openai_compatible_server(ingested: RunCli, openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(json=completion("The keepers log them [1].")))
    data = _json(
        ingested(
            "ask",
            "Who logs fog signals?",
            "--store",
            "numpy",
            "--top-k",
            "1",
            "--json",
            "--base-url",
            openai_server.base_url,
            "--model",
            "tiny-llm",
        )
    )
    assert data["answer"] == "The keepers log them [1]."
    assert data["sources"][0]["citation"] == "docs/keepers.txt"
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions" and request.json["model"] == "tiny-llm"
    user = request.json["messages"][-1]
    assert user["role"] == "user" and user["content"].startswith("Who logs fog signals?\n\n")
    assert "[1] (source: docs/keepers.txt)\nThe keepers rotate every fortnight." in user["content"]


def test_streams_from_the_server(
    ingested: RunCli, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    body = sse([chunk("The keep"), chunk("ers do."), chunk(finish_reason="stop"), chunk(usage=(30, 4))])
    openai_server.enqueue(stream_reply(body, cuts=[7, 40, 41]))
    result = ingested("ask", "Who logs fog signals?", "--store", "numpy", "--stream")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("The keepers do.\n\nSources:\n  [1] docs/keepers.txt")
    assert openai_server.requests[0].json["stream"] is True


def test_errors_are_one_line_with_exit_codes(ingested: RunCli, openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(status=400, json={"error": {"message": "bad model"}}))
    failed = ingested("ask", "fog", "--store", "numpy", "--base-url", openai_server.base_url)
    assert failed.exit_code == 1 and failed.stderr.startswith("error: ") and "400" in failed.stderr
    assert "Traceback" not in failed.stderr
    bad_filter = ingested("ask", "fog", "--store", "numpy", "--filter", "source ==")
    assert bad_filter.exit_code == 2 and bad_filter.stderr.startswith("error: ")
    missing = ingested("ask", "fog", "--store", "numpy", "--collection", "nothing-here")
    assert missing.exit_code == 1 and "run `rag ingest` first" in missing.stderr
