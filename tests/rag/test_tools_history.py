"""`ToolExecutionResult.conversation_history` and the user-controlled tool loop it makes possible."""

from __future__ import annotations

import pytest

from rag.advisors.tool_call import ToolCallAdvisor
from rag.chat import (
    AssistantMessage,
    ChatOptions,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from rag.client import ChatClient
from rag.errors import ToolError
from rag.testing import FakeChatModel
from rag.tools import TodoReminderHook, ToolCallingManager, ToolContext, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(return_direct=True)
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def ask(text: str | None, *calls: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        text, tuple(ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls))
    )


def test_the_history_is_the_prompt_the_tool_call_message_and_the_results() -> None:
    prompt = Prompt(
        [SystemMessage("Be exact."), UserMessage("2+3 and 1+1?")], ChatOptions(tools=(add.definition,))
    )
    reply = FakeChatModel([ask("Let me add.", ("add", '{"a": 2, "b": 3}'), ("add", '{"a": 1, "b": 1}'))])
    response = reply.call(prompt)
    result = ToolCallingManager().execute_tool_calls(prompt, response, [add])
    assert result.conversation_history == (
        SystemMessage("Be exact."),
        UserMessage("2+3 and 1+1?"),
        AssistantMessage("Let me add.", response.message.tool_calls),
        ToolMessage("c0", "add", "5"),
        ToolMessage("c1", "add", "2"),
    )
    assert result.messages == result.conversation_history[3:] and result.return_direct is False


def test_return_direct_is_kept_beside_the_history() -> None:
    prompt = Prompt("shout hi")
    response = FakeChatModel([ask(None, ("shout", '{"text": "hi"}'))]).call(prompt)
    result = ToolCallingManager().execute_tool_calls(prompt, response, [shout])
    assert result.return_direct is True and result.text == "HI"
    assert [m.text for m in result.conversation_history] == ["shout hi", None, "HI"]


def test_execute_builds_the_history_from_the_tool_context_messages() -> None:
    calls = [ToolCall("c1", "add", '{"a": 1, "b": 2}')]
    context = ToolContext(messages=(UserMessage("1+2?"),))
    result = ToolCallingManager().execute(calls, [add], context)
    assert result.conversation_history == (
        UserMessage("1+2?"),
        AssistantMessage(None, tuple(calls)),
        ToolMessage("c1", "add", "3"),
    )
    assert ToolCallingManager().execute([], [add], context).conversation_history == (UserMessage("1+2?"),)


def test_hooks_rewrite_the_results_in_the_history_too() -> None:
    manager = ToolCallingManager(hooks=[TodoReminderHook("todo_write", every=1)])
    prompt = Prompt("1+1?")
    response = FakeChatModel([ask(None, ("add", '{"a": 1, "b": 1}'))]).call(prompt)
    result = manager.execute_tool_calls(prompt, response, [add])
    last = result.conversation_history[-1]
    assert isinstance(last, ToolMessage) and "todo_write" in last.text and last == result.messages[-1]


def test_a_reply_without_tool_calls_is_an_error() -> None:
    prompt = Prompt("hi")
    response = FakeChatModel(["hello"]).call(prompt)
    with pytest.raises(ToolError, match=r"has no tool calls to execute \(finish reason 'stop'\)"):
        ToolCallingManager().execute_tool_calls(prompt, response, [add])


def test_a_user_controlled_loop_against_the_model() -> None:
    # Spring AI's user-controlled tool execution: call, execute, send the history back, until an answer.
    model = FakeChatModel(
        [ask(None, ("add", '{"a": 2, "b": 3}')), ask("Now double it.", ("add", '{"a": 5, "b": 5}')), "10."]
    )
    options = ChatOptions(tools=(add.definition,))
    manager = ToolCallingManager()
    prompt = Prompt("(2 + 3) * 2?", options)
    response = model.call(prompt)
    rounds = 0
    while response.has_tool_calls:
        result = manager.execute_tool_calls(prompt, response, [add])
        prompt = Prompt(result.conversation_history, options)
        response = model.call(prompt)
        rounds += 1
    assert (response.text, rounds) == ("10.", 2)
    sent = model.prompts[-1].messages
    assert [type(m).__name__ for m in sent] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "ToolMessage",
    ]
    assert [m.text for m in sent] == ["(2 + 3) * 2?", None, "5", "Now double it.", "10"]
    assert model.prompts[-1].options == options


def test_a_user_controlled_loop_through_a_client_in_manual_mode() -> None:
    model = FakeChatModel([ask(None, ("add", '{"a": 20, "b": 22}')), "42."])
    client = ChatClient(model, tools=[add], advisors=[ToolCallAdvisor(manual=True)])
    manager = ToolCallingManager()
    prompt = Prompt([SystemMessage("Use tools."), UserMessage("20 + 22?")])
    response = client.prompt(prompt).call().chat_response()
    while response.has_tool_calls:  # manual mode hands the calls back instead of running them
        result = manager.execute_tool_calls(prompt, response, [add])
        prompt = Prompt(result.conversation_history)
        response = client.prompt(prompt).call().chat_response()
    assert response.text == "42."
    assert [m.text for m in model.prompts[-1].messages] == ["Use tools.", "20 + 22?", None, "42"]


def test_the_tool_advisor_keeps_the_assistant_text_in_the_exchange() -> None:
    model = FakeChatModel([ask("Adding.", ("add", '{"a": 1, "b": 2}')), "3."])
    ChatClient(model, tools=[add]).prompt("1+2?").call().content()
    assert [m.text for m in model.prompts[1].messages] == ["1+2?", "Adding.", "3"]
