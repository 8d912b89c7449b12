"""`ChatClient`: a chat model with defaults, advisors and tools, behind a fluent request spec.

Example:
    >>> from rag.testing import FakeChatModel
    >>> client = ChatClient(FakeChatModel(default="Bonjour !"))
    >>> client.prompt().system("Answer in {lang}.", lang="French").user("Say hello").call().content()
    'Bonjour !'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias, TypeVar

from rag.advisors.achain import AsyncAdvisorChain
from rag.advisors.aliases import keyword_error, translate
from rag.advisors.chain import AdvisorChain
from rag.advisors.observation import Observation, Observer
from rag.advisors.orders import sort_advisors
from rag.advisors.request import CONVERSATION_ID, TOOLS, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.media import Media
from rag.chat.messages import ChatOptions, Message, Prompt, SystemMessage, ToolDefinition, UserMessage
from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate
from rag.client.aspecs import AsyncCallResponseSpec, AsyncStreamResponseSpec
from rag.client.builder import ChatClientBuilder
from rag.client.specs import CallResponseSpec, StreamResponseSpec
from rag.errors import InvalidRequestError
from rag.observability.steps import client_span
from rag.params import AdvisorParams, ParamSet
from rag.tools.context import TOOL_CONTEXT
from rag.tools.objects import expand_tools

if TYPE_CHECKING:
    from rag.advisors.base import AnyAdvisor

__all__ = ["ChatClient", "ChatClientRequestSpec", "tool_definition"]

T = TypeVar("T")
MediaLike: TypeAlias = "Media | str | os.PathLike[str]"


def tool_definition(tool: object) -> ToolDefinition:
    """The `ToolDefinition` of a tool: the definition itself, or an object's `.definition` attribute."""
    if isinstance(tool, ToolDefinition):
        return tool
    definition = getattr(tool, "definition", None)
    if isinstance(definition, ToolDefinition):
        return definition
    raise InvalidRequestError(
        f"{tool!r} is not a tool: expected a Tool (see @tool), a ToolDefinition, or an object with "
        "@tool methods"
    )


class _Text:
    """System or user text: verbatim, or a template rendered with its parameters."""

    __slots__ = ("params", "text")

    def __init__(self, text: str | PromptTemplate, params: Mapping[str, Any]) -> None:
        if not isinstance(text, str | PromptTemplate):
            raise InvalidRequestError(f"prompt text must be a str or PromptTemplate, got {text!r}")
        self.text = text
        self.params = dict(params)

    def render(self) -> str:
        # Plain text without parameters is used as is, so braces in a question need no escaping.
        if isinstance(self.text, str) and not self.params:
            return self.text
        template = self.text if isinstance(self.text, PromptTemplate) else PromptTemplate(self.text)
        return template.render(self.params)


class ChatClient:
    """A chat model with default system text, advisors, options and tools; ask with `prompt()`.

    Options merge request > client default > model default. Advisors run by `order`, client defaults first
    on ties; the model call comes last. `tools` takes tools and objects with `@tool` methods; tools read
    `tool_context` (merged under each request's `.tool_context(...)`, whose keys win) through `ToolContext`.
    `observer` receives an `ObservationEvent` for each step.

    Example:
        >>> from rag.chat import ChatOptions
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(default="4")
        >>> client = ChatClient(model, system="Be terse.", options=ChatOptions(temperature=0))
        >>> client.prompt("2 + 2?").call().content()
        '4'
        >>> model.prompts[0].system_text, model.prompts[0].options.temperature
        ('Be terse.', 0)
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        system: str | PromptTemplate | None = None,
        system_params: Mapping[str, Any] | None = None,
        advisors: Iterable[AnyAdvisor | AdvisorParams] = (),
        options: ChatOptions | None = None,
        tools: Iterable[object] = (),
        tool_context: Mapping[str, Any] | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.model = model
        self.system = _Text(system, system_params or {}) if system is not None else None
        items = tuple(advisors)
        self.advisors: tuple[AnyAdvisor, ...] = tuple(a for a in items if not isinstance(a, AdvisorParams))
        sort_advisors(self.advisors)  # a bad order fails at construction, not at the first request
        self.params = ParamSet(a for a in items if isinstance(a, AdvisorParams))
        """Default per-request parameters; a request's own `Params` of the same class win field by field."""
        self.options = options
        self.tools: tuple[object, ...] = tuple(expand_tools(tools))
        for tool in self.tools:
            tool_definition(tool)
        self.tool_context: dict[str, Any] = _tool_context(tool_context or {})
        self.observer = observer

    @classmethod
    def builder(cls, model: ChatModel) -> ChatClientBuilder[Self]:
        """Spring AI's `ChatClient.builder(model)`: the constructor's arguments as `default_*` calls."""
        return ChatClientBuilder(cls, model)

    def prompt(
        self, prompt: str | PromptTemplate | Prompt | None = None, /, **params: Any
    ) -> ChatClientRequestSpec:
        """A new request: user text (a template when `params` are given), or a whole `Prompt`."""
        spec = ChatClientRequestSpec(self)
        if isinstance(prompt, Prompt):
            spec.messages(*prompt.messages)
            if prompt.options is not None:
                spec.options(prompt.options)
        elif prompt is not None:
            spec.user(prompt, **params)
        elif params:
            raise InvalidRequestError(f"template parameters {sorted(params)!r} given without prompt text")
        return spec

    def __repr__(self) -> str:
        return (
            f"ChatClient(model={self.model!r}, advisors={[getattr(a, 'name', a) for a in self.advisors]!r})"
        )


class ChatClientRequestSpec:
    """One request being described; each method returns the spec, so calls chain. Then `call()`/`stream()`,
    or in async code `acall()`/`astream()`/`aentity()`.

    Example:
        >>> from rag.testing import FakeChatModel
        >>> client = ChatClient(FakeChatModel(default="ok"))
        >>> from rag.advisors import QuestionAnswerAdvisor
        >>> spec = client.prompt("Summarise {topic}", topic="tides").advisors(
        ...     QuestionAnswerAdvisor.Params(top_k=2), conversation_id="c1")
        >>> request = spec.build_request()
        >>> request.user_text, request.params.get(QuestionAnswerAdvisor.Params).top_k, request.context
        ('Summarise tides', 2, {'conversation_id': 'c1'})
    """

    def __init__(self, client: ChatClient) -> None:
        self._client = client
        self._system = client.system
        self._user: _Text | None = None
        self._messages: list[Message] = []
        self._options: ChatOptions | None = None
        self._advisors: list[AnyAdvisor] = list(client.advisors)
        self._context: dict[str, Any] = {}
        self._params = client.params
        self._tools: list[object] = list(client.tools)
        self._tool_context: dict[str, Any] = {}
        self._media: list[Media] = []

    def system(self, text: str | PromptTemplate, /, **params: Any) -> Self:
        """The system text (replacing the client's default); a template when `params` are given."""
        self._system = _Text(text, params)
        return self

    def user(
        self, text: str | PromptTemplate, /, media: Iterable[MediaLike] | None = None, **params: Any
    ) -> Self:
        """The user text (a template when `params` are given) and any images for a vision model.

        `media` items are `Media`, paths of image files, or https URLs (see `media`).
        """
        self._user = _Text(text, params)
        if media is not None:
            self.media(*media)
        return self

    def media(self, *items: MediaLike) -> Self:
        """Images sent with the user text (Spring AI's `.media(...)`): `Media`, paths, or https URLs.

        Raises:
            InvalidRequestError: a file that cannot be read, too large, or not an image of a type vision
                models take (see `rag.chat.Media`).
        """
        self._media.extend(_as_media(item) for item in items)
        return self

    def messages(self, *messages: Message) -> Self:
        """Messages placed after the system text and before the user text (history, examples)."""
        self._messages.extend(messages)
        return self

    def options(self, options: ChatOptions) -> Self:
        """Options for this request; they win over the client's and the model's defaults."""
        self._options = options if self._options is None else options.merge(self._options)
        return self

    def advisors(
        self,
        *items: AnyAdvisor | AdvisorParams,
        conversation_id: str | None = None,
        params: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> Self:
        """Add advisors (after the client's) and their per-request parameters.

        `items` are advisors and typed parameter objects (`QuestionAnswerAdvisor.Params(top_k=3)`); each
        advisor reads its own `Params` class, merged field by field over the client's defaults (later
        wins). `conversation_id` is shared by every memory advisor. `params` takes Spring AI's names
        (`qa_filter_expression`, `chat_memory_conversation_id`, ...: see `rag.advisors.aliases`).

        Raises:
            InvalidRequestError: any other keyword, an unknown Spring name (both named), a bad order.
        """
        for name in unknown:
            raise keyword_error(name)
        typed, context = translate(params or {})
        advisors = [item for item in items if not isinstance(item, AdvisorParams)]
        sort_advisors(advisors)
        self._advisors.extend(advisors)
        self._params = self._params.with_params(
            [*typed, *(item for item in items if isinstance(item, AdvisorParams))]
        )
        if conversation_id is not None:
            context[CONVERSATION_ID] = conversation_id
        self._context.update(context)
        return self

    def tools(self, *tools: object) -> Self:
        """Tools the model may call: `Tool`s, `ToolDefinition`s, or objects (or classes) with `@tool` methods.

        An object contributes each of its `@tool` methods, bound to it (see `rag.tools.tools_from`).
        """
        expanded = expand_tools(tools)
        for tool in expanded:
            tool_definition(tool)
        self._tools.extend(expanded)
        return self

    def tool_context(self, values: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """Entries tools read through `ToolContext` (merged over the client's `tool_context=`; these win)."""
        self._tool_context.update(_tool_context({**(values or {}), **more}))
        return self

    def build_request(self, extra_options: ChatOptions | None = None) -> ChatClientRequest:
        """The request the chain receives: messages assembled, options merged, context filled."""
        client = self._client
        messages: list[Message] = []
        if self._system is not None:
            messages.append(SystemMessage(self._system.render()))
        messages.extend(self._messages)
        if self._user is not None:
            messages.append(UserMessage(self._user.render(), media=tuple(self._media)))
        elif self._media:
            raise InvalidRequestError("images were given without user text; give .user(text, media=[...])")
        if not any(isinstance(m, UserMessage) for m in messages) and not self._messages:
            raise InvalidRequestError(
                "the prompt has no user text and no messages; give prompt(text) or .user(text)"
            )
        request_options = extra_options.merge(self._options) if extra_options is not None else self._options
        options = (request_options or ChatOptions()).merge(client.options, client.model.default_options)
        context = dict(self._context)
        if self._tools:
            options = _with_tools(options, self._tools)
            context[TOOLS] = tuple(self._tools)
        if client.tool_context or self._tool_context:
            context[TOOL_CONTEXT] = {**client.tool_context, **self._tool_context}
        return ChatClientRequest(Prompt(messages, options), context, self._params)

    def _chain_advisors(self) -> list[AnyAdvisor]:
        advisors: list[AnyAdvisor] = list(self._advisors)
        if self._tools and not any(getattr(a, "executes_tools", False) for a in advisors):
            # Imported on first use: the tool machinery loads pydantic, which `import rag` must not.
            from rag.advisors.tool_call import ToolCallAdvisor

            advisors.append(ToolCallAdvisor())
        return advisors

    def _chain(self, request: ChatClientRequest, mode: Literal["call", "stream"]) -> AdvisorChain:
        client = self._client
        return AdvisorChain.build(
            client.model, self._chain_advisors(), mode=mode, context=request.context, observer=client.observer
        )

    def _achain(self, request: ChatClientRequest, mode: Literal["call", "stream"]) -> AsyncAdvisorChain:
        client = self._client
        return AsyncAdvisorChain.build(
            client.model, self._chain_advisors(), mode=mode, context=request.context, observer=client.observer
        )

    def _run_call(
        self, extra_context: Mapping[str, Any], extra_options: ChatOptions | None
    ) -> ChatClientResponse:
        request = self.build_request(extra_options)
        request.context.update(extra_context)
        chain = self._chain(request, "call")
        with _observed_call(chain.names, chain.observation):
            return chain.next_call(request)

    async def _arun_call(
        self, extra_context: Mapping[str, Any], extra_options: ChatOptions | None
    ) -> ChatClientResponse:
        request = self.build_request(extra_options)
        request.context.update(extra_context)
        chain = self._achain(request, "call")
        with _observed_call(chain.names, chain.observation):
            return await chain.anext_call(request)

    def call(self) -> CallResponseSpec:
        """Send the request; it runs when the result is first read (`content()`, `entity()`...)."""
        return CallResponseSpec(self._run_call)

    def stream(self) -> StreamResponseSpec:
        """Stream the reply. Advisors that cannot stream are reported now; the model runs on iteration."""
        request = self.build_request()
        chain = self._chain(request, "stream")
        return StreamResponseSpec(chain, request)

    def acall(self) -> AsyncCallResponseSpec:
        """The async `call()`: `await spec.acall()` is the response, `await spec.acall().content()` the text.

        The same advisors run in the same order; sync advisors run in worker threads (see
        `rag.advisors.achain`). Cancelling the awaiting task cancels the model request.
        """
        return AsyncCallResponseSpec(self._arun_call)

    def astream(self) -> AsyncStreamResponseSpec:
        """The async `stream()`: `async for text in spec.astream()`; advisors are checked now."""
        request = self.build_request()
        return AsyncStreamResponseSpec(self._achain(request, "stream"), request)

    async def aentity(self, output_type: type[T]) -> T:
        """`await spec.aentity(Type)`: the async `call().entity(Type)`."""
        return await self.acall().entity(output_type)


def _as_media(item: MediaLike) -> Media:
    """An image as `Media`: kept as is, fetched by the model from an https URL, or read from a file."""
    if isinstance(item, Media):
        return item
    if isinstance(item, str) and item.startswith(("https://", "http://")):
        return Media.from_url(item)
    if isinstance(item, str | os.PathLike):
        return Media.from_file(item)
    raise InvalidRequestError(f"an image must be Media, a file path or an https URL, got {item!r:.80}")


def _tool_context(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a tool context, its keys checked (tools look entries up by name)."""
    for key in values:
        if not isinstance(key, str) or not key:
            raise InvalidRequestError(f"tool context keys must be non-empty strings, got {key!r}")
    return dict(values)


def _with_tools(options: ChatOptions, tools: Iterable[object]) -> ChatOptions:
    """Options whose `tools` list the given tools first, then any already there (names kept unique)."""
    definitions = {d.name: d for d in map(tool_definition, tools)}
    for existing in options.tools or ():
        definitions.setdefault(existing.name, existing)
    return ChatOptions(tools=tuple(definitions.values())).merge(options)


@contextmanager
def _observed_call(names: Sequence[str], observation: Observation) -> Iterator[None]:
    """Time a `call()` request end to end, inside its tracing span, and record it (failed or not)."""
    span = client_span("call", names)
    token = span.attach() if span is not None else None
    start = perf_counter()
    error: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        error = exc
        raise
    finally:
        elapsed = perf_counter() - start
        if span is not None:
            span.detach(token)
        observation.record("request", "request", elapsed, error=error, span=span)
