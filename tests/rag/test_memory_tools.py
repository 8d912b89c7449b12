"""Tool exchanges are remembered with the turn: call ids, results and order survive SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.chat.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from rag.client import ChatClient
from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository
from rag.testing import FakeChatModel
from rag.tools import tool


@tool
def stock(item: str) -> str:
    """How many of an item are in stock."""
    return f"7 {item}"


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_calls_and_results_are_stored_with_the_turn(tmp_path: Path, streamed: bool) -> None:
    call = ToolCall("call_9", "stock", '{"item": "valves"}')
    model = FakeChatModel([AssistantMessage(None, (call,)), "There are 7 valves.", "Noted."])
    repository = SQLiteChatMemoryRepository(tmp_path / "memory.sqlite")
    memory = MessageWindowChatMemory(repository)
    client = ChatClient(model, tools=[stock], advisors=[MessageChatMemoryAdvisor(memory)])

    spec = client.prompt("How many valves?").advisors(conversation_id="c1")
    answer = "".join(spec.stream().content()) if streamed else spec.call().content()
    assert answer == "There are 7 valves."

    reopened = MessageWindowChatMemory(SQLiteChatMemoryRepository(tmp_path / "memory.sqlite"))
    stored = reopened.get("c1")
    assert [type(m) for m in stored] == [UserMessage, AssistantMessage, ToolMessage, AssistantMessage]
    assert isinstance(stored[1], AssistantMessage) and stored[1].tool_calls == (call,)
    assert isinstance(stored[2], ToolMessage)
    assert (stored[2].tool_call_id, stored[2].text) == ("call_9", "7 valves")

    assert client.prompt("Thanks").advisors(conversation_id="c1").call().content() == "Noted."
    history = model.prompts[-1].messages
    assert [type(m) for m in history] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
        UserMessage,
    ]
    repository.close()
