"""Tool-call arguments that are not JSON: a streamed reply is handled exactly like a whole one.

The server answers over the real wire, once as one completion and once as an event stream whose argument
pieces arrive in separate deltas; the tool message sent back to the model, the retry and the bound on
malformed replies must be the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rag.advisors.tool_call import ToolCallAdvisor
from rag.client import ChatClient
from rag.errors import ToolError
from rag.models.openai import OpenAIChatModel
from rag.tools import tool
from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse, stream_reply


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"18 C in {city}"


def asks(arguments: Any, *, stream: bool) -> Reply:
    """A reply asking for `get_weather` with `arguments` (streamed: text cut into three deltas).

    Arguments that are not a string are sent as a JSON value, as some compatible servers do.
    """
    if not stream:
        call = {
            "id": "call_m",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
        return Reply(json=completion(None, tool_calls=[call], finish_reason="tool_calls"))
    if isinstance(arguments, str):
        third = max(1, len(arguments) // 3)
        pieces = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
    else:
        pieces = [arguments]
    first = {"index": 0, "id": "call_m", "type": "function", "function": {"name": "get_weather"}}
    deltas = [chunk(tool_calls=[first])]
    deltas += [chunk(tool_calls=[{"index": 0, "function": {"arguments": p}}]) for p in pieces if p != ""]
    return stream_reply(sse([*deltas, chunk(finish_reason="tool_calls")]), cuts=[9, 40, 77])


def says(text: str, *, stream: bool) -> Reply:
    if not stream:
        return Reply(json=completion(text))
    return stream_reply(sse([chunk(text), chunk(finish_reason="stop")]))


@pytest.fixture
def model(openai_server: OpenAIServer) -> Iterator[OpenAIChatModel]:
    with OpenAIChatModel(base_url=openai_server.base_url, api_key="k", model="m", max_retries=0) as chat:
        yield chat


def ask(model: OpenAIChatModel, *, stream: bool, **options: Any) -> str:
    client = ChatClient(model, tools=[get_weather], advisors=[ToolCallAdvisor(**options)])
    if stream:
        return "".join(client.prompt("Weather?").stream().content())
    return client.prompt("Weather?").call().content() or ""


@pytest.mark.parametrize(
    "arguments", ['{"city": "Paris"', "city=Paris", '"Paris"', '{"city": "Paris"}}', [], 0, False, ["Paris"]]
)
def test_malformed_arguments_get_the_same_answer_streamed_or_not(
    openai_server: OpenAIServer, model: OpenAIChatModel, arguments: Any
) -> None:
    # A falsy JSON value ([], 0, false) used to be dropped from a stream and the call run with {}.
    answers = []
    for stream in (False, True):
        openai_server.reset()
        openai_server.enqueue(asks(arguments, stream=stream), says("Sunny.", stream=stream))
        assert ask(model, stream=stream) == "Sunny."
        tool_message = openai_server.requests[1].json["messages"][-1]
        assert tool_message["tool_call_id"] == "call_m"
        assert tool_message["content"].startswith("Error: the arguments for tool 'get_weather' ")
        answers.append(tool_message)
    assert answers[0] == answers[1]


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_arguments_are_bounded_streamed_or_not(
    openai_server: OpenAIServer, model: OpenAIChatModel, stream: bool
) -> None:
    openai_server.default = asks('{"city": "Par', stream=stream)
    with pytest.raises(
        ToolError, match=r"not a JSON object 2 times; last: 'get_weather' with '\{\"city\": \"Par'"
    ):
        ask(model, stream=stream, max_malformed_retries=1)
    assert len(openai_server.requests) == 2
