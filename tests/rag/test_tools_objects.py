"""`.tools(obj)`: the `@tool` methods of an object (or static ones of a class) become tools."""

from __future__ import annotations

import json

import pytest

from rag.advisors.tool_call import ToolCallAdvisor
from rag.chat import AssistantMessage, ToolCall, ToolMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError, ToolError
from rag.testing import FakeChatModel
from rag.tools import ToolCallingManager, ToolContext, tool, tools_from


class Shop:
    """Tools that read the instance's own state."""

    def __init__(self, stock: dict[str, int]) -> None:
        self.stock = stock

    @tool
    def count(self, item: str) -> int:
        """How many of an item are in stock.

        Args:
            item: the item's name.
        """
        return self.stock.get(item, 0)

    @tool(name="who_asks")
    def caller(self, ctx: ToolContext) -> str:
        """Who is asking."""
        return f"{ctx.get('user')} at a shop of {len(self.stock)} items"

    def restock(self, item: str) -> None:
        """Not a tool: undecorated."""
        self.stock[item] = 10


class Maths:
    """Static tools: usable from the class itself."""

    @staticmethod
    @tool
    def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    @tool
    @staticmethod
    def halve(x: float) -> float:
        """Half of x."""
        return x / 2


class NoTools:
    def hello(self) -> str:
        return "hi"


def ask(*calls: tuple[str, dict[str, object]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls))
    )


def test_decorated_methods_become_bound_tools_and_the_rest_is_ignored() -> None:
    tools = tools_from(Shop({"apple": 3}))
    assert [t.name for t in tools] == ["count", "who_asks"]
    count = tools[0]
    assert count.definition.description == "How many of an item are in stock."
    assert count.definition.parameters == {
        "additionalProperties": False,
        "properties": {"item": {"description": "the item's name.", "type": "string"}},
        "required": ["item"],
        "type": "object",
    }
    assert count.invoke({"item": "apple"}) == 3
    assert tools[1].definition.parameters["properties"] == {}  # the ToolContext stays hidden


def test_static_tools_come_from_the_class_either_decorator_order() -> None:
    tools = tools_from(Maths)
    assert [t.name for t in tools] == ["double", "halve"]
    assert tools[0].invoke({"x": 4}) == 8 and tools[1].invoke({"x": 3}) == 1.5
    assert tools[1].definition.parameters["required"] == ["x"]


def test_request_tools_accept_an_object_through_a_real_client() -> None:
    model = FakeChatModel([ask(("count", {"item": "apple"}), ("who_asks", {})), "3 apples."])
    shop = Shop({"apple": 3, "pear": 1})
    client = ChatClient(model)
    response = client.prompt("How many apples?").tools(shop).tool_context(user="ada").call().response()
    assert response.text == "3 apples."
    sent = model.prompts[0].options
    assert sent is not None and [t.name for t in sent.tools or ()] == ["count", "who_asks"]
    results = [m for m in model.prompts[1].messages if isinstance(m, ToolMessage)]
    assert [m.text for m in results] == ["3", "ada at a shop of 2 items"]


def test_client_default_tools_accept_an_object_and_a_class() -> None:
    model = FakeChatModel([ask(("double", {"x": 21}), ("count", {"item": "pear"})), "done"])
    client = ChatClient(model, tools=[Maths, Shop({"pear": 5})])
    assert client.prompt("go").call().content() == "done"
    assert [m.text for m in model.prompts[1].messages if isinstance(m, ToolMessage)] == ["42", "5"]


def test_the_tool_advisor_and_the_manager_accept_objects() -> None:
    model = FakeChatModel([ask(("double", {"x": 5})), "ten"])
    client = ChatClient(model, advisors=[ToolCallAdvisor(tools=[Maths])])
    assert client.prompt("go").call().content() == "ten"
    result = ToolCallingManager().execute([ToolCall("c1", "count", '{"item": "fig"}')], [Shop({"fig": 7})])
    assert result.messages[0].text == "7"


def test_each_instance_binds_its_own_state() -> None:
    first, second = tools_from(Shop({"fig": 1})), tools_from(Shop({"fig": 2}))
    assert first[0].invoke({"item": "fig"}) == 1 and second[0].invoke({"item": "fig"}) == 2


def test_an_object_without_tool_methods_is_an_error_naming_it() -> None:
    with pytest.raises(ToolError, match=r"^'NoTools' object has no @tool methods"):
        tools_from(NoTools())
    with pytest.raises(ToolError, match=r"^class 'NoTools' has no @tool methods"):
        tools_from(NoTools)
    with pytest.raises(InvalidRequestError, match=r"NoTools object at .* is not a tool.*@tool methods"):
        ChatClient(FakeChatModel()).prompt("q").tools(NoTools())
    with pytest.raises(ToolError, match=r"NoTools object at .* is not a tool"):
        ToolCallingManager().execute([], [NoTools()])


def test_a_class_whose_tools_take_self_asks_for_an_instance() -> None:
    with pytest.raises(ToolError, match=r"tool method 'count' of class 'Shop' takes self: pass an instance"):
        ChatClient(FakeChatModel()).prompt("q").tools(Shop)
