"""`ChatClient.builder(model)`: Spring AI's builder names over the `ChatClient` constructor's arguments.

Each `default_*` method sets the constructor argument of the same name (`default_tools` -> `tools=`,
`default_tool_context` -> `tool_context=`...); `build()` calls the constructor. It exists for code ported
from Spring AI: in new code, pass the arguments to `ChatClient(...)` directly.

Example:
    >>> from rag.client import ChatClient
    >>> from rag.testing import FakeChatModel
    >>> builder = ChatClient.builder(FakeChatModel(default="ok"))
    >>> client = builder.default_tool_context({"tenant": "acme"}).build()
    >>> client.tool_context, client.prompt("hi").call().content()
    ({'tenant': 'acme'}, 'ok')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from rag.chat.messages import ChatOptions
from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate

if TYPE_CHECKING:
    from rag.advisors.base import AnyAdvisor
    from rag.params import AdvisorParams

__all__ = ["ChatClientBuilder"]

ClientT = TypeVar("ClientT")


class ChatClientBuilder(Generic[ClientT]):
    """Collects a `ChatClient`'s defaults under Spring AI's names; `build()` makes the client.

    Repeated calls add up: advisors and tools are appended, tool context entries and options merged (the
    later call wins on a clash), system text replaced.

    Example:
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> builder = ChatClient.builder(FakeChatModel(default="ok"))
        >>> builder = builder.default_system("Be {tone}.", tone="terse")
        >>> builder.build().prompt("hi").build_request().prompt.system_text
        'Be terse.'
    """

    def __init__(self, client_class: Callable[..., ClientT], model: ChatModel) -> None:
        # The class is handed in rather than imported, so this module and rag.client.client do not
        # import each other (not even for type checking).
        self._client_class = client_class
        self._model = model
        self._system: str | PromptTemplate | None = None
        self._system_params: dict[str, Any] = {}
        self._advisors: list[AnyAdvisor | AdvisorParams] = []
        self._options: ChatOptions | None = None
        self._tools: list[object] = []
        self._tool_context: dict[str, Any] = {}

    def default_system(self, text: str | PromptTemplate, /, **params: Any) -> Self:
        """The default system text (`system=`); a template when `params` are given."""
        self._system, self._system_params = text, dict(params)
        return self

    def default_advisors(self, *advisors: AnyAdvisor | AdvisorParams) -> Self:
        """Advisors every request runs, and default `Params` for them (`advisors=`)."""
        self._advisors.extend(advisors)
        return self

    def default_options(self, options: ChatOptions) -> Self:
        """Default options (`options=`), merged over earlier ones."""
        self._options = options if self._options is None else options.merge(self._options)
        return self

    def default_tools(self, *tools: object) -> Self:
        """Tools every request offers (`tools=`): tools, or objects and classes with `@tool` methods."""
        self._tools.extend(tools)
        return self

    def default_tool_context(self, values: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """Tool context entries for every request (`tool_context=`); a request's own entries win."""
        self._tool_context.update({**(values or {}), **more})
        return self

    def build(self) -> ClientT:
        """The client, checked as the constructor checks it.

        Raises:
            InvalidRequestError: a tool that is not a tool, a bad advisor order or tool context key.
            ToolError: a class given to `default_tools` whose `@tool` methods take `self`.
        """
        return self._client_class(
            self._model,
            system=self._system,
            system_params=self._system_params,
            advisors=self._advisors,
            options=self._options,
            tools=self._tools,
            tool_context=self._tool_context,
        )

    def __repr__(self) -> str:
        return (
            f"ChatClientBuilder(model={self._model!r}, advisors={len(self._advisors)}, "
            f"tools={len(self._tools)})"
        )
