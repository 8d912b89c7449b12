"""`ChatClient.builder(model)`: Spring's `default_tools` / `default_tool_context` names reach the tools."""

from __future__ import annotations

import pytest

from rag.chat import AssistantMessage, ChatOptions, ToolCall, ToolMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError, ToolError
from rag.testing import FakeChatModel
from rag.tools import ToolContext, tool


class Bank:
    def __init__(self, balances: dict[str, int]) -> None:
        self.balances = balances

    @tool
    def balance(self, ctx: ToolContext) -> str:
        """The balance of the current customer's account."""
        customer = str(ctx.get("customer"))
        return f"{customer} ({ctx.get('branch')}): {self.balances[customer]}"


def test_builder_default_tools_object_and_tool_context_reach_the_tool() -> None:
    model = FakeChatModel([AssistantMessage(tool_calls=(ToolCall("c1", "balance", "{}"),)), "Done."])
    client = (
        ChatClient.builder(model)
        .default_system("Be {tone}.", tone="brief")
        .default_options(ChatOptions(temperature=0.5))
        .default_options(ChatOptions(temperature=0.0, max_tokens=9))
        .default_tools(Bank({"ada": 10, "bob": 3}))
        .default_tool_context({"customer": "ada", "branch": "Lyon"})
        .default_tool_context(branch="Paris")
        .build()
    )
    assert client.prompt("My balance?").tool_context(customer="bob").call().content() == "Done."
    first = model.prompts[0]
    assert first.system_text == "Be brief."
    assert first.options is not None and (first.options.temperature, first.options.max_tokens) == (0.0, 9)
    assert [t.name for t in first.options.tools or ()] == ["balance"]
    assert [m.text for m in model.prompts[1].messages if isinstance(m, ToolMessage)] == ["bob (Paris): 3"]
    assert client.tool_context == {"customer": "ada", "branch": "Paris"}


def test_builder_default_advisors_run() -> None:
    from rag.advisors import SafeGuardAdvisor

    model = FakeChatModel(default="leak")
    client = (
        ChatClient.builder(model).default_advisors(SafeGuardAdvisor(["pin"], failure_response="No.")).build()
    )
    assert client.prompt("my PIN?").call().content() == "No." and model.prompts == []


def test_builder_checks_as_the_constructor_does() -> None:
    builder = ChatClient.builder(FakeChatModel())
    with pytest.raises(InvalidRequestError, match="tool context keys must be non-empty strings, got ''"):
        builder.default_tool_context({"": 1}).build()
    with pytest.raises(ToolError, match="tool method 'balance' of class 'Bank' takes self"):
        ChatClient.builder(FakeChatModel()).default_tools(Bank).build()
