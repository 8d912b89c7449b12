"""Tools: `@tool` turns typed functions into tools; `ToolCallingManager` checks and runs the model's calls.

The `ToolCallAdvisor` (in `rag.advisors.tool_call`) runs them inside the advisor chain.

Example:
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.definition.parameters["required"]
    ['a', 'b']
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.tools.context import TOOL_CONTEXT, TOOL_MANUAL, TOOL_MESSAGES, TOOL_ROUNDS, ToolContext
from rag.tools.objects import ToolProvider, tools_from

if TYPE_CHECKING:
    from rag.tools.decorator import Tool, tool
    from rag.tools.hooks import TodoReminderHook
    from rag.tools.manager import RunnableTool, ToolCallingManager, ToolExecutionResult, ToolResultHook

__all__ = [
    "TOOL_CONTEXT",
    "TOOL_MANUAL",
    "TOOL_MESSAGES",
    "TOOL_ROUNDS",
    "RunnableTool",
    "TodoReminderHook",
    "Tool",
    "ToolCallingManager",
    "ToolContext",
    "ToolExecutionResult",
    "ToolProvider",
    "ToolResultHook",
    "tool",
    "tools_from",
]

# Their modules import httpx or pydantic: loaded on first use (see rag._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "Tool": "rag.tools.decorator",
        "tool": "rag.tools.decorator",
        "TodoReminderHook": "rag.tools.hooks",
        "RunnableTool": "rag.tools.manager",
        "ToolCallingManager": "rag.tools.manager",
        "ToolExecutionResult": "rag.tools.manager",
        "ToolResultHook": "rag.tools.manager",
    },
)
