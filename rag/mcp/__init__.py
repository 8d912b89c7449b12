"""The Model Context Protocol both ways: `rag mcp` serves a home; `McpTools` brings a server's tools in.

Needs the `mcp` extra (`pip install 'rag-advisors[mcp]'`); importing this package does not import it.

Example:
    >>> from rag.mcp import McpTools
    >>> McpTools.__name__
    'McpTools'
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports

if TYPE_CHECKING:
    from rag.mcp.client import McpTool, McpTools
    from rag.mcp.server import create_mcp_server

__all__ = ["McpTool", "McpTools", "create_mcp_server"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "McpTool": "rag.mcp.client",
        "McpTools": "rag.mcp.client",
        "create_mcp_server": "rag.mcp.server",
    },
)
