"""`ToolContext`: what a tool may know about the request that called it, and the tool context keys.

A tool asks for it by declaring a parameter typed `ToolContext`; the parameter is injected and never shown
to the model. The tool context proper (Spring AI's `toolContext`: the client's `tool_context=` merged with
the request's `.tool_context(...)`) is `values`; `get` looks there first, then in the request's context.

Example:
    >>> ctx = ToolContext({"conversation_id": "c1", "user": "ada"}, values={"tenant": "acme"})
    >>> ctx.conversation_id, ctx.get("user"), ctx.get("tenant"), ctx.get("missing", 0)
    ('c1', 'ada', 'acme', 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.chat.messages import Message

__all__ = [
    "TOOL_CONTEXT",
    "TOOL_MANUAL",
    "TOOL_MESSAGES",
    "TOOL_ROUNDS",
    "ToolContext",
]

TOOL_CONTEXT = "rag.tool_context"
"""Context key: the tool context of the request (the client's default merged with the request's own,
the request's keys winning); tools read it as `ToolContext.values`."""

TOOL_MANUAL = "rag.tools.manual"
"""Context key: when true, the `ToolCallAdvisor` returns tool calls to the caller instead of running them."""
TOOL_ROUNDS = "rag.tool_rounds"
"""Context and response metadata key: how many tool rounds the request took."""
TOOL_MESSAGES = "rag.tool_messages"
"""Context and response metadata key: the assistant tool-call and tool-result messages of the request, in
order (what chat memory stores to keep the exchange)."""


@dataclass(frozen=True)
class ToolContext:
    """The request's context, the conversation so far, the tool round (1 for the first), the tool context.

    `context` is the request's own dict (shared by every advisor of the call), so a tool can leave data
    there for advisors and the caller. `values` is the tool context the application gave (user, tenant,
    credentials...): the repr shows its keys only, never its values.

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
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def conversation_id(self) -> str | None:
        """The request's conversation id, if the caller gave one."""
        value = self.context.get("conversation_id")
        return None if value is None else str(value)

    def get(self, key: str, default: Any = None) -> Any:
        """A tool context entry; failing that, a request context entry; failing both, `default`."""
        if key in self.values:
            return self.values[key]
        return self.context.get(key, default)

    def __repr__(self) -> str:
        # Tool context values are often credentials or personal data: keys only.
        return (
            f"ToolContext(values={sorted(self.values)!r}, context={sorted(self.context)!r}, "
            f"round={self.round!r}, messages={len(self.messages)})"
        )
