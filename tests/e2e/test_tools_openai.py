"""Tool calling end to end: `OpenAIChatModel` + `ChatClient` + `ToolCallAdvisor` against the loopback server.

Each test scripts the server's replies and then checks both what the client returned and what went over the
wire (the assistant `tool_calls` message and the `tool` messages with their ids), and how many times the
advisors before and after the `ToolCallAdvisor` ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from rag.advisors.base import BaseAdvisor
from rag.advisors.chain import AdvisorChain
from rag.advisors.request import MODEL_CALLS, ChatClientRequest
from rag.advisors.tool_call import RETURN_DIRECT, ToolCallAdvisor
from rag.chat import Prompt, UserMessage
from rag.client import ChatClient
from rag.errors import ToolError
from rag.models.openai import OpenAIChatModel
from rag.tools import TOOL_MANUAL, TOOL_ROUNDS, ToolCallingManager, tool
from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse, stream_reply

weather_calls: list[str] = []


@tool
def get_weather(city: Annotated[str, "City name"]) -> dict[str, Any]:
    """Current weather in a city."""
    weather_calls.append(city)
    return {"city": city, "temp_c": {"Paris": 18, "Oslo": 4}.get(city, 10)}


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@tool
def flaky_sensor(sensor_id: int) -> str:
    """Read a sensor that is broken."""
    raise OSError(f"sensor {sensor_id} does not answer")


@tool(return_direct=True)
def fetch_policy(name: str) -> str:
    """Return a policy document verbatim."""
    return f"POLICY {name}: refunds within 30 days."


TOOLS = [get_weather, get_time, flaky_sensor, fetch_policy]


class Counter(BaseAdvisor):
    """Counts the requests that pass through it."""

    def __init__(self, order: int, name: str) -> None:
        super().__init__(order=order, name=name)
        self.count = 0

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        self.count += 1
        return request


@pytest.fixture
def model(openai_server: OpenAIServer) -> Iterator[OpenAIChatModel]:
    with OpenAIChatModel(
        base_url=openai_server.base_url, api_key="k", model="test-model", max_retries=0
    ) as chat:
        yield chat


@pytest.fixture
def counters() -> tuple[Counter, Counter]:
    return Counter(0, "before-tools"), Counter(2**31 - 1, "after-tools")


def make_client(model: OpenAIChatModel, counters: tuple[Counter, Counter], **options: Any) -> ChatClient:
    before, after = counters
    return ChatClient(model, tools=TOOLS, advisors=[before, ToolCallAdvisor(**options), after])


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*items: tuple[str, str, str]) -> Reply:
    """A completion that asks for tools: (id, name, arguments) each."""
    return Reply(
        json=completion(None, tool_calls=[wire_call(*item) for item in items], finish_reason="tool_calls")
    )


def says(text: str) -> Reply:
    return Reply(json=completion(text))


def sent_messages(server: OpenAIServer, index: int) -> list[dict[str, Any]]:
    return list(server.requests[index].json["messages"])


def test_two_round_conversation(openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any) -> None:
    openai_server.enqueue(
        asks(("call_w", "get_weather", '{"city": "Paris"}')),
        asks(("call_t", "get_time", '{"city": "Paris"}')),
        says("18 C and noon in Paris."),
    )
    response = make_client(model, counters).prompt("Weather and time in Paris?").call().response()
    assert response.text == "18 C and noon in Paris."
    assert [c.count for c in counters] == [1, 3]
    assert response.context[MODEL_CALLS] == 3
    assert response.chat_response.metadata[TOOL_ROUNDS] == 2
    first = openai_server.requests[0].json
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get_weather",
        "get_time",
        "flaky_sensor",
        "fetch_policy",
    ]
    assert first["tools"][0]["function"]["parameters"]["properties"]["city"]["description"] == "City name"
    assert sent_messages(openai_server, 2)[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [wire_call("call_w", "get_weather", '{"city": "Paris"}')],
        },
        {"role": "tool", "tool_call_id": "call_w", "content": '{"city":"Paris","temp_c":18}'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [wire_call("call_t", "get_time", '{"city": "Paris"}')],
        },
        {"role": "tool", "tool_call_id": "call_t", "content": "12:00 in Paris"},
    ]


def test_parallel_calls_in_one_round(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    weather_calls.clear()
    openai_server.enqueue(
        asks(
            ("call_1", "get_weather", '{"city": "Paris"}'),
            ("call_2", "get_weather", '{"city": "Oslo"}'),
            ("call_3", "get_time", '{"city": "Oslo"}'),
        ),
        says("Paris is warmer."),
    )
    assert make_client(model, counters).prompt("Compare").call().content() == "Paris is warmer."
    assert weather_calls == ["Paris", "Oslo"]
    assert [c.count for c in counters] == [1, 2]
    tool_messages = [m for m in sent_messages(openai_server, 1) if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_1", '{"city":"Paris","temp_c":18}'),
        ("call_2", '{"city":"Oslo","temp_c":4}'),
        ("call_3", "12:00 in Oslo"),
    ]
    assert len(sent_messages(openai_server, 1)[1]["tool_calls"]) == 3


def test_a_tool_that_raises_is_reported_to_the_model(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    openai_server.enqueue(asks(("call_s", "flaky_sensor", '{"sensor_id": 7}')), says("The sensor is down."))
    assert make_client(model, counters).prompt("Read sensor 7").call().content() == "The sensor is down."
    reported = sent_messages(openai_server, 1)[-1]
    assert reported == {
        "role": "tool",
        "tool_call_id": "call_s",
        "content": "Error: tool 'flaky_sensor' failed: OSError: sensor 7 does not answer",
    }
    # Configured to raise instead: the caller gets a ToolError and the model is not asked again.
    openai_server.enqueue(asks(("call_s", "flaky_sensor", '{"sensor_id": 7}')))
    strict = make_client(model, counters, manager=ToolCallingManager(raise_on_error=True))
    with pytest.raises(ToolError, match=r"tool 'flaky_sensor' failed on arguments '\{\"sensor_id\": 7\}'"):
        strict.prompt("Read sensor 7").call().content()
    assert len(openai_server.requests) == 3


def test_malformed_arguments_then_a_corrected_retry(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    openai_server.enqueue(
        asks(("call_m", "get_weather", '{"city": "Paris"')),  # truncated JSON
        asks(("call_v", "get_weather", '{"town": "Paris"}')),  # valid JSON, wrong field
        asks(("call_ok", "get_weather", '{"city": "Paris"}')),
        says("18 C."),
    )
    assert make_client(model, counters).prompt("Weather?").call().content() == "18 C."
    malformed = sent_messages(openai_server, 1)[-1]
    assert malformed["tool_call_id"] == "call_m"
    assert malformed["content"] == (
        "Error: the arguments for tool 'get_weather' are not valid JSON (Expecting ',' delimiter at line 1 "
        "column 17): '{\"city\": \"Paris\"'. Call 'get_weather' again with a single JSON object that "
        "matches its parameters schema."
    )
    invalid = sent_messages(openai_server, 2)[-1]["content"]
    assert invalid == (
        "Error: invalid arguments for tool 'get_weather':\n- city: Field required\n"
        "- town: Extra inputs are not permitted (got 'Paris')\nCall it again with corrected arguments."
    )
    assert [c.count for c in counters] == [1, 4]


def test_malformed_arguments_retry_bound(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    openai_server.default = asks(("call_m", "get_weather", "city=Paris"))
    client = make_client(model, counters, max_malformed_retries=2)
    with pytest.raises(ToolError, match=r"not a JSON object 3 times; last: 'get_weather' with 'city=Paris'"):
        client.prompt("Weather?").call().content()
    assert len(openai_server.requests) == 3


def test_return_direct(openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any) -> None:
    openai_server.enqueue(asks(("call_p", "fetch_policy", '{"name": "refunds"}')))
    reply = make_client(model, counters).prompt("Refund policy?").call().chat_response()
    assert reply.text == "POLICY refunds: refunds within 30 days."
    assert reply.metadata[RETURN_DIRECT] is True
    assert len(openai_server.requests) == 1
    assert [c.count for c in counters] == [1, 1]


def test_round_bound(openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any) -> None:
    openai_server.default = asks(("call_t", "get_time", '{"city": "Rome"}'))
    with pytest.raises(ToolError, match=r"still asked for tools \['get_time'\] after 10 tool rounds"):
        make_client(model, counters).prompt("Loop forever").call().content()
    assert len(openai_server.requests) == 11
    assert [c.count for c in counters] == [1, 11]
    assert len(sent_messages(openai_server, 10)) == 1 + 2 * 10


def _streamed_tool_calls() -> bytes:
    # Two parallel calls whose names and arguments arrive in pieces, as OpenAI streams them.
    return sse(
        [
            chunk("Let me check. "),
            chunk(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            ),
            chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"ci'}}]),
            chunk(
                tool_calls=[
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"city"'},
                    }
                ]
            ),
            chunk(tool_calls=[{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]),
            chunk(tool_calls=[{"index": 1, "function": {"arguments": ': "Oslo"}'}}]),
            chunk(finish_reason="tool_calls"),
            chunk(usage=(20, 9)),
        ]
    )


def test_streaming_with_tool_call_deltas(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    final = sse([chunk("Oslo: "), chunk("4 C at noon."), chunk(finish_reason="stop"), chunk(usage=(40, 6))])
    body = _streamed_tool_calls()
    openai_server.enqueue(stream_reply(body, cuts=range(7, len(body), 23)), stream_reply(final, cuts=[5, 50]))
    chunks = list(make_client(model, counters).prompt("Oslo?").stream().chat_response())
    assert [c.text for c in chunks if c.text] == ["Let me check. ", "Oslo: ", "4 C at noon."]
    assert not any(c.has_tool_calls for c in chunks)
    assert chunks[-1].metadata[TOOL_ROUNDS] == 1
    assert [c.count for c in counters] == [1, 2]
    assistant, *results = sent_messages(openai_server, 1)[1:]
    assert assistant == {
        "role": "assistant",
        "content": "Let me check. ",
        "tool_calls": [
            wire_call("call_a", "get_weather", '{"city": "Oslo"}'),
            wire_call("call_b", "get_time", '{"city": "Oslo"}'),
        ],
    }
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        ("call_a", '{"city":"Oslo","temp_c":4}'),
        ("call_b", "12:00 in Oslo"),
    ]
    assert openai_server.requests[1].json["stream"] is True


def test_streaming_plain_text_is_not_held_back(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    openai_server.enqueue(stream_reply(sse([chunk("Just "), chunk("text."), chunk(finish_reason="stop")])))
    stream = make_client(model, counters).prompt("Hi").stream().chat_response()
    first = next(stream)
    assert first.text == "Just "  # delivered before the rest of the stream is read
    rest = list(stream)
    assert [c.text for c in rest] == ["text.", ""]
    assert rest[-1].finish_reason == "stop"
    assert TOOL_ROUNDS not in rest[-1].metadata


def test_manual_mode(openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any) -> None:
    openai_server.enqueue(asks(("call_w", "get_weather", '{"city": "Paris"}')), says("18 C in Paris."))
    client = make_client(model, counters, manual=True)
    first = client.prompt("Weather in Paris?").call().chat_response()
    assert [(c.id, c.name, json.loads(c.arguments)) for c in first.message.tool_calls] == [
        ("call_w", "get_weather", {"city": "Paris"})
    ]
    assert len(openai_server.requests) == 1
    results = ToolCallingManager().execute(first.message.tool_calls, TOOLS)
    conversation = Prompt([UserMessage("Weather in Paris?"), first.message, *results.messages])
    answer = client.prompt(conversation).call().content()
    assert answer == "18 C in Paris."
    assert sent_messages(openai_server, 1)[-1] == {
        "role": "tool",
        "tool_call_id": "call_w",
        "content": '{"city":"Paris","temp_c":18}',
    }
    assert [c.count for c in counters] == [2, 2]


def test_manual_mode_for_one_request(
    openai_server: OpenAIServer, model: OpenAIChatModel, counters: Any
) -> None:
    openai_server.enqueue(asks(("call_w", "get_weather", '{"city": "Paris"}')))
    spec = make_client(model, counters).prompt("Weather?").advisors(params={TOOL_MANUAL: True})
    assert spec.call().chat_response().has_tool_calls
    assert len(openai_server.requests) == 1


def _readme_block(heading: str) -> str:
    """The first python code block after `heading` in README.md: the example users copy."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


README_EXAMPLE = _readme_block("## A tool-using assistant")


def test_readme_example(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(README_EXAMPLE.strip().splitlines()) < 20
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme")
    openai_server.enqueue(asks(("call_1", "get_weather", '{"city": "Paris"}')), says("It is 18 C and sunny."))
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(README_EXAMPLE, "README.md", "exec"), namespace)
    namespace["client"].model.close()
    assert capsys.readouterr().out == "It is 18 C and sunny.\n"
    assert sent_messages(openai_server, 1)[-1]["content"] == "18 C and sunny in Paris"
    tool_schema = openai_server.requests[0].json["tools"][0]["function"]
    assert tool_schema["parameters"]["properties"]["city"]["description"] == 'the city name, e.g. "Paris".'
