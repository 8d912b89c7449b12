"""`ToolCallAdvisor`: runs the model's tool calls inside the advisor chain and asks the model again.

Each round re-enters the rest of the chain with `chain.copy(after=self)`, so advisors after this one (a
logger, a retry) run once per model round and advisors before it (memory, retrieval) once per user
request, and every one of them sees the tool messages. Bounds: `max_rounds` tool rounds per request and
`max_malformed_retries` replies with arguments that are not JSON; past either, `ToolError`.

Example:
    >>> from rag.chat import AssistantMessage, ToolCall
    >>> from rag.client import ChatClient
    >>> from rag.testing import FakeChatModel
    >>> from rag.tools import tool
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> ask = AssistantMessage(tool_calls=[ToolCall("c1", "add", '{"a": 2, "b": 2}')])
    >>> model = FakeChatModel([ask, "4."])
    >>> client = ChatClient(model, tools=[add], advisors=[ToolCallAdvisor()])
    >>> client.prompt("2 + 2?").call().content(), model.prompts[1].messages[-1].text
    ('4.', '4')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rag.advisors.aggregate import aggregate_chunks
from rag.advisors.orders import TOOL_CALLING_ORDER, sort_advisors
from rag.advisors.request import TOOLS, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.messages import AssistantMessage, ChatResponse, Message, Prompt
from rag.errors import InvalidRequestError, ToolError
from rag.tools.context import TOOL_CONTEXT, TOOL_MANUAL, TOOL_MESSAGES, TOOL_ROUNDS, ToolContext
from rag.tools.manager import ToolCallingManager, ToolExecutionResult

if TYPE_CHECKING:
    from rag.advisors.chain import AdvisorChain

__all__ = ["RETURN_DIRECT", "ToolCallAdvisor"]

RETURN_DIRECT = "rag.return_direct"
"""Response metadata key: true when the reply is the tool results themselves (`return_direct` tools)."""


class ToolCallAdvisor:
    """Executes tool calls between model rounds, inside the chain; or hands them to the caller (`manual`).

    Tools come from the request (`ChatClient(tools=...)`, `.tools(...)`) and from `tools=` here. In manual
    mode (`manual=True`, or the context entry `TOOL_MANUAL` for one request) the reply with its tool calls
    is returned as is; run them with `ToolCallingManager.execute` and send the results back yourself.

    Example:
        >>> from rag.tools import TodoReminderHook, ToolCallingManager
        >>> manager = ToolCallingManager(hooks=[TodoReminderHook("todo_write")])
        >>> advisor = ToolCallAdvisor(manager, max_rounds=5)
        >>> advisor.name, advisor.max_rounds
        ('ToolCallAdvisor', 5)
    """

    executes_tools = True
    """Marks an advisor that runs tool calls, so the client does not add a default `ToolCallAdvisor`."""

    def __init__(
        self,
        manager: ToolCallingManager | None = None,
        *,
        tools: Iterable[object] = (),
        max_rounds: int = 10,
        max_malformed_retries: int = 2,
        manual: bool = False,
        order: int = TOOL_CALLING_ORDER,
        name: str | None = None,
    ) -> None:
        if max_rounds < 1:
            raise InvalidRequestError(f"max_rounds must be at least 1, got {max_rounds!r}")
        if max_malformed_retries < 0:
            raise InvalidRequestError(f"max_malformed_retries must be >= 0, got {max_malformed_retries!r}")
        self.manager = manager if manager is not None else ToolCallingManager()
        self.tools: tuple[object, ...] = tuple(tools)
        self.max_rounds = max_rounds
        self.max_malformed_retries = max_malformed_retries
        self.manual = manual
        self.order = order
        self._name = name or type(self).__name__
        sort_advisors((self,))  # an out-of-range order fails here, not at the first request

    @property
    def name(self) -> str:
        return self._name

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        loop = _ToolLoop(self, request)
        response = chain.next_call(request)
        while loop.wants_tools(response.chat_response):
            outcome = loop.run_round(response.chat_response)
            if outcome.return_direct:
                return response.with_chat_response(loop.direct_reply(response.chat_response, outcome))
            response = chain.copy(after=self).next_call(loop.next_request())
        return loop.finish(response)

    def advise_stream(self, request: ChatClientRequest, chain: AdvisorChain) -> Iterator[ChatClientResponse]:
        loop = _ToolLoop(self, request)
        stream = chain.next_stream(request)
        while True:
            chunks: list[ChatResponse] = []
            for item in stream:
                chunks.append(item.chat_response)
                # Text streams straight through; only the chunk carrying tool calls is held back.
                if not loop.wants_tools(item.chat_response):
                    yield item
            reply = aggregate_chunks(chunks)
            if not loop.wants_tools(reply):
                break
            outcome = loop.run_round(reply)
            if outcome.return_direct:
                yield ChatClientResponse(loop.direct_reply(reply, outcome), request.context)
                return
            stream = chain.copy(after=self).next_stream(loop.next_request())
        if loop.rounds:
            tail = ChatResponse(AssistantMessage(None), metadata=loop.metadata())
            yield ChatClientResponse(tail, request.context)

    def __repr__(self) -> str:
        return f"ToolCallAdvisor(name={self.name!r}, order={self.order!r}, max_rounds={self.max_rounds!r})"


class _ToolLoop:
    """The state of one request's tool rounds: the growing conversation and the counters."""

    def __init__(self, advisor: ToolCallAdvisor, request: ChatClientRequest) -> None:
        self.advisor = advisor
        self.request = request
        self.tools = (*advisor.tools, *request.context.get(TOOLS, ()))
        self.manual = advisor.manual or bool(request.context.get(TOOL_MANUAL))
        self.messages: list[Message] = list(request.prompt.messages)
        self.exchanged: list[Message] = []
        self.rounds = 0
        self.malformed_rounds = 0

    def wants_tools(self, reply: ChatResponse) -> bool:
        return reply.has_tool_calls and not self.manual

    def run_round(self, reply: ChatResponse) -> ToolExecutionResult:
        """Execute the reply's tool calls and append the exchange to the conversation.

        Raises:
            ToolError: past `max_rounds`, or past `max_malformed_retries` replies with malformed arguments.
        """
        calls = reply.message.tool_calls
        advisor = self.advisor
        if self.rounds >= advisor.max_rounds:
            raise ToolError(
                f"the model still asked for tools {[c.name for c in calls]!r} after {advisor.max_rounds} "
                "tool rounds; stopping. Raise ToolCallAdvisor(max_rounds=...) if the task needs more rounds"
            )
        self.rounds += 1
        values = self.request.context.get(TOOL_CONTEXT) or {}
        context = ToolContext(self.request.context, tuple(self.messages), self.rounds, values)
        prompt = Prompt(self.messages, self.request.prompt.options)
        outcome = advisor.manager.execute_tool_calls(prompt, reply, self.tools, context)
        if outcome.malformed:
            self.malformed_rounds += 1
            if self.malformed_rounds > advisor.max_malformed_retries:
                bad = outcome.malformed[0]
                raise ToolError(
                    "the model sent tool arguments that are not a JSON object "
                    f"{self.malformed_rounds} times; "
                    f"last: {bad.name!r} with {bad.arguments!r} (max_malformed_retries="
                    f"{advisor.max_malformed_retries})"
                )
        exchange = outcome.conversation_history[len(self.messages) :]
        self.messages.extend(exchange)
        self.exchanged.extend(exchange)
        self.request.context.update(self.metadata())
        return outcome

    def next_request(self) -> ChatClientRequest:
        return self.request.with_prompt(self.request.prompt.with_messages(self.messages))

    def metadata(self) -> dict[str, Any]:
        return {TOOL_ROUNDS: self.rounds, TOOL_MESSAGES: tuple(self.exchanged)}

    def direct_reply(self, reply: ChatResponse, outcome: ToolExecutionResult) -> ChatResponse:
        """The tool results as the final reply, without asking the model again."""
        metadata = {**reply.metadata, **self.metadata(), RETURN_DIRECT: True}
        message = AssistantMessage(outcome.text)
        return ChatResponse(
            message, finish_reason="stop", usage=reply.usage, model=reply.model, metadata=metadata
        )

    def finish(self, response: ChatClientResponse) -> ChatClientResponse:
        return response.with_metadata(**self.metadata()) if self.rounds else response
