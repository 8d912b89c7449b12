"""One name per file: `rag query`, `rag ask`, answers from Python, `rag serve` and filters all name an
ingested file `ROOT/PATH` (the folder's label, then the path inside it), and a cited name selects it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from ingest import IngestPipeline, RecursiveSplitter
from rag import HashingEmbedding, SearchRequest
from rag.advisors import QuestionAnswerAdvisor
from rag.chat.messages import Prompt
from rag.citations import citation
from rag.client import ChatClient
from rag.models import ExtractiveChatModel
from rag.serve import RagService, ServeConfig, create_app
from rag.testing import FakeChatModel
from stores import NumpyVectorStore
from tests.e2e.serve_helpers import ThreadServer

RunCli = Callable[..., Result]
INSTALL = "docs/guide/install.md"


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_ask_and_query_name_a_file_the_same_way_and_the_name_filters(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    question = "Where do I mount the beacon lamp?"
    hits = _json(cli("query", question, "--store", "numpy", "--json"))
    answer = _json(cli("ask", question, "--store", "numpy", "--json"))
    assert hits[0]["citation"] == hits[0]["source_id"] == answer["sources"][0]["citation"] == INSTALL
    assert {s["citation"] for s in answer["sources"]} <= {h["citation"] for h in hits}
    assert f"[{INSTALL}]" in answer["answer"]

    table = cli("query", question, "--store", "numpy").stdout
    text = cli("ask", question, "--store", "numpy", "--no-stream").stdout
    assert f"  {INSTALL}  p.-  " in table.splitlines()[0]
    sources = text.split("\nSources:\n")[1].splitlines()
    assert sources[0].startswith("  [1") and f"] {INSTALL}" in sources[0]

    only = _json(cli("ask", "beacon", "--store", "numpy", "--json", "--filter", f"source == '{INSTALL}'"))
    assert only["sources"] and {s["citation"] for s in only["sources"]} == {INSTALL}


def test_a_python_answers_cited_name_filters_on_that_file(docs: Path) -> None:
    store = NumpyVectorStore(HashingEmbedding())
    pipeline = IngestPipeline(store, RecursiveSplitter())
    assert pipeline.run([docs]).ok
    pipeline.manifest.close()
    client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store)])
    response = client.prompt("Where do I mount the beacon lamp?").call().response()
    cited = re.findall(r"\[([^\[\]]+)\]", response.text or "")
    assert cited and cited[0] == INSTALL == citation(response.documents[0])

    spec = client.prompt("beacon").advisors(params={"qa_filter_expression": f"source == '{cited[0]}'"})
    found = spec.call().response().documents
    assert found and {citation(d) for d in found} == {INSTALL}


@pytest.fixture
def served(docs: Path) -> Iterator[str]:
    """`rag serve`'s app on loopback over the docs, answered by a model that cites the last passage."""
    store = NumpyVectorStore(HashingEmbedding())
    pipeline = IngestPipeline(store, RecursiveSplitter())
    assert pipeline.run([docs]).ok
    pipeline.manifest.close()

    def cite_the_last(prompt: Prompt) -> list[str]:
        last = len(re.findall(r"^\[\d+\] \(source: ", prompt.user_text, re.MULTILINE))
        return ["The keepers log fog signals ", f"[{last}]."]

    defaults = SearchRequest("defaults", top_k=3, mode="lexical")
    service = RagService(store, FakeChatModel(cite_the_last), defaults)
    server = ThreadServer(create_app(service, ServeConfig(rate_limit=0)))
    yield server.base
    server.stop()


def _sources(text: str) -> list[str]:
    return text.split("\n\nSources:\n")[1].splitlines()


def test_serve_lists_the_source_the_answer_cites_first(served: str) -> None:
    question = {"role": "user", "content": "Who logs the beacon lamp, the tides and the fog signals?"}
    body = httpx.post(f"{served}/v1/chat/completions", json={"model": "rag", "messages": [question]}).json()
    rows = body["sources"]
    assert len({row["citation"] for row in rows}) == len(rows) == 3  # three files, one passage each
    last = rows[-1]["citation"]
    lines = _sources(body["choices"][0]["message"]["content"])
    assert lines == [f"[3] {last}"] + [f"[{r['index']}] {r['citation']}" for r in rows[:-1]]

    streamed = {"model": "rag", "messages": [question], "stream": True}
    with httpx.stream("POST", f"{served}/v1/chat/completions", json=streamed) as reply:
        events = [line[6:] for line in reply.iter_lines() if line.startswith("data: {")]
    pieces = [json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events]
    assert _sources("".join(pieces)) == lines

    search = {"query": "beacon lamp", "filter": f"source == '{INSTALL}'"}
    hits = httpx.post(f"{served}/v1/search", json=search).json()["data"]
    assert hits and {hit["citation"] for hit in hits} == {INSTALL}
