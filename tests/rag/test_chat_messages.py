"""Prompts and options: how advisors rewrite prompts and how option layers merge."""

from __future__ import annotations

from rag.chat import AssistantMessage, ChatOptions, Prompt, SystemMessage, ToolCall, Usage, UserMessage


def test_prompt_from_text_is_one_user_message() -> None:
    prompt = Prompt("hello")
    assert prompt.messages == (UserMessage("hello"),) and prompt.user_text == "hello"
    assert prompt.system_text is None


def test_augment_system_replaces_the_system_message_and_keeps_the_rest() -> None:
    prompt = Prompt([SystemMessage("old"), UserMessage("q1"), AssistantMessage("a1"), UserMessage("q2")])
    changed = prompt.augment_system("new")
    assert changed.system_text == "new"
    assert [m.text for m in changed.messages] == ["new", "q1", "a1", "q2"]


def test_augment_user_rewrites_only_the_last_user_message_and_keeps_its_metadata() -> None:
    prompt = Prompt([UserMessage("q1"), AssistantMessage("a1"), UserMessage("q2", {"question": "q2"})])
    changed = prompt.augment_user("q2 with context")
    assert [m.text for m in changed.messages] == ["q1", "a1", "q2 with context"]
    assert changed.messages[-1].metadata == {"question": "q2"}
    assert prompt.user_text == "q2"


def test_options_merge_request_over_client_over_model() -> None:
    request = ChatOptions(temperature=0.1)
    client = ChatOptions(temperature=0.9, max_tokens=100)
    model = ChatOptions(model="m", max_tokens=5, top_p=0.5)
    merged = request.merge(client, model)
    assert (merged.model, merged.temperature, merged.max_tokens, merged.top_p) == ("m", 0.1, 100, 0.5)
    assert request.merge(None) == request


def test_usage_adds_up_and_tool_calls_become_a_tuple() -> None:
    assert Usage(1, 2, 3) + Usage(10, 20, 30) == Usage(11, 22, 33)
    message = AssistantMessage(None, [ToolCall("c1", "f")])  # type: ignore[arg-type]
    assert message.tool_calls == (ToolCall("c1", "f", "{}"),)
