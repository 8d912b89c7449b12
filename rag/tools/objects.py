"""Tools from an object: each method that carries `@tool` becomes a tool (Spring AI's `ToolCallbacks.from`).

Pass an instance to get its methods bound to it, or a class whose `@tool` functions need no instance
(static methods). Methods without `@tool` are left alone. This module imports no pydantic until an object
actually holds tools, so the client can use it at import time.

Example:
    >>> from rag.tools import tool
    >>> class Calculator:
    ...     @tool
    ...     def add(self, a: int, b: int) -> int:
    ...         '''Add two integers.'''
    ...         return a + b
    ...     def helper(self) -> None:
    ...         '''Not a tool: no @tool.'''
    >>> [t.name for t in tools_from(Calculator())]
    ['add']
    >>> tools_from(Calculator())[0].invoke({"a": 2, "b": 3})
    5
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rag.chat.messages import ToolDefinition
from rag.errors import ToolError

if TYPE_CHECKING:
    from rag.tools.decorator import Tool

__all__ = ["ToolProvider", "expand_tools", "is_tool", "tools_from"]


@runtime_checkable
class ToolProvider(Protocol):
    """An object that stands for several tools (Spring AI's `ToolCallbackProvider`), such as `McpTools`.

    Wherever tools are given (`ChatClient(tools=...)`, `.tools(...)`, `ToolCallAdvisor(tools=...)`), a
    provider is replaced by what `provided_tools()` returns: objects with a `definition` and an
    `invoke(arguments, context)` method.
    """

    def provided_tools(self) -> Sequence[object]: ...


def is_tool(item: object) -> bool:
    """True for a `ToolDefinition`, a `Tool`, or any object whose `.definition` is a `ToolDefinition`."""
    return isinstance(item, ToolDefinition) or isinstance(getattr(item, "definition", None), ToolDefinition)


def _describe(owner: object) -> str:
    """How an error names the object: its class, without a repr that might show the object's data."""
    if isinstance(owner, type):
        return f"class {owner.__qualname__!r}"
    return f"{type(owner).__qualname__!r} object"


def _tool_names(cls: type) -> list[str]:
    """The names of the `@tool` attributes of `cls` and its bases, subclass first, in definition order."""
    names: list[str] = []
    seen: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, raw in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)  # an override hides the base's attribute, tool or not
            # @staticmethod above @tool wraps the Tool: look inside, as attribute access would.
            inner = raw.__func__ if isinstance(raw, staticmethod) else raw
            if is_tool(inner) and not isinstance(inner, ToolDefinition):
                names.append(name)
    return names


def tools_from(owner: object) -> tuple[Tool, ...]:
    """The tools of an object's `@tool` methods, bound to it; of a class, its `@tool` static functions.

    Raises:
        ToolError: the object has no `@tool` methods, or a class was given whose `@tool` methods need an
            instance (they take `self`).
    """
    from rag.tools.decorator import Tool  # a Tool exists only once the decorator module is loaded

    cls = owner if isinstance(owner, type) else type(owner)
    found: list[Tool] = []
    for name in _tool_names(cls):
        attr = getattr(owner, name)  # binds an instance method to `owner`
        if not isinstance(attr, Tool):
            continue
        if isinstance(owner, type) and attr.needs_instance:
            raise ToolError(
                f"tool method {name!r} of {_describe(owner)} takes self: pass an instance "
                f"({cls.__qualname__}()) or make it a @staticmethod"
            )
        found.append(attr)
    if not found:
        raise ToolError(
            f"{_describe(owner)} has no @tool methods: decorate the methods the model may call with @tool"
        )
    return tuple(found)


def expand_tools(items: Iterable[object]) -> list[object]:
    """Tools kept as given; `ToolProvider`s, and objects and classes with `@tool` methods, replaced by their
    tools.

    Anything else is kept too, so the caller's own check reports it with its usual message.

    Raises:
        ToolError: a class whose `@tool` methods take `self`.
    """
    expanded: list[object] = []
    for item in items:
        if isinstance(item, ToolProvider) and not isinstance(item, type):
            expanded.extend(item.provided_tools())
        elif is_tool(item) or not _tool_names(item if isinstance(item, type) else type(item)):
            expanded.append(item)
        else:
            expanded.extend(tools_from(item))
    return expanded
