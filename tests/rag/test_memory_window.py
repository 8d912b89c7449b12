"""MessageWindowChatMemory and apply_window: what a window keeps, on both repositories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.chat import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from rag.errors import InvalidRequestError
from rag.memory import (
    ChatMemory,
    InMemoryChatMemoryRepository,
    MessageWindowChatMemory,
    SQLiteChatMemoryRepository,
    apply_window,
)


@pytest.fixture(params=["in_memory", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MessageWindowChatMemory]:
    if request.param == "in_memory":
        yield MessageWindowChatMemory(InMemoryChatMemoryRepository(), max_messages=4)
        return
    repo = SQLiteChatMemoryRepository(tmp_path / "memory.sqlite")
    yield MessageWindowChatMemory(repo, max_messages=4)
    repo.close()


def texts(messages: list[Message]) -> list[str | None]:
    return [getattr(m, "text", None) for m in messages]


def test_keeps_the_newest_messages(memory: MessageWindowChatMemory) -> None:
    for i in range(6):
        memory.add("c", UserMessage(f"u{i}"))
    assert texts(memory.get("c")) == ["u2", "u3", "u4", "u5"]
    assert isinstance(memory, ChatMemory)


def test_system_message_is_never_evicted_and_a_new_one_replaces_it(memory: MessageWindowChatMemory) -> None:
    memory.add("c", [SystemMessage("old rules"), UserMessage("u0")])
    for i in range(1, 8):
        memory.add("c", UserMessage(f"u{i}"))
    assert texts(memory.get("c")) == ["old rules", "u5", "u6", "u7"]
    memory.add("c", SystemMessage("new rules"))
    assert texts(memory.get("c")) == ["new rules", "u5", "u6", "u7"]
    assert sum(isinstance(m, SystemMessage) for m in memory.get("c")) == 1


def test_tool_results_are_never_separated_from_their_call(memory: MessageWindowChatMemory) -> None:
    call = AssistantMessage(None, (ToolCall("t1", "clock"), ToolCall("t2", "weather", '{"city": "Sofia"}')))
    memory.add(
        "c",
        [UserMessage("u0"), call, ToolMessage("t1", "clock", "noon"), ToolMessage("t2", "weather", "sun")],
    )
    memory.add("c", [AssistantMessage("It is noon and sunny."), UserMessage("u1")])
    kept = memory.get("c")
    # Six messages do not fit in four; keeping the newest four would orphan the result 'sun'.
    assert texts(kept) == ["It is noon and sunny.", "u1"]
    assert not any(isinstance(m, ToolMessage) for m in kept)


def test_conversations_are_separate_and_can_be_cleared(memory: MessageWindowChatMemory) -> None:
    memory.add("a", UserMessage("for a"))
    memory.add("b", UserMessage("for b"))
    assert texts(memory.get("a")) == ["for a"] and texts(memory.get("b")) == ["for b"]
    assert memory.conversation_ids() == ["a", "b"]
    memory.clear("a")
    assert memory.get("a") == [] and memory.conversation_ids() == ["b"]
    memory.add("a", [])  # nothing to add: nothing written
    assert memory.conversation_ids() == ["b"]


@pytest.mark.parametrize("bad", ["", None, 3, "bad\ud800id"])
def test_bad_conversation_ids_are_refused(memory: MessageWindowChatMemory, bad: object) -> None:
    with pytest.raises(InvalidRequestError, match="conversation id"):
        memory.add(bad, UserMessage("x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="conversation id"):
        memory.get(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_max_messages_must_be_positive(bad: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"max_messages must be an integer >= 1, got"):
        MessageWindowChatMemory(max_messages=bad)  # type: ignore[arg-type]


def test_non_messages_are_refused(memory: MessageWindowChatMemory) -> None:
    with pytest.raises(InvalidRequestError, match="chat messages, got 'plain text'"):
        memory.add("c", ["plain text"])  # type: ignore[list-item]


_kinds = st.sampled_from(["system", "user", "assistant", "call", "tool"])


def _build(kinds: list[str]) -> list[Message]:
    messages: list[Message] = []
    for i, kind in enumerate(kinds):
        if kind == "system":
            messages.append(SystemMessage(f"s{i}"))
        elif kind == "user":
            messages.append(UserMessage(f"u{i}"))
        elif kind == "assistant":
            messages.append(AssistantMessage(f"a{i}"))
        elif kind == "call":
            messages.append(AssistantMessage(None, (ToolCall(f"c{i}", "f"),)))
        else:
            messages.append(ToolMessage(f"c{i}", "f", f"r{i}"))
    return messages


@given(st.lists(_kinds, max_size=30), st.integers(1, 12))
def test_window_invariants(kinds: list[str], limit: int) -> None:
    messages = _build(kinds)
    window = apply_window(messages, limit)
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    others = [m for m in messages if not isinstance(m, SystemMessage)]
    # At most `limit` messages, unless the only thing kept is the system message itself.
    assert len(window) <= max(limit, 1)
    if systems:
        assert window[0] == systems[-1]
        assert sum(isinstance(m, SystemMessage) for m in window) == 1
    rest = window[1:] if systems else window
    # The rest is a suffix of the non-system messages, and it never starts with a tool result.
    assert rest == others[len(others) - len(rest) :]
    assert not rest or not isinstance(rest[0], ToolMessage)
    # It is the longest such suffix that fits.
    room = limit - (1 if systems else 0)
    if len(rest) < min(room, len(others)):
        assert isinstance(others[len(others) - len(rest) - 1], ToolMessage) or len(rest) + 1 > room
