"""`rag mcp`: the official MCP client lists and calls the tools of a real `rag mcp` process, over stdio and
over streamable HTTP, against a home the test ingests (numpy store, hashing embedder)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from click.testing import CliRunner

from rag import Document, HashingEmbedding, SearchRequest
from rag.cli import main
from rag.models import ExtractiveChatModel
from rag.secret import Secret
from rag.serve import RagService
from stores import NumpyVectorStore
from tests.e2e.serve_helpers import free_port, rag_env

if TYPE_CHECKING:
    from mcp import Client

# The MCP packages are imported by the tests that use them: every pytest worker imports this module to
# collect it, and importing them takes a second or more.
CODE = "from rag.cli import main; main()"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home ingested once for the module: the servers only read it."""
    tmp_path = tmp_path_factory.mktemp("mcp")
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text(
        "# Install\n\nMount the beacon lamp on the north tower.\n\n## Bolts\n\nTighten the brass bolts "
        "before you power the lantern.\n",
        encoding="utf-8",
    )
    (docs / "tides.md").write_text("# Tides\n\nSpring tides flood the causeway twice a month.\n", "utf-8")
    home = tmp_path / "home"
    result = CliRunner().invoke(main, ["ingest", str(docs)], env=rag_env(home))
    assert result.exit_code == 0, result.output
    return home


async def _exercise(client: Client) -> None:
    """What a host does: list the tools, search, ask, list and open sources, send bad input."""
    from mcp.shared.exceptions import MCPError

    listed = await client.list_tools()
    assert sorted(tool.name for tool in listed.tools) == ["ask", "search", "sources"]
    search_schema = next(tool for tool in listed.tools if tool.name == "search").input_schema
    assert search_schema["required"] == ["query"]
    assert search_schema["additionalProperties"] is False

    found = await client.call_tool("search", {"query": "causeway spring tides", "top_k": 2, "mode": "hybrid"})
    assert not found.is_error
    passages = found.structured_content["passages"]  # type: ignore[index]
    top = passages[0]
    assert "Spring tides flood the causeway" in top["text"]
    assert top["source"] == "tides.md" and top["citation"] == "docs/tides.md" and top["rank"] == 1
    assert (
        top["root"] == "docs"
        and top["scores"]["fused"] == top["score"]
        and {"cosine", "bm25"} <= set(top["scores"])
    )

    opened = await client.read_resource(top["resource"])
    assert opened.contents[0].text == top["text"]  # type: ignore[union-attr]

    filtered = await client.call_tool("search", {"query": "brass bolts", "filter": "source != 'nowhere'"})
    assert not filtered.is_error
    assert "brass bolts" in filtered.structured_content["passages"][0]["text"]  # type: ignore[index]

    answer = await client.call_tool("ask", {"question": "When do spring tides flood the causeway?"})
    assert not answer.is_error
    text = answer.content[0].text  # type: ignore[union-attr]
    assert "\n\nSources:\n[1] docs/tides.md" in text  # named as the search cites it
    assert answer.structured_content["sources"][0]["index"] == 1  # type: ignore[index]

    held = await client.call_tool("sources", {})
    rows = held.structured_content["sources"]  # type: ignore[index]
    assert sorted(row["citation"] for row in rows) == ["docs/guide/install.md", "docs/tides.md"]
    assert sorted((row["root"], row["source"]) for row in rows) == [
        ("docs", "guide/install.md"),
        ("docs", "tides.md"),
    ]
    resources = await client.list_resources()
    assert sorted(r.uri for r in resources.resources) == sorted(row["resource"] for row in rows)

    unknown = await client.call_tool("search", {"query": "tides", "colour": "blue"})
    assert unknown.is_error and "'colour'" in unknown.content[0].text  # type: ignore[union-attr]
    bad_filter = await client.call_tool("search", {"query": "tides", "filter": "source =="})
    assert bad_filter.is_error and "'=='" in bad_filter.content[0].text  # type: ignore[union-attr]
    bad_kind = await client.call_tool("ask", {"question": "tides", "top_k": "three"})
    assert bad_kind.is_error and "'top_k'" in bad_kind.content[0].text  # type: ignore[union-attr]
    too_many = await client.call_tool("search", {"query": "tides", "top_k": 5000})
    assert too_many.is_error and "'top_k' must be an integer from 0 to 100" in too_many.content[0].text  # type: ignore[union-attr]
    missing = await client.call_tool("ask", {})
    assert missing.is_error and "'question'" in missing.content[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError, match=r"no source 'nowhere\.md'"):
        await client.read_resource("rag://source/nowhere.md")
    # The server is still serving after every bad request.
    again = await client.call_tool("search", {"query": "lantern"})
    assert not again.is_error


def test_mcp_over_stdio(home: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-c", CODE, "mcp"], env=rag_env(home))

    async def main() -> None:
        async with Client(params) as client:
            await _exercise(client)

    asyncio.run(main())


def _wait_port(port: int, process: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"rag mcp exited early: {process.stderr.read() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("rag mcp did not listen in time")


def _http_server(home: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [sys.executable, "-c", CODE, "mcp", "--transport", "http", "--port", str(port), *args]
    process = subprocess.Popen(command, env=rag_env(home), stderr=subprocess.PIPE, text=True)
    _wait_port(port, process)
    return process, f"http://127.0.0.1:{port}/mcp"


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(2)
    try:
        process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def test_mcp_over_streamable_http(home: Path) -> None:
    from mcp import Client

    process, url = _http_server(home)
    try:

        async def main() -> None:
            async with Client(url) as client:
                await _exercise(client)

        asyncio.run(main())
    finally:
        _stop(process)


def test_mcp_http_with_token_refuses_requests_without_it() -> None:
    import httpx2
    import uvicorn
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from rag.mcp.http import mcp_http_app
    from rag.mcp.server import create_mcp_server

    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    service = RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))
    app = mcp_http_app(create_mcp_server(service), token=Secret("s3cret-token"))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _wait_port(port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401
        assert "bearer token" in refused.json()["error"] and "s3cret" not in refused.text

        async def main() -> str:
            headers = {"Authorization": "Bearer s3cret-token"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                found = await client.call_tool("search", {"query": "beacon"})
                return str(found.structured_content["passages"][0]["source"])  # type: ignore[index]

        assert asyncio.run(main()) == "beacon.md"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def test_mcp_http_refuses_a_public_address_without_token(home: Path) -> None:
    result = CliRunner().invoke(main, ["mcp", "--transport", "http", "--host", "0.0.0.0"], env=rag_env(home))
    assert result.exit_code != 0
    assert "give a bearer token" in result.output and "Traceback" not in result.output
