"""`McpTools`: an MCP server written here (with the official SDK, run as a stdio subprocess) serves tools
that a `ChatClient` with the scripted fake model calls, sync and async, through the advisor chain."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from rag.advisors import ToolCallAdvisor
from rag.chat import AssistantMessage, ToolCall
from rag.client import ChatClient
from rag.errors import ConfigError, ToolError
from rag.mcp import McpTools
from rag.testing import FakeChatModel
from rag.tools import tool

SERVER = '''
import json, os, sys
from mcp.server.mcpserver import MCPServer, Context
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather")
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(os.getpid()))

@server.tool()
def lookup(city: str, ctx: Context) -> str:
    """The weather in a city."""
    meta = ctx.request_context.meta or {}
    return f"18 C in {city} for tenant {meta.get('tenant', 'none')}"

@server.tool()
def broken(city: str) -> str:
    """Always fails."""
    raise ToolError(f"no station near {city}")

@server.tool(name="admin.reset")
def reset() -> str:
    """Not for the model."""
    return "reset"

server.run()
'''


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "weather_server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


def _tools(script: Path, pid_file: Path, **options: object) -> McpTools:
    return McpTools([sys.executable, str(script), str(pid_file)], env=dict(os.environ), **options)  # type: ignore[arg-type]


def _asks(*calls: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls)]
    )


def test_chat_client_calls_mcp_tools_and_sees_server_errors(script: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    model = FakeChatModel(
        [_asks(("weather_lookup", '{"city": "Paris"}'), ("weather_broken", '{"city": "Oslo"}')), "Mild."]
    )
    with _tools(script, pid_file, prefix="weather", include=["lookup", "broken"]) as weather:
        client = ChatClient(model, tools=[weather], tool_context={"tenant": "acme", "session": object()})
        assert client.prompt("Weather?").call().content() == "Mild."
    offered = [tool.name for tool in model.prompts[0].options.tools or ()]  # type: ignore[union-attr]
    assert offered == ["weather_lookup", "weather_broken"]  # prefixed; admin.reset filtered out
    lookup, broken = model.prompts[1].messages[-2:]
    # The tool context arrived as _meta (the entry JSON cannot carry stayed behind).
    assert lookup.text == "18 C in Paris for tenant acme"
    assert broken.text.startswith("Error: ") and "no station near Oslo" in broken.text
    # Closing the McpTools stopped the server process.
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    with pytest.raises(ToolError, match="closed"):
        weather.call_tool("lookup", {"city": "Rome"})


def test_async_client_and_tool_call_advisor(script: Path, tmp_path: Path) -> None:
    model = FakeChatModel([_asks(("lookup", '{"city": "Lima"}')), "Warm."])

    async def main() -> str:
        async with _tools(script, tmp_path / "pid", include=lambda name: "." not in name) as weather:
            direct = await weather.tools[0].ainvoke({"city": "Quito"})
            assert direct == "18 C in Quito for tenant none"
            client = ChatClient(model, advisors=[ToolCallAdvisor(tools=[weather])])
            return await client.prompt("Weather in Lima?").acall().content()

    assert asyncio.run(main()) == "Warm."
    assert model.prompts[1].messages[-1].text == "18 C in Lima for tenant none"


def test_a_clash_without_a_prefix_is_an_error_naming_the_tool(script: Path, tmp_path: Path) -> None:
    @tool
    def lookup(city: str) -> str:
        """A local tool with the server tool's name."""
        return city

    with _tools(script, tmp_path / "pid", include=["lookup"]) as weather:
        model = FakeChatModel([_asks(("lookup", '{"city": "Rome"}')), "ok"])
        with pytest.raises(ToolError, match=r"two different tools are named 'lookup'.*prefix"):
            ChatClient(model, tools=[weather, lookup]).prompt("Weather?").call().content()


def test_include_names_a_tool_the_server_lacks(script: Path, tmp_path: Path) -> None:
    tools = _tools(script, tmp_path / "pid", include=["forecast"])
    with pytest.raises(ConfigError, match=r"no tool\(s\) \['forecast'\].*'lookup'"):
        tools.connect()


def test_a_server_that_cannot_start_is_a_tool_error(tmp_path: Path) -> None:
    tools = McpTools([sys.executable, str(tmp_path / "missing.py")], timeout=20)
    with pytest.raises(ToolError, match="could not connect to the MCP server"):
        tools.connect()
