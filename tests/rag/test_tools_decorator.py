"""`@tool`: names, descriptions, JSON schemas, injected context, methods, async functions."""

from __future__ import annotations

import asyncio
import datetime as dt
from enum import StrEnum
from typing import Annotated, Literal

import pydantic
import pytest
from pydantic import BaseModel, Field

from rag.chat import ToolDefinition
from rag.errors import ToolError
from rag.tools import Tool, ToolContext, tool
from rag.tools.decorator import result_text
from rag.tools.schema import parse_docstring


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=1)


class Unit(StrEnum):
    C = "celsius"
    F = "fahrenheit"


@tool
def get_weather(
    city: Annotated[str, "City name, e.g. Paris"],
    unit: Unit = Unit.C,
    days: int = 1,
) -> str:
    """Current weather in a city.

    Longer explanation the model also reads.

    Args:
        city: ignored, the Annotated text wins.
        days: how many days to forecast,
            counting today.
    """
    return f"{city}:{unit.value}:{days}"


def test_definition_name_description_and_schema() -> None:
    definition = get_weather.definition
    assert isinstance(definition, ToolDefinition)
    assert definition.name == "get_weather"
    assert definition.description == "Current weather in a city.\n\nLonger explanation the model also reads."
    params = definition.parameters
    assert params["type"] == "object"
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    assert params["properties"]["city"] == {"type": "string", "description": "City name, e.g. Paris"}
    assert params["properties"]["days"] == {
        "type": "integer",
        "default": 1,
        "description": "how many days to forecast, counting today.",
    }
    assert params["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert "title" not in params


def test_invoke_validates_and_converts_arguments() -> None:
    assert get_weather.invoke({"city": "Oslo", "unit": "fahrenheit", "days": "3"}) == "Oslo:fahrenheit:3"
    with pytest.raises(pydantic.ValidationError) as info:
        get_weather.invoke({"unit": "kelvin", "extra": 1})
    locations = {error["loc"][0] for error in info.value.errors()}
    assert locations == {"city", "unit", "extra"}


def test_calling_the_tool_calls_the_function() -> None:
    assert get_weather("Rome", Unit.F) == "Rome:fahrenheit:1"


def test_overrides_and_return_direct() -> None:
    def lookup(key: str) -> str:
        return key

    made = tool(lookup, name="kv_lookup", description="Look a key up.", return_direct=True)
    assert (made.name, made.description, made.return_direct) == ("kv_lookup", "Look a key up.", True)


def test_context_parameter_is_injected_and_hidden() -> None:
    @tool
    def whoami(greeting: str, ctx: ToolContext) -> str:
        """Greets the caller."""
        return f"{greeting} {ctx.get('user')} ({ctx.conversation_id}, round {ctx.round})"

    assert list(whoami.definition.parameters["properties"]) == ["greeting"]
    context = ToolContext({"user": "ada", "conversation_id": "c7"}, round=2)
    assert whoami.invoke({"greeting": "hi"}, context) == "hi ada (c7, round 2)"
    with pytest.raises(pydantic.ValidationError):
        whoami.invoke({"greeting": "hi", "ctx": "forged"}, context)  # the model cannot send the context


def test_pydantic_models_literals_and_field_descriptions() -> None:
    @tool
    def order(
        items: list[Item], mode: Literal["fast", "cheap"], note: Annotated[str, Field(max_length=5)] = ""
    ) -> int:
        """Place an order."""
        return sum(item.quantity for item in items)

    params = order.definition.parameters
    assert params["properties"]["mode"]["enum"] == ["fast", "cheap"]
    assert params["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert (
        order.invoke({"items": [{"sku": "a", "quantity": 2}, {"sku": "b", "quantity": 3}], "mode": "fast"})
        == 5
    )
    with pytest.raises(pydantic.ValidationError):
        order.invoke({"items": [{"sku": "a", "quantity": 0}], "mode": "fast"})


def test_methods_become_tools_per_instance() -> None:
    class Counter:
        def __init__(self, start: int) -> None:
            self.value = start

        @tool
        def bump(self, by: int = 1) -> int:
            """Increase the counter."""
            self.value += by
            return self.value

    one, two = Counter(10), Counter(100)
    assert list(Counter.bump.definition.parameters["properties"]) == ["by"]
    assert one.bump.invoke({"by": 5}) == 15
    assert two.bump.invoke({}) == 101
    assert one.bump is one.bump  # built once per instance
    assert isinstance(one.bump, Tool)
    bound = tool(Counter(0).bump.func)  # a bound method given directly works too
    assert list(bound.definition.parameters["properties"]) == ["by"]


def test_async_functions_run_with_and_without_a_running_loop() -> None:
    @tool
    async def slow_double(x: int) -> int:
        """Double a number, slowly."""
        await asyncio.sleep(0)
        return 2 * x

    assert slow_double.is_async
    assert slow_double.invoke({"x": 4}) == 8

    async def inside_a_loop() -> int:
        return int(slow_double.invoke({"x": 5}))

    assert asyncio.run(inside_a_loop()) == 10


def test_definition_errors_name_the_offender() -> None:
    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        """Untyped."""
        return str(x)

    def variadic(*names: str) -> str:
        """Variadic."""
        return ""

    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ToolError, match=r"parameter 'x' of tool 'untyped' has no type hint"):
        tool(untyped)
    with pytest.raises(ToolError, match=r"tool 'variadic' has a variadic parameter 'names'"):
        tool(variadic)
    with pytest.raises(ToolError, match=r"tool 'undocumented' has no description"):
        tool(undocumented)

    def local_type(x: LocalOnly) -> int:  # type: ignore[name-defined]  # noqa: F821
        """Refers to a type that does not resolve."""
        return 0

    with pytest.raises(ToolError, match=r"cannot read the type hints of tool 'local_type': name 'LocalOnly'"):
        tool(local_type)
    with pytest.raises(ToolError, match=r"tool name 'get weather' is not allowed: use 1-64 letters"):
        tool(get_weather.func, name="get weather")
    with pytest.raises(ToolError, match=r"a tool needs a callable, got 42"):
        Tool(42)  # type: ignore[arg-type]


def test_result_text_strings_json_and_fallback() -> None:
    class Point(BaseModel):
        x: int

    assert result_text("plain") == "plain"
    assert result_text({"a": [1, 2]}) == '{"a":[1,2]}'
    assert result_text(Point(x=1)) == '{"x":1}'
    assert result_text(dt.date(2024, 1, 2)) == '"2024-01-02"'
    assert result_text(None) == "null"
    assert result_text(object.__new__(type("Odd", (), {}))).startswith("<")


def test_parse_docstring_sections() -> None:
    summary, args = parse_docstring(
        """Summary line.

        Args:
            a (int): first
                and more.
            **rest: extra.

        Returns:
            a: not an argument.
        """
    )
    assert summary == "Summary line."
    assert args == {"a": "first and more.", "rest": "extra."}
