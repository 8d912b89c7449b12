"""One set of keys for a chunk in every machine-readable output: `rag query --json`, `rag ask --json`,
`rag serve` (a completion's sources, streamed or not, and `/v1/search`) and the `rag mcp` tools, run for
real over one home the test ingests: a Markdown file and a JSON Lines record under the root `docs`."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag.hits import HIT_KEYS
from tests.e2e.serve_helpers import ServeProcess, rag_env, rag_in_process

QUESTION = "beacon lamp"
INSTALL = {"citation": "docs/guide/install.md", "source": "guide/install.md", "root": "docs"}
RECORD = {"citation": "docs/records.jsonl#r7", "source": "records.jsonl", "root": "docs"}
NAMES = ("id", "citation", "source", "root", "page", "chunk_index", "text")
SCORES = ("score", "cosine", "scores")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("keys")
    docs = tmp / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text("# Install\n\nMount the beacon lamp on the north tower.\n")
    (docs / "tides.md").write_text("# Tides\n\nSpring tides flood the causeway twice a month.\n")
    records = [{"id": "r7", "text": "The beacon lamp burns whale oil."}, {"id": "r8", "text": "Fog."}]
    (docs / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    home = tmp / "home"
    result = rag_in_process(["ingest", str(docs), "--id-field", "id"], rag_env(home))
    assert result.exit_code == 0, result.stderr
    return home


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(["--rate-limit", "0"], rag_env(home))
    yield process
    process.stop()


def _cli(home: Path, *args: str) -> Any:
    result = rag_in_process([*args, "--json"], rag_env(home))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _mcp(home: Path) -> dict[str, list[dict[str, Any]]]:
    from mcp import Client, StdioServerParameters

    code = "from rag.cli import main; main()"
    params = StdioServerParameters(command=sys.executable, args=["-c", code, "mcp"], env=rag_env(home))

    async def calls() -> dict[str, list[dict[str, Any]]]:
        async with Client(params) as client:
            found = await client.call_tool("search", {"query": QUESTION})
            asked = await client.call_tool("ask", {"question": QUESTION})
            held = await client.call_tool("sources", {})
        return {
            "mcp search": found.structured_content["passages"],  # type: ignore[index]
            "mcp ask": asked.structured_content["sources"],  # type: ignore[index]
            "mcp sources": held.structured_content["sources"],  # type: ignore[index]
        }

    return asyncio.run(calls())


def _streamed_sources(base: str) -> list[dict[str, Any]]:
    body = {"model": "rag", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=60) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: {")]
    return next(event["sources"] for event in events if "sources" in event)


def _by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in rows}


def test_every_output_names_a_chunk_with_the_same_keys_and_values(home: Path, server: ServeProcess) -> None:
    chat = {"model": "rag", "messages": [{"role": "user", "content": QUESTION}]}
    completion = httpx.post(f"{server.base}/v1/chat/completions", json=chat, timeout=60).json()
    searched = httpx.post(f"{server.base}/v1/search", json={"query": QUESTION}, timeout=60).json()
    mcp = _mcp(home)
    searches = {
        "query --json": _cli(home, "query", QUESTION),
        "serve /v1/search": searched["data"],
        "mcp search": mcp["mcp search"],
    }
    answers = {
        "ask --json": _cli(home, "ask", QUESTION)["sources"],
        "serve sources": completion["sources"],
        "serve streamed sources": _streamed_sources(server.base),
        "mcp ask": mcp["mcp ask"],
    }
    outputs = {**searches, **answers}
    for name, rows in outputs.items():
        assert rows, name
        assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1)), name
        for row in rows:
            assert set(HIT_KEYS) <= set(row), (name, sorted(set(HIT_KEYS) - set(row)))

    reference = _by_id(searches["query --json"])
    for expected in (INSTALL, RECORD):
        [chunk] = [row for row in reference.values() if row["citation"] == expected["citation"]]
        assert {key: chunk[key] for key in expected} == expected
        for name, rows in outputs.items():
            row = _by_id(rows)[chunk["id"]]
            assert {key: row[key] for key in NAMES} == {key: chunk[key] for key in NAMES}, name
    for name, rows in searches.items():  # one search, one ranking: the same scores, where the same rank
        assert [row["id"] for row in rows] == list(reference), name
        for row in rows:
            for key in SCORES:
                assert row[key] == pytest.approx(reference[row["id"]][key]), (name, key)

    files = {row["citation"]: row for row in mcp["mcp sources"]}
    assert {key: files[INSTALL["citation"]][key] for key in INSTALL} == INSTALL
    assert {key: files["docs/records.jsonl"][key] for key in INSTALL} == {
        "citation": "docs/records.jsonl",
        "source": "records.jsonl",
        "root": "docs",
    }
