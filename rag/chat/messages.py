"""Chat messages, options, prompts and responses: the values that flow through models and advisors.

Example:
    >>> from rag.chat import Prompt, SystemMessage, UserMessage, ChatOptions
    >>> prompt = Prompt([SystemMessage("Be brief."), UserMessage("What is RAG?")], ChatOptions(temperature=0))
    >>> prompt.user_text
    'What is RAG?'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from rag.chat.media import Media
from rag.errors import InvalidRequestError

__all__ = [
    "AssistantMessage",
    "ChatOptions",
    "ChatResponse",
    "Message",
    "Prompt",
    "Role",
    "SystemMessage",
    "ToolCall",
    "ToolDefinition",
    "ToolMessage",
    "Usage",
    "UserMessage",
]


class Role(StrEnum):
    """The author of a message, spelled as on the OpenAI wire."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run a tool. `arguments` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class SystemMessage:
    """Instructions for the model."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    role: Role = field(default=Role.SYSTEM, init=False)


@dataclass(frozen=True)
class UserMessage:
    """What the user said, with any images attached (`media`, sent to vision models as content parts).

    Example:
        >>> UserMessage("What is in this picture?", media=[Media.from_url("https://example.com/a.png")]).media
        (Media(mime_type='image/png', url='https://example.com/a.png'),)
    """

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    media: tuple[Media, ...] = ()
    role: Role = field(default=Role.USER, init=False)

    def __post_init__(self) -> None:
        media = tuple(self.media)
        for item in media:
            if not isinstance(item, Media):
                raise InvalidRequestError(f"a user message's media must be Media objects, got {item!r:.80}")
        object.__setattr__(self, "media", media)


@dataclass(frozen=True)
class AssistantMessage:
    """The model's reply: text, tool calls, or both."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    role: Role = field(default=Role.ASSISTANT, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


@dataclass(frozen=True)
class ToolMessage:
    """The result of one tool call, sent back to the model."""

    tool_call_id: str
    name: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    role: Role = field(default=Role.TOOL, init=False)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


@dataclass(frozen=True)
class ToolDefinition:
    """What the model is told about a tool: its name, description and JSON schema of parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ChatOptions:
    """Model settings. None means "not set here": `merge` fills it from a lower layer.

    Example:
        >>> ChatOptions(temperature=0.2).merge(ChatOptions(model="m", temperature=1.0))
        ChatOptions(model='m', temperature=0.2, max_tokens=None, top_p=None, stop=None, tools=None, \
tool_choice=None, response_format=None, seed=None, extra=None)
    """

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    tools: tuple[ToolDefinition, ...] | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    response_format: Mapping[str, Any] | None = None
    seed: int | None = None
    extra: Mapping[str, Any] | None = None

    def merge(self, *lower: ChatOptions | None) -> ChatOptions:
        """These options over `lower` layers (highest first): request > client default > model default."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for layer in lower:
            if layer is None:
                continue
            for name, value in values.items():
                if value is None:
                    values[name] = getattr(layer, name)
        return ChatOptions(**values)


@dataclass(frozen=True)
class Usage:
    """Token counts of one or more model calls; `+` sums them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True)
class ChatResponse:
    """One model reply, or in a stream one chunk of it (`message.text` holds the new text only)."""

    message: AssistantMessage
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The reply text ("" when the model only called tools)."""
        return self.message.text or ""

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.message.tool_calls)

    def with_metadata(self, **items: Any) -> ChatResponse:
        """A copy with metadata entries added."""
        return dataclasses.replace(self, metadata={**self.metadata, **items})


@dataclass(frozen=True, init=False)
class Prompt:
    """The messages sent to a model, with options.

    Example:
        >>> p = Prompt("Hello")
        >>> p.augment_system("Answer in French.").messages[0].text
        'Answer in French.'
    """

    messages: tuple[Message, ...]
    options: ChatOptions | None

    def __init__(
        self, messages: str | Message | Iterable[Message], options: ChatOptions | None = None
    ) -> None:
        if isinstance(messages, str):
            items: tuple[Message, ...] = (UserMessage(messages),)
        elif isinstance(messages, SystemMessage | UserMessage | AssistantMessage | ToolMessage):
            items = (messages,)
        else:
            items = tuple(messages)
        object.__setattr__(self, "messages", items)
        object.__setattr__(self, "options", options)

    @property
    def system_text(self) -> str | None:
        """The text of the first system message, if any."""
        for message in self.messages:
            if isinstance(message, SystemMessage):
                return message.text
        return None

    @property
    def user_text(self) -> str:
        """The text of the last user message ("" when there is none)."""
        for message in reversed(self.messages):
            if isinstance(message, UserMessage):
                return message.text
        return ""

    def with_messages(self, messages: Sequence[Message]) -> Prompt:
        return Prompt(messages, self.options)

    def with_options(self, options: ChatOptions | None) -> Prompt:
        return Prompt(self.messages, options)

    def augment_system(self, text: str) -> Prompt:
        """Replace the system text (adding a system message first when there is none)."""
        rest = [m for m in self.messages if not isinstance(m, SystemMessage)]
        return self.with_messages([SystemMessage(text), *rest])

    def augment_user(self, text: str) -> Prompt:
        """Replace the text of the last user message."""
        messages = list(self.messages)
        for i in range(len(messages) - 1, -1, -1):
            message = messages[i]
            if isinstance(message, UserMessage):
                messages[i] = dataclasses.replace(message, text=text)
                return self.with_messages(messages)
        return self.with_messages([*messages, UserMessage(text)])
