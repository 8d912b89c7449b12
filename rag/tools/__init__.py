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

from rag.tools.context import TOOL_MANUAL, TOOL_MESSAGES, TOOL_ROUNDS, ToolContext
from rag.tools.decorator import Tool, tool
from rag.tools.hooks import TodoReminderHook
from rag.tools.manager import ToolCallingManager, ToolExecutionResult, ToolResultHook

__all__ = [
    "TOOL_MANUAL",
    "TOOL_MESSAGES",
    "TOOL_ROUNDS",
    "TodoReminderHook",
    "Tool",
    "ToolCallingManager",
    "ToolContext",
    "ToolExecutionResult",
    "ToolResultHook",
    "tool",
]
