"""`ToolCallAdvisor` in the chain, against the scripted `FakeChatModel` (the wire is covered in tests/e2e)."""

from __future__ import annotations

from typing import Any

import pytest

from rag.advisors.base import AnyAdvisor, BaseAdvisor
from rag.advisors.chain import AdvisorChain
from rag.advisors.request import ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.advisors.tool_call import RETURN_DIRECT, ToolCallAdvisor
from rag.chat import AssistantMessage, Message, Prompt, ToolCall, ToolMessage, UserMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError, ToolError
from rag.testing import FakeChatModel
from rag.tools import (
    TOOL_MANUAL,
    TOOL_MESSAGES,
    TOOL_ROUNDS,
    TodoReminderHook,
    ToolCallingManager,
    ToolContext,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def todo_write(items: list[str]) -> str:
    """Replace the todo list."""
    return "ok"


def calls(*items: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(items))
    )


class Counting(BaseAdvisor):
    """Counts how often it runs and keeps the prompts it saw."""

    def __init__(self, order: int) -> None:
        super().__init__(order=order, name=f"counting@{order}")
        self.prompts: list[Prompt] = []
        self.responses: list[ChatClientResponse] = []

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        self.prompts.append(request.prompt)
        return request

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        self.responses.append(response)
        return response


def client_with(model: FakeChatModel, **advisor_options: Any) -> tuple[ChatClient, Counting, Counting]:
    outer, inner = Counting(0), Counting(2**31 - 1)
    advisors: list[AnyAdvisor] = [inner, ToolCallAdvisor(**advisor_options), outer]
    return ChatClient(model, tools=[add, todo_write], advisors=advisors), outer, inner


def test_two_rounds_run_outer_advisors_once_and_inner_ones_per_round() -> None:
    model = FakeChatModel(
        [calls(("add", '{"a": 1, "b": 2}')), calls(("add", '{"a": 3, "b": 4}')), "3 and 7."]
    )
    client, outer, inner = client_with(model)
    response = client.prompt("Add things").call().response()
    assert response.text == "3 and 7."
    assert (len(outer.prompts), len(inner.prompts)) == (1, 3)
    assert response.chat_response.metadata[TOOL_ROUNDS] == 2
    exchanged = response.chat_response.metadata[TOOL_MESSAGES]
    assert [type(m).__name__ for m in exchanged] == ["AssistantMessage", "ToolMessage"] * 2
    assert [m.text for m in exchanged if isinstance(m, ToolMessage)] == ["3", "7"]
    # The inner advisor saw the tool exchange grow; the outer one only the user's request.
    assert [len(p.messages) for p in inner.prompts] == [1, 3, 5]
    assert inner.prompts[2].messages[1:] == exchanged
    assert outer.responses[0].chat_response.metadata[TOOL_ROUNDS] == 2
    assert response.context[TOOL_ROUNDS] == 2
    assert model.prompts[1].options is not None and model.prompts[1].options.tools is not None


def test_no_tool_calls_means_no_extra_metadata() -> None:
    client, outer, inner = client_with(FakeChatModel(["plain"]))
    response = client.prompt("hi").call().response()
    assert TOOL_ROUNDS not in response.chat_response.metadata
    assert (len(outer.prompts), len(inner.prompts)) == (1, 1)


def test_round_bound_raises_a_clear_error() -> None:
    model = FakeChatModel(default=calls(("add", '{"a": 1, "b": 1}')))
    client, _, inner = client_with(model, max_rounds=3)
    with pytest.raises(ToolError, match=r"still asked for tools \['add'\] after 3 tool rounds; stopping"):
        client.prompt("loop").call().content()
    assert len(model.prompts) == 4
    assert len(inner.prompts) == 4


def test_manual_mode_returns_the_calls_and_the_manager_runs_them() -> None:
    model = FakeChatModel([calls(("add", '{"a": 2, "b": 2}')), "4"])
    client, _, _ = client_with(model, manual=True)
    first = client.prompt("2+2").call().chat_response()
    assert first.message.tool_calls == (ToolCall("call_0", "add", '{"a": 2, "b": 2}'),)
    results = ToolCallingManager().execute(first.message.tool_calls, [add])
    history: list[Message] = [UserMessage("2+2"), first.message, *results.messages]
    assert client.prompt(Prompt(history)).call().content() == "4"
    assert model.prompts[1].messages == tuple(history)


def test_manual_mode_per_request_through_the_context() -> None:
    model = FakeChatModel([calls(("add", "{}"))])
    client, _, _ = client_with(model)
    reply = client.prompt("x").advisors(params={TOOL_MANUAL: True}).call().chat_response()
    assert reply.has_tool_calls and len(model.prompts) == 1


def test_return_direct_skips_the_second_model_call() -> None:
    @tool(return_direct=True)
    def lookup(key: str) -> str:
        """Look up a stored answer."""
        return f"value of {key}"

    model = FakeChatModel([calls(("lookup", '{"key": "k"}'))])
    client = ChatClient(model, tools=[lookup], advisors=[ToolCallAdvisor()])
    reply = client.prompt("k?").call().chat_response()
    assert reply.text == "value of k"
    assert reply.metadata[RETURN_DIRECT] is True
    assert len(model.prompts) == 1


def test_malformed_arguments_are_retried_a_bounded_number_of_times() -> None:
    model = FakeChatModel([calls(("add", "{bad")), calls(("add", '{"a": 1, "b": 1}')), "2"])
    client, _, _ = client_with(model)
    assert client.prompt("1+1").call().content() == "2"
    answered = model.prompts[1].messages[-1]
    assert isinstance(answered, ToolMessage) and answered.text.startswith(
        "Error: the arguments for tool 'add'"
    )

    stubborn = FakeChatModel(default=calls(("add", "{bad")))
    client, _, _ = client_with(stubborn, max_malformed_retries=1)
    with pytest.raises(ToolError, match=r"not a JSON object 2 times; last: 'add' with '\{bad'"):
        client.prompt("1+1").call().content()
    assert len(stubborn.prompts) == 2


def test_tool_context_reaches_the_tool() -> None:
    seen: list[Any] = []

    @tool
    def whoami(ctx: Any) -> str:  # Any: not a ToolContext, so it is a normal parameter
        """Echo."""
        return "x"

    @tool
    def remember(note: str, ctx: ToolContext) -> str:
        """Remember a note."""
        seen.append((ctx.conversation_id, ctx.round, len(ctx.messages)))
        return "noted"

    model = FakeChatModel([calls(("remember", '{"note": "n"}')), "done"])
    client = ChatClient(model, tools=[remember], advisors=[ToolCallAdvisor()])
    assert client.prompt("hi").advisors(conversation_id="c1").call().content() == "done"
    assert seen == [("c1", 1, 1)]
    assert "ctx" in whoami.definition.parameters["properties"]


def test_reminder_hook_inside_the_loop() -> None:
    script = [calls(("add", '{"a": 1, "b": 1}'))] * 2 + ["done"]
    model = FakeChatModel(script)
    manager = ToolCallingManager(hooks=[TodoReminderHook("todo_write", every=2)])
    client = ChatClient(model, tools=[add, todo_write], advisors=[ToolCallAdvisor(manager)])
    client.prompt("work").call().content()
    assert "<reminder>" not in str(model.prompts[1].messages[-1].text)
    assert "call `todo_write` now" in str(model.prompts[2].messages[-1].text)


def test_stream_plain_text_passes_through_unchanged() -> None:
    plain = FakeChatModel([["Hel", "lo"]])
    expected = list(FakeChatModel([["Hel", "lo"]]).stream(Prompt("hi")))
    client = ChatClient(plain, tools=[add], advisors=[ToolCallAdvisor()])
    got = [r.chat_response for r in client.prompt("hi").stream().response()]
    assert got == expected


def test_stream_with_tool_calls_runs_the_loop() -> None:
    model = FakeChatModel([calls(("add", '{"a": 5, "b": 5}')), ["It is ", "10."]])
    client, outer, inner = client_with(model)
    chunks = list(client.prompt("5+5").stream().chat_response())
    assert "".join(c.text for c in chunks) == "It is 10."
    assert not any(c.has_tool_calls for c in chunks)
    assert chunks[-1].metadata[TOOL_ROUNDS] == 1
    assert (len(outer.prompts), len(inner.prompts)) == (1, 2)


def test_stream_manual_and_return_direct() -> None:
    model = FakeChatModel([calls(("add", "{}"))])
    client = ChatClient(model, tools=[add], advisors=[ToolCallAdvisor(manual=True)])
    assert any(c.has_tool_calls for c in client.prompt("x").stream().chat_response())

    @tool(return_direct=True)
    def lookup(key: str) -> str:
        """Look up."""
        return key.upper()

    model = FakeChatModel([calls(("lookup", '{"key": "abc"}'))])
    client = ChatClient(model, tools=[lookup], advisors=[ToolCallAdvisor()])
    assert list(client.prompt("x").stream().content()) == ["ABC"]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match=r"max_rounds must be at least 1, got 0"):
        ToolCallAdvisor(max_rounds=0)
    with pytest.raises(InvalidRequestError, match=r"max_malformed_retries must be >= 0, got -1"):
        ToolCallAdvisor(max_malformed_retries=-1)
    with pytest.raises(InvalidRequestError, match=r"outside HIGHEST_PRECEDENCE"):
        ToolCallAdvisor(order=2**40)
