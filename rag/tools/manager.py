"""`ToolCallingManager`: checks and runs the tool calls of one model reply, one `ToolMessage` per call.

Whatever goes wrong is told to the model in the tool result, so it can correct itself: an unknown tool name,
arguments that are not JSON (with the parser's position), arguments that fail the schema (one line per
problem), or an exception from the tool. `raise_on_error=True` raises `ToolError` instead for the last two.

Example:
    >>> from rag.chat import ToolCall
    >>> from rag.tools import tool
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> result = ToolCallingManager().execute([ToolCall("c1", "add", '{"a": 2, "b": 3}')], [add])
    >>> result.messages[0].text, result.messages[0].tool_call_id
    ('5', 'c1')
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

import pydantic

from rag.chat.messages import (
    AssistantMessage,
    ChatResponse,
    Message,
    Prompt,
    ToolCall,
    ToolDefinition,
    ToolMessage,
)
from rag.errors import ToolError
from rag.observability.steps import tool_span
from rag.tools.context import ToolContext
from rag.tools.decorator import Tool, result_text
from rag.tools.objects import expand_tools

__all__ = ["RunnableTool", "ToolCallingManager", "ToolExecutionResult", "ToolResultHook", "resolve_tools"]

ErrorKind: TypeAlias = Literal["unknown_tool", "malformed_arguments", "invalid_arguments", "tool_error"]
ERROR_KEY = "error"
"""ToolMessage metadata key naming what went wrong (an `ErrorKind`); absent when the call succeeded."""


class RunnableTool(Protocol):
    """What the manager runs: a `Tool`, or any object with its `definition`, `return_direct` and `invoke`
    (an MCP server's tool, `rag.mcp.McpTool`). `invoke` raises to report a failure to the model."""

    @property
    def definition(self) -> ToolDefinition: ...

    @property
    def return_direct(self) -> bool: ...

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Any: ...


def _runnable(item: object) -> bool:
    return isinstance(getattr(item, "definition", None), ToolDefinition) and callable(
        getattr(item, "invoke", None)
    )


class ToolResultHook(Protocol):
    """Rewrites the tool results of one round before they go back to the model (e.g. adds a reminder)."""

    def __call__(
        self, calls: Sequence[ToolCall], results: Sequence[ToolMessage], context: ToolContext
    ) -> Sequence[ToolMessage]: ...


@dataclass(frozen=True)
class ToolExecutionResult:
    """The tool messages of one round (in call order), the whole conversation, and whether it is the answer.

    `conversation_history` is every message so far (Spring AI's `conversationHistory()`): the prompt's
    messages, the assistant's tool-call message, then the tool results; send it back to the model as
    `Prompt(result.conversation_history, options)` to continue. `return_direct` is true only when every
    call succeeded and every tool called has `return_direct`. `malformed` lists the calls whose arguments
    were not a JSON object.
    """

    messages: tuple[ToolMessage, ...]
    return_direct: bool = False
    malformed: tuple[ToolCall, ...] = ()
    conversation_history: tuple[Message, ...] = ()

    @property
    def text(self) -> str:
        """The tool results joined by blank lines (the reply when `return_direct`)."""
        return "\n\n".join(message.text for message in self.messages)

    @property
    def errors(self) -> tuple[ToolMessage, ...]:
        """The results that report a problem instead of a tool's value."""
        return tuple(message for message in self.messages if ERROR_KEY in message.metadata)


def resolve_tools(tools: Iterable[object] | Mapping[str, object]) -> dict[str, RunnableTool | ToolDefinition]:
    """Tools by name: `Tool`s and other `RunnableTool`s, bare `ToolDefinition`s (known but not runnable),
    objects with `.definition`, the `@tool` methods of objects (see `tools_from`) and the tools of
    `ToolProvider`s.

    Raises:
        ToolError: two different tools with one name, or an object that is not a tool.
    """
    items = tools.values() if isinstance(tools, Mapping) else tools
    found: dict[str, RunnableTool | ToolDefinition] = {}
    for item in expand_tools(items):
        if isinstance(item, Tool | ToolDefinition):
            entry: RunnableTool | ToolDefinition = item
        elif _runnable(item):
            entry = item  # type: ignore[assignment]  # checked structurally by _runnable
        elif isinstance(definition := getattr(item, "definition", None), ToolDefinition):
            entry = definition
        else:
            raise ToolError(
                f"{item!r} is not a tool: expected a Tool (see @tool), a ToolDefinition, or an object with "
                "@tool methods"
            )
        name = entry.name if isinstance(entry, ToolDefinition) else entry.definition.name
        if name in found and found[name] is not entry:
            raise ToolError(
                f"two different tools are named {name!r}; tool names must be unique (tools of two MCP "
                "servers: give one McpTools(..., prefix=...))"
            )
        found[name] = entry
    return found


def _validation_lines(exc: pydantic.ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        shown = "" if error["type"] == "missing" else f" (got {error['input']!r})"
        lines.append(f"- {where}: {error['msg']}{shown}")
    return "\n".join(lines)


class ToolCallingManager:
    """Validates and executes tool calls; problems become tool results the model can act on.

    To run tools yourself (the model's tool calls handed back, as with `ToolCallAdvisor(manual=True)`),
    loop on `execute_tool_calls(prompt, response, tools)` and send `conversation_history` back.

    Args:
        raise_on_error: raise `ToolError` when arguments fail the schema or a tool raises, instead of
            answering the model. Unknown tools and arguments that are not JSON are always answered.
        hooks: `ToolResultHook`s applied in order to each round's results.

    Example:
        >>> from rag.chat import ToolCall
        >>> result = ToolCallingManager().execute([ToolCall("c9", "nope", "{}")], [])
        >>> result.messages[0].text
        "Error: there is no tool named 'nope'. Available tools: none."
    """

    def __init__(self, *, raise_on_error: bool = False, hooks: Iterable[ToolResultHook] = ()) -> None:
        self.raise_on_error = raise_on_error
        self.hooks: tuple[ToolResultHook, ...] = tuple(hooks)

    def execute(
        self,
        calls: Sequence[ToolCall],
        tools: Iterable[object] | Mapping[str, object],
        context: ToolContext | None = None,
    ) -> ToolExecutionResult:
        """Run `calls` (in order) against `tools` and return one `ToolMessage` per call, hooks applied.

        The result's `conversation_history` is `context.messages`, an assistant message holding `calls`,
        then the results; `execute_tool_calls` keeps the assistant's own text as well.

        Raises:
            ToolError: with `raise_on_error`, when arguments fail the schema or a tool raises.
        """
        known = resolve_tools(tools)
        context = context if context is not None else ToolContext()
        messages: list[ToolMessage] = []
        malformed: list[ToolCall] = []
        direct = bool(calls)
        for call in calls:
            with tool_span(call) as span:
                message = self._run_one(call, known, context)
                if span is not None and ERROR_KEY in message.metadata:
                    span.set({"error.type": str(message.metadata[ERROR_KEY])})
            if message.metadata.get(ERROR_KEY) == "malformed_arguments":
                malformed.append(call)
            entry = known.get(call.name)
            succeeded = ERROR_KEY not in message.metadata
            runs = entry is not None and not isinstance(entry, ToolDefinition)
            direct = direct and succeeded and runs and bool(getattr(entry, "return_direct", False))
            messages.append(message)
        results: Sequence[ToolMessage] = messages
        for hook in self.hooks:
            results = hook(calls, results, context)
        history: tuple[Message, ...] = context.messages
        if calls:
            history = (*history, AssistantMessage(None, tuple(calls)), *results)
        return ToolExecutionResult(tuple(results), direct, tuple(malformed), history)

    def execute_tool_calls(
        self,
        prompt: Prompt,
        response: ChatResponse,
        tools: Iterable[object] | Mapping[str, object],
        context: ToolContext | None = None,
    ) -> ToolExecutionResult:
        """Run the tool calls of the model's `response` to `prompt` (Spring AI's `executeToolCalls`).

        The result's `conversation_history` is the prompt's messages, the reply (its text and tool calls),
        then the tool results, ready for `Prompt(result.conversation_history, prompt.options)`. Tools see
        the prompt's messages as `ToolContext.messages`, with `context`'s other fields.

        Raises:
            ToolError: the response asks for no tool call; with `raise_on_error`, as `execute`.
        """
        calls = response.message.tool_calls
        if not calls:
            raise ToolError(
                f"the model's reply has no tool calls to execute (finish reason {response.finish_reason!r})"
            )
        base = context if context is not None else ToolContext()
        result = self.execute(calls, tools, dataclasses.replace(base, messages=prompt.messages))
        reply = AssistantMessage(response.message.text, calls)
        history = (*prompt.messages, reply, *result.messages)
        return dataclasses.replace(result, conversation_history=history)

    def _run_one(
        self, call: ToolCall, known: Mapping[str, RunnableTool | ToolDefinition], context: ToolContext
    ) -> ToolMessage:
        entry = known.get(call.name)
        if entry is None:
            names = ", ".join(repr(name) for name in known) or "none"
            return _error(
                call, "unknown_tool", f"there is no tool named {call.name!r}. Available tools: {names}."
            )
        if isinstance(entry, ToolDefinition):
            return _error(
                call, "unknown_tool", f"tool {call.name!r} has no implementation that can run here."
            )
        arguments = _parse_arguments(call)
        if isinstance(arguments, ToolMessage):
            return arguments
        try:
            value = entry.invoke(arguments, context)
        except pydantic.ValidationError as exc:
            detail = _validation_lines(exc)
            if self.raise_on_error:
                raise ToolError(
                    f"invalid arguments {call.arguments!r} for tool {call.name!r}:\n{detail}"
                ) from exc
            return _error(
                call,
                "invalid_arguments",
                f"invalid arguments for tool {call.name!r}:\n{detail}\n"
                "Call it again with corrected arguments.",
            )
        except Exception as exc:
            if self.raise_on_error:
                raise ToolError(
                    f"tool {call.name!r} failed on arguments {call.arguments!r}: {exc!r}"
                ) from exc
            return _error(call, "tool_error", f"tool {call.name!r} failed: {type(exc).__name__}: {exc}")
        return ToolMessage(call.id, call.name, result_text(value))

    def __repr__(self) -> str:
        return f"ToolCallingManager(raise_on_error={self.raise_on_error!r}, hooks={len(self.hooks)})"


def _error(call: ToolCall, kind: ErrorKind, text: str) -> ToolMessage:
    return ToolMessage(call.id, call.name, f"Error: {text}", metadata={ERROR_KEY: kind})


def _parse_arguments(call: ToolCall) -> dict[str, Any] | ToolMessage:
    """The call's arguments as a dict, or the tool message that tells the model why they are not one."""
    text = call.arguments.strip() or "{}"  # some servers send "" for a call without arguments
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return _error(
            call,
            "malformed_arguments",
            f"the arguments for tool {call.name!r} are not valid JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}): {call.arguments!r}. Call {call.name!r} again with a single JSON object that "
            "matches its parameters schema.",
        )
    if not isinstance(value, dict):
        return _error(
            call,
            "malformed_arguments",
            f"the arguments for tool {call.name!r} must be a JSON object, got {type(value).__name__}: "
            f"{call.arguments!r}. Call {call.name!r} again with a JSON object.",
        )
    return value
