"""The MCP server of `rag mcp`: a home's search, answers and documents as Model Context Protocol tools.

Tools: `search` (passages as every JSON output lists them, `rag.hits.hit_record`, each with the resource
of its file), `ask` (the answer with its numbered sources, from the same chain as `rag ask` and `rag
serve`) and `sources` (the files the home holds). Each source file is a resource
(`rag://source/<quoted source>`, plain text, its chunks in order), so a host can open what an answer
cites. Arguments are checked before anything runs: an unknown field,
a value of the wrong kind, a filter that does not parse, all come back as a tool error naming it.

Needs the `mcp` extra (`pip install 'rag-advisors[mcp]'`).

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from rag.models import ExtractiveChatModel
    >>> from rag.serve import RagService
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    >>> server = create_mcp_server(RagService(store, ExtractiveChatModel(), SearchRequest("defaults")))
    >>> server.name
    'rag'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from rag.chat.messages import UserMessage
from rag.citations import source_name
from rag.documents import Document
from rag.errors import InvalidRequestError, RagError
from rag.filters.builder import key
from rag.hits import hit_record
from rag.serve.service import RagService
from rag.serve.wire import ChatRequest, citations_text, source_rows

__all__ = ["MAX_TOP_K", "RESOURCE_PREFIX", "TOOL_SCHEMAS", "create_mcp_server", "source_uri"]

logger = logging.getLogger("rag.mcp")

RESOURCE_PREFIX = "rag://source/"
"""Every source file is the resource `RESOURCE_PREFIX` + its source, percent-quoted."""

MAX_TOP_K = 100
"""The most passages one tool call returns."""
_MODES = ["vector", "lexical", "hybrid"]
_RETRIEVAL: dict[str, Any] = {
    "top_k": {
        "type": "integer",
        "minimum": 0,
        "maximum": MAX_TOP_K,
        "description": "How many passages (default: the home's).",
    },
    "filter": {
        "type": "string",
        "description": "A metadata filter, e.g. \"source == 'guide.md' AND page >= 2\".",
    },
    "mode": {"type": "string", "enum": _MODES, "description": "Ranking: vector, lexical (BM25) or hybrid."},
}
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "search": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "What to look for."},
            **_RETRIEVAL,
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    "ask": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "description": "The question to answer."},
            **_RETRIEVAL,
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    "sources": {"type": "object", "properties": {}, "additionalProperties": False},
}
"""The JSON schema of each tool's arguments (what hosts show the model)."""

_DESCRIPTIONS = {
    "search": "Search the documents: the best passages for a query, each with its source, citation, "
    "score and a resource URI that opens the whole source.",
    "ask": "Answer a question from the documents, with numbered sources.",
    "sources": "List the source files the documents come from, with their passage counts and resource URIs.",
}


def source_uri(source: str) -> str:
    """The resource URI of a source file.

    Example:
        >>> source_uri("docs/guide one.md")
        'rag://source/docs%2Fguide%20one.md'
    """
    return RESOURCE_PREFIX + quote(source, safe="")


def _checked(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of tool `name`, their fields and kinds checked against its schema.

    Raises:
        InvalidRequestError: an unknown or missing field, or a value of the wrong kind (named).
    """
    schema = TOOL_SCHEMAS[name]
    fields: dict[str, Any] = schema["properties"]
    unknown = sorted(set(arguments) - set(fields))
    if unknown:
        raise InvalidRequestError(
            f"unknown argument(s) {unknown!r} for tool {name!r}; expected {sorted(fields)!r}"
        )
    for field in schema.get("required", ()):
        if field not in arguments:
            raise InvalidRequestError(f"tool {name!r} needs the argument {field!r}")
    checked: dict[str, Any] = {}
    for field, value in arguments.items():
        if value is None:
            continue
        kind = fields[field]["type"]
        if kind == "integer" and (type(value) is not int or not 0 <= value <= MAX_TOP_K):
            raise InvalidRequestError(
                f"argument {field!r} must be an integer from 0 to {MAX_TOP_K}, got {value!r:.60}"
            )
        if kind == "string" and (not isinstance(value, str) or not value.strip()):
            raise InvalidRequestError(f"argument {field!r} must be a non-empty string, got {value!r:.60}")
        choices = fields[field].get("enum")
        if choices is not None and value not in choices:
            raise InvalidRequestError(f"argument {field!r} must be one of {choices!r}, got {value!r:.60}")
        checked[field] = value
    return checked


def _with_resource(row: dict[str, Any], document: Document) -> dict[str, Any]:
    """A `rag.hits.hit_record` row with the `resource` URI of its file (none without a source)."""
    if (name := source_name(document.metadata)) is not None:
        row["resource"] = source_uri(name)
    return row


class _Tools:
    """The tool and resource handlers over one `RagService`."""

    def __init__(self, service: RagService) -> None:
        self.service = service

    async def search(self, arguments: dict[str, Any]) -> dict[str, Any]:
        documents = await self.service.search(arguments)
        passages = [_with_resource(hit_record(rank, doc), doc) for rank, doc in enumerate(documents, 1)]
        return {"query": arguments["query"], "passages": passages}

    async def ask(self, arguments: dict[str, Any]) -> dict[str, Any]:
        retrieval = {name: value for name, value in arguments.items() if name != "question"}
        request = ChatRequest("rag", [UserMessage(arguments["question"])], retrieval=retrieval)
        response = await self.service.answer(request, None)
        rows = source_rows(response.documents)
        for row, document in zip(rows, response.documents, strict=True):
            _with_resource(row, document)
        text = response.text + citations_text(response.documents, response.text)
        return {"answer": text, "sources": rows}

    async def sources(self, arguments: dict[str, Any]) -> dict[str, Any]:
        held = await anyio.to_thread.run_sync(self.held_sources)
        return {"sources": [held[name] for name in sorted(held)]}

    def held_sources(self) -> dict[str, dict[str, Any]]:
        """Each file the home holds, by its name (`source_name`): `citation` (that name), the raw
        `source` and `root`, its number of `passages` and its `resource` URI."""
        held: dict[str, dict[str, Any]] = {}
        for document in self.service.documents(keep_duplicates=True).get():
            name = source_name(document.metadata)
            if name is None:
                continue
            row = held.setdefault(
                name,
                {
                    "citation": name,
                    "source": document.metadata.get("source"),
                    "root": document.metadata.get("root"),
                    "passages": 0,
                    "resource": source_uri(name),
                },
            )
            row["passages"] += 1
        return held

    def read_source(self, uri: str) -> str:
        """The text of the source behind `uri`: its passages in order, separated by blank lines.

        Raises:
            InvalidRequestError: a URI of another scheme, or a source the home does not hold.
        """
        if not uri.startswith(RESOURCE_PREFIX):
            raise InvalidRequestError(f"unknown resource {uri!r}: expected {RESOURCE_PREFIX}<source>")
        source = unquote(uri[len(RESOURCE_PREFIX) :])
        view = self.service.documents(keep_duplicates=True)
        documents = view.get(filter=key("source") == source)
        if not documents:
            raise InvalidRequestError(f"the home holds no source {source!r}")

        def position(document: Document) -> tuple[int, int, str]:
            page, chunk = document.metadata.get("page"), document.metadata.get("chunk_index")
            return (
                page if isinstance(page, int) else 0,
                chunk if isinstance(chunk, int) else 0,
                document.id,
            )

        return "\n\n".join(document.text for document in sorted(documents, key=position))


def _result(payload: dict[str, Any], text: str | None = None) -> types.CallToolResult:
    shown = text if text is not None else json.dumps(payload, ensure_ascii=False, indent=1)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=shown)], structured_content=payload
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def create_mcp_server(service: RagService, *, name: str = "rag") -> Server[Any]:
    """The MCP server (the SDK's low-level `Server`) answering from `service`.

    Run it with `run_stdio(server)` or serve `streamable_http_app(server, ...)` (see `rag.mcp.http`).
    """
    tools = _Tools(service)
    handlers = {"search": tools.search, "ask": tools.ask, "sources": tools.sources}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = [
            types.Tool(name=tool, description=_DESCRIPTIONS[tool], input_schema=TOOL_SCHEMAS[tool])
            for tool in handlers
        ]
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return _error(f"there is no tool named {params.name!r}; tools: {sorted(handlers)!r}")
        try:
            payload = await handler(_checked(params.name, params.arguments or {}))
        except RagError as exc:
            return _error(f"{params.name}: {exc}")
        except Exception as exc:  # a tool error the host shows; the server keeps serving
            logger.exception("tool %r failed", params.name)
            return _error(f"{params.name} failed: {type(exc).__name__}")
        return _result(payload, payload["answer"] if params.name == "ask" else None)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        held = await anyio.to_thread.run_sync(tools.held_sources)
        resources = [
            types.Resource(uri=source_uri(source), name=source, mime_type="text/plain")
            for source in sorted(held)
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(tools.read_source, uri)
        except RagError as exc:
            # An error reply naming the resource; the SDK would log and hide any other exception.
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from exc
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
        ]
        return types.ReadResourceResult(contents=contents)

    return Server(
        name,
        instructions="Search and ask the documents of a rag-advisors home; open cited sources as resources.",
        get_tool_input_schema=TOOL_SCHEMAS.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
