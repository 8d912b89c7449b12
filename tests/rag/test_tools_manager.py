"""`ToolCallingManager` and the todo reminder hook: every failure is answered precisely or raised."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag.chat import ToolCall, ToolDefinition, ToolMessage
from rag.errors import ToolError
from rag.tools import TodoReminderHook, ToolCallingManager, ToolContext, tool
from rag.tools.manager import resolve_tools


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the final answer verbatim."""
    return text


@tool(return_direct=True)
def final_number(n: int) -> int:
    """Give a number verbatim."""
    return n


@tool
def todo_write(items: list[str]) -> str:
    """Replace the todo list."""
    return f"{len(items)} items"


def run(*calls: ToolCall, manager: ToolCallingManager | None = None) -> list[ToolMessage]:
    tools = [add, explode, final_answer, final_number, todo_write]
    return list((manager or ToolCallingManager()).execute(calls, tools).messages)


def test_results_keep_call_order_and_ids() -> None:
    results = run(ToolCall("a", "add", '{"a": 1, "b": 2}'), ToolCall("b", "add", '{"a": 10, "b": 20}'))
    assert [(m.tool_call_id, m.name, m.text) for m in results] == [("a", "add", "3"), ("b", "add", "30")]
    assert all(m.metadata == {} for m in results)


def test_unknown_tool_is_answered_with_the_available_names() -> None:
    [message] = run(ToolCall("x", "multiply", "{}"))
    assert message.text == (
        "Error: there is no tool named 'multiply'. Available tools: 'add', 'explode', 'final_answer', "
        "'final_number', 'todo_write'."
    )
    assert message.metadata == {"error": "unknown_tool"}


def test_definition_without_code_is_answered() -> None:
    definition = ToolDefinition("remote", "Runs elsewhere.")
    result = ToolCallingManager().execute([ToolCall("r", "remote", "{}")], [definition])
    assert result.messages[0].text == "Error: tool 'remote' has no implementation that can run here."


def test_malformed_json_names_the_position_and_the_text() -> None:
    [message] = run(ToolCall("m", "add", '{"a": 1, "b": }'))
    assert message.text == (
        "Error: the arguments for tool 'add' are not valid JSON (Expecting value at line 1 column 15): "
        "'{\"a\": 1, \"b\": }'. Call 'add' again with a single JSON object that matches its parameters "
        "schema."
    )
    assert message.metadata == {"error": "malformed_arguments"}
    [not_object] = run(ToolCall("m", "add", "[1, 2]"))
    assert "must be a JSON object, got list: '[1, 2]'" in not_object.text


def test_malformed_calls_are_listed_and_empty_arguments_mean_none() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    bad = ToolCall("m", "add", "{oops")
    result = ToolCallingManager().execute([bad, ToolCall("p", "ping", "")], [add, ping])
    assert result.malformed == (bad,)
    assert result.messages[1].text == "pong"
    assert [m.tool_call_id for m in result.errors] == ["m"]


def test_validation_errors_list_each_problem() -> None:
    [message] = run(ToolCall("v", "add", '{"a": "one", "c": 3}'))
    assert message.text == (
        "Error: invalid arguments for tool 'add':\n"
        "- a: Input should be a valid integer, unable to parse string as an integer (got 'one')\n"
        "- b: Field required\n"
        "- c: Extra inputs are not permitted (got 3)\n"
        "Call it again with corrected arguments."
    )
    assert message.metadata == {"error": "invalid_arguments"}


def test_exceptions_become_results_or_tool_errors() -> None:
    [message] = run(ToolCall("e", "explode", '{"reason": "x"}'))
    assert message.text == "Error: tool 'explode' failed: RuntimeError: boom: x"
    strict = ToolCallingManager(raise_on_error=True)
    with pytest.raises(
        ToolError, match=r"tool 'explode' failed on arguments '\{\"reason\": \"x\"\}'"
    ) as info:
        run(ToolCall("e", "explode", '{"reason": "x"}'), manager=strict)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(ToolError, match=r"invalid arguments '\{\}' for tool 'add':\n- a: Field required"):
        run(ToolCall("v", "add", "{}"), manager=strict)
    # Unknown names and malformed JSON are the model's slips, answered even in strict mode.
    assert run(ToolCall("u", "nope", "{"), manager=strict)[0].metadata == {"error": "unknown_tool"}


def test_return_direct_only_when_every_call_has_it_and_succeeds() -> None:
    manager, tools = ToolCallingManager(), [add, final_answer, final_number]
    both = manager.execute(
        [ToolCall("1", "final_answer", '{"text": "hi"}'), ToolCall("2", "final_number", '{"n": 2}')], tools
    )
    assert both.return_direct
    assert both.text == "hi\n\n2"
    mixed = manager.execute(
        [ToolCall("1", "final_answer", '{"text": "hi"}'), ToolCall("2", "add", '{"a":1,"b":1}')], tools
    )
    assert not mixed.return_direct
    failed = manager.execute([ToolCall("1", "final_number", '{"n": "x"}')], tools)
    assert not failed.return_direct
    assert not manager.execute([], tools).return_direct


def test_resolve_tools_rejects_duplicates_and_non_tools() -> None:
    def add_again(a: int) -> int:
        return a

    other_add = tool(add_again, name="add", description="Another add.")
    with pytest.raises(ToolError, match=r"two different tools are named 'add'"):
        resolve_tools([add, other_add])
    with pytest.raises(ToolError, match=r"'not a tool' is not a tool"):
        resolve_tools(["not a tool"])
    assert list(resolve_tools({"x": add, "y": add})) == ["add"]


def test_hooks_rewrite_results_in_order() -> None:
    def tag(
        calls: Sequence[ToolCall], results: Sequence[ToolMessage], context: ToolContext
    ) -> list[ToolMessage]:
        return [ToolMessage(m.tool_call_id, m.name, f"[{context.round}] {m.text}") for m in results]

    manager = ToolCallingManager(hooks=[tag, tag])
    result = manager.execute([ToolCall("1", "add", '{"a": 1, "b": 1}')], [add], ToolContext(round=4))
    assert result.messages[0].text == "[4] [4] 2"


def test_todo_reminder_after_n_rounds_without_the_todo_tool() -> None:
    hook = TodoReminderHook("todo_write", every=2)
    manager = ToolCallingManager(hooks=[hook])
    context = ToolContext({})
    search = [ToolCall("s", "add", '{"a": 1, "b": 1}')]
    texts = [manager.execute(search, [add, todo_write], context).messages[-1].text for _ in range(4)]
    reminded = [("todo_write" in text) for text in texts]
    assert reminded == [False, True, False, True]
    assert texts[1].startswith(
        "2\n\n<reminder>You have not updated your todo list in the last 2 tool rounds."
    )
    # Calling the todo tool resets the count.
    manager.execute([ToolCall("t", "todo_write", '{"items": ["a"]}')], [add, todo_write], context)
    assert "reminder" not in manager.execute(search, [add, todo_write], context).messages[-1].text
    assert "reminder" in manager.execute(search, [add, todo_write], context).messages[-1].text
