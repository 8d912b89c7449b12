"""`ToolContext`: what a tool may know about the request that called it, and the tool context keys.

A tool asks for it by declaring a parameter typed `ToolContext`; the parameter is injected and never shown
to the model.

Example:
    >>> ctx = ToolContext({"conversation_id": "c1", "user": "ada"})
    >>> ctx.conversation_id, ctx.get("user"), ctx.get("missing", 0)
    ('c1', 'ada', 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.chat.messages import Message

__all__ = [
    "TOOL_MANUAL",
    "TOOL_MESSAGES",
    "TOOL_ROUNDS",
    "ToolContext",
]

TOOL_MANUAL = "rag.tools.manual"
"""Context key: when true, the `ToolCallAdvisor` returns tool calls to the caller instead of running them."""
TOOL_ROUNDS = "rag.tool_rounds"
"""Context and response metadata key: how many tool rounds the request took."""
TOOL_MESSAGES = "rag.tool_messages"
"""Context and response metadata key: the assistant tool-call and tool-result messages of the request, in
order (what chat memory stores to keep the exchange)."""


@dataclass(frozen=True)
class ToolContext:
    """The request's context dict, the conversation so far, and the tool round (1 for the first).

    `context` is the request's own dict (shared by every advisor of the call), so a tool can leave data
    there for advisors and the caller.

    Example:
        >>> from rag.tools import tool
        >>> @tool
        ... def whoami(ctx: ToolContext) -> str:
        ...     '''Who is asking.'''
        ...     return str(ctx.get("user", "anonymous"))
        >>> whoami.definition.parameters["properties"]
        {}
    """

    context: Mapping[str, Any] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    round: int = 1

    @property
    def conversation_id(self) -> str | None:
        """The request's conversation id, if the caller gave one."""
        value = self.context.get("conversation_id")
        return None if value is None else str(value)

    def get(self, key: str, default: Any = None) -> Any:
        """A context entry, or `default`."""
        return self.context.get(key, default)
