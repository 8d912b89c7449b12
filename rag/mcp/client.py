"""`McpTools`: the tools of an MCP server (a stdio command or a URL) as tools of the advisor chain.

Spring AI's `SyncMcpToolCallbackProvider`: give `McpTools(...)` wherever tools go (`ChatClient(tools=...)`,
`.tools(...)`, `ToolCallAdvisor(tools=...)`) and each tool the server lists becomes a tool the model may
call. The tool context (`ToolContext.values`) travels with each call as the MCP request's `_meta`; a
server's error reply, or a broken connection, is a tool error the model reads and may recover from.

The connection lives on an event loop of its own, in a thread, so the same `McpTools` serves sync code,
async code and the worker threads an async chain runs sync advisors in. Close it with `close()` (or
`with` / `async with`); it is also closed when garbage-collected or at interpreter exit.

Example:
    >>> tools = McpTools(["python", "weather_server.py"], prefix="weather", include=["forecast"])
    >>> tools  # nothing starts until the tools are first needed
    McpTools(server=['python', 'weather_server.py'], prefix='weather', connected=False)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import shlex
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from rag.chat.messages import ToolDefinition
from rag.errors import ConfigError, ToolError
from rag.tools.context import ToolContext

__all__ = ["McpTool", "McpTools"]

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def _local_name(name: str, prefix: str | None) -> str:
    """The tool's name as the model sees it: prefixed, and only the characters tool names allow."""
    full = f"{prefix}_{name}" if prefix else name
    return _INVALID.sub("_", full)[:64]


def _result_text(result: Any) -> str:
    """The text of an MCP tool result: its text parts; other parts named by their kind."""
    parts: list[str] = []
    for item in result.content:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and hasattr(item.resource, "text"):
            parts.append(item.resource.text)
        else:
            parts.append(
                f"[{kind} content{f' ({item.mime_type})' if getattr(item, 'mime_type', None) else ''}]"
            )
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


@dataclass(frozen=True)
class McpTool:
    """One tool of an MCP server, runnable by the `ToolCallingManager` (see `McpTools`).

    `definition` carries the local name (prefixed when the `McpTools` has a prefix) and the server's
    description and input schema; `remote_name` is the name the server knows.

    Example:
        >>> McpTool.__dataclass_fields__.keys() >= {"definition", "remote_name"}
        True
    """

    definition: ToolDefinition
    remote_name: str
    owner: McpTools
    return_direct: bool = False

    @property
    def name(self) -> str:
        return self.definition.name

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> str:
        """Call the tool on the server and return its text.

        Raises:
            ToolError: the server answered with an error, or could not be reached.
        """
        return self.owner.call_tool(self.remote_name, arguments, context)

    async def ainvoke(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> str:
        """`invoke` for async code: awaits the call without blocking the event loop."""
        return await self.owner.acall_tool(self.remote_name, arguments, context)

    def __repr__(self) -> str:
        return f"McpTool(name={self.name!r}, remote_name={self.remote_name!r})"


class _Connection:
    """An MCP client session held open by a task on a private event loop in a daemon thread."""

    def __init__(self, target: Any, headers: Mapping[str, str], timeout: float) -> None:
        self.target = target
        self.headers = dict(headers)
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rag-mcp", daemon=True)
        self.client: Any = None
        self.closing: asyncio.Event | None = None
        self.done: concurrent.futures.Future[None] | None = None

    def open(self) -> list[Any]:
        """Start the loop, connect, and return the server's tools."""
        self.thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.done = asyncio.run_coroutine_threadsafe(self._hold(ready), self.loop)
        try:
            return ready.result(timeout=self.timeout)
        except BaseException:
            self.close()
            raise

    async def _hold(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import Client

        self.closing = asyncio.Event()
        try:
            async with self._client(Client) as client:
                self.client = client
                tools: list[Any] = []
                cursor: str | None = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                ready.set_result(tools)
                await self.closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                raise

    def _client(self, client_class: Any) -> Any:
        if isinstance(self.target, str) and self.headers:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            @contextlib.asynccontextmanager
            async def with_headers() -> Any:
                async with (
                    httpx2.AsyncClient(headers=self.headers) as http,
                    client_class(streamable_http_client(self.target, http_client=http)) as client,
                ):
                    yield client

            return with_headers()
        return client_class(self.target)

    def submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self) -> None:
        """Leave the session (the stdio server is stopped, the HTTP session ended) and stop the loop."""
        if not self.thread.is_alive():
            return
        if self.closing is not None:
            self.loop.call_soon_threadsafe(self.closing.set)
        if self.done is not None:
            # A session that already failed has nothing left to close.
            with contextlib.suppress(BaseException):
                self.done.result(timeout=self.timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=self.timeout)
        if not self.thread.is_alive():
            self.loop.close()


class McpTools:
    """The tools of one MCP server, for `ChatClient(tools=...)`, `.tools(...)` or `ToolCallAdvisor`.

    Args:
        server: a URL (`http://...` or `https://...`, streamable HTTP), a command line to start a stdio
            server (a list, or a string split as a shell would), or the SDK's `StdioServerParameters`.
        env: environment of the stdio server (default: the SDK's safe subset of this one).
        headers: HTTP headers sent with every request, e.g. `{"Authorization": "Bearer ..."}`.
        prefix: put before each tool name (`prefix_name`), so two servers' tools cannot clash.
        include: which tools to offer: names, or a predicate on the server's tool name.
        timeout: seconds to connect and for each tool call.

    Raises:
        ConfigError: an empty server, or a name in `include` the server does not have (at connection).

    Example:
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> def ask(url: str) -> str:
        ...     with McpTools(url, prefix="docs") as docs:
        ...         client = ChatClient(FakeChatModel(default="ok"), tools=[docs])
        ...         return client.prompt("What do the docs say?").call().content()
    """

    def __init__(
        self,
        server: str | Sequence[str] | Any,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        headers: Mapping[str, str] | None = None,
        prefix: str | None = None,
        include: Iterable[str] | Callable[[str], bool] | None = None,
        timeout: float = 30.0,
    ) -> None:
        if isinstance(server, str) and not server.strip():
            raise ConfigError("McpTools needs a server: a URL or a command line, got ''")
        self.server = server
        self.prefix = prefix
        self.timeout = timeout
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._headers = dict(headers or {})
        self._include = include if include is None or callable(include) else tuple(include)
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._tools: tuple[McpTool, ...] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- connection --------------------------------------------------------------------------------

    def _target(self) -> Any:
        from mcp import StdioServerParameters

        server = self.server
        if isinstance(server, str) and server.startswith(("http://", "https://")):
            return server
        if isinstance(server, StdioServerParameters):
            return server
        words = shlex.split(server) if isinstance(server, str) else [str(word) for word in server]
        if not words:
            raise ConfigError("McpTools needs a command line to start a stdio server, got an empty one")
        return StdioServerParameters(command=words[0], args=words[1:], env=self._env, cwd=self._cwd)

    def connect(self) -> Self:
        """Connect now (otherwise the first use of the tools connects). Idempotent.

        Raises:
            ToolError: the server could not be started or reached, or did not answer in time.
            ConfigError: a name in `include` that the server does not have.
        """
        self.provided_tools()
        return self

    def provided_tools(self) -> tuple[McpTool, ...]:
        """The server's tools (after `include`), connecting first if needed (the `ToolProvider` method)."""
        with self._lock:
            if self._tools is None:
                self._tools = self._open()
            return self._tools

    @property
    def tools(self) -> tuple[McpTool, ...]:
        return self.provided_tools()

    def _open(self) -> tuple[McpTool, ...]:
        connection = _Connection(self._target(), self._headers, self.timeout)
        try:
            listed = connection.open()
        except Exception as exc:
            raise ToolError(
                f"could not connect to the MCP server {self._describe()}: {_reason(exc)}"
            ) from exc
        if isinstance(self._include, tuple):
            missing = sorted(set(self._include) - {tool.name for tool in listed})
            if missing:
                connection.close()
                names = sorted(tool.name for tool in listed)
                raise ConfigError(
                    f"the MCP server {self._describe()} has no tool(s) {missing!r}; it has {names!r}"
                )
        self._connection = connection
        self._finalizer = weakref.finalize(self, connection.close)
        prefix = self.prefix
        offered = [tool for tool in listed if self._wanted(tool.name)]
        return tuple(
            McpTool(
                ToolDefinition(
                    _local_name(tool.name, prefix), tool.description or tool.name, tool.input_schema
                ),
                tool.name,
                self,
            )
            for tool in offered
        )

    def _wanted(self, name: str) -> bool:
        include = self._include
        if include is None:
            return True
        if callable(include):
            return bool(include(name))
        return name in include

    def close(self) -> None:
        """End the session: a stdio server process is stopped, an HTTP session terminated. Idempotent."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()  # runs connection.close once
            self._connection = None
            self._finalizer = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.connect)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- calls -------------------------------------------------------------------------------------

    def _future(
        self, name: str, arguments: Mapping[str, Any], context: ToolContext | None
    ) -> concurrent.futures.Future[Any]:
        self.provided_tools()
        connection = self._connection
        if connection is None or connection.client is None:
            raise ToolError(f"the MCP server {self._describe()} is closed: the McpTools was closed")
        meta = _meta(context)
        call = connection.client.call_tool(
            name, dict(arguments), read_timeout_seconds=self.timeout, meta=meta
        )
        return connection.submit(call)

    def _text(self, name: str, result: Any) -> str:
        text = _result_text(result)
        if result.is_error:
            raise ToolError(f"the MCP server reported an error for {name!r}: {text}")
        return text

    def call_tool(self, name: str, arguments: Mapping[str, Any], context: ToolContext | None = None) -> str:
        """Call the server's tool `name` (its own name, not prefixed) and return the result's text.

        Raises:
            ToolError: an error reply, a broken connection, or no reply within `timeout`.
        """
        future = self._future(name, arguments, context)
        try:
            result = future.result(timeout=self.timeout + 5)
        except Exception as exc:
            future.cancel()
            raise ToolError(
                f"calling {name!r} on the MCP server {self._describe()} failed: {_reason(exc)}"
            ) from exc
        return self._text(name, result)

    async def acall_tool(
        self, name: str, arguments: Mapping[str, Any], context: ToolContext | None = None
    ) -> str:
        """`call_tool` for async code (the call runs on the connection's loop; this one is not blocked)."""
        future = await asyncio.to_thread(self._future, name, arguments, context)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout + 5)
        except Exception as exc:
            raise ToolError(
                f"calling {name!r} on the MCP server {self._describe()} failed: {_reason(exc)}"
            ) from exc
        return self._text(name, result)

    def _describe(self) -> str:
        server = self.server
        if isinstance(server, str):
            return repr(server.split("?", 1)[0])  # a URL's query may hold a key: never shown
        return repr(getattr(server, "command", None) or list(server)[:1])

    def __repr__(self) -> str:
        shown = self.server if isinstance(self.server, str | list | tuple) else type(self.server).__name__
        if isinstance(shown, str):
            shown = shown.split("?", 1)[0]
        return f"McpTools(server={shown!r}, prefix={self.prefix!r}, connected={self._tools is not None})"


def _json_value(value: Any) -> bool:
    if value is None or isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list | tuple):
        return all(_json_value(item) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(key, str) and _json_value(item) for key, item in value.items())
    return False


def _meta(context: ToolContext | None) -> dict[str, Any] | None:
    """The tool context as MCP `_meta`: the entries JSON can carry (other objects stay in this process)."""
    if context is None:
        return None
    kept = {key: value for key, value in context.values.items() if _json_value(value)}
    return kept or None


def _reason(exc: BaseException) -> str:
    """The innermost meaningful message of an exception (task groups wrap the real one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
