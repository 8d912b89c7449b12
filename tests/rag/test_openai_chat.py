"""OpenAIChatModel against a real loopback server speaking chat completions (and httpx.MockTransport)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag.chat import (
    AssistantMessage,
    ChatModel,
    ChatOptions,
    ChatResponse,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    Usage,
    UserMessage,
)
from rag.errors import InvalidRequestError, ModelError
from rag.http import RetryPolicy
from rag.models.openai import OpenAIChatModel
from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse, stream_reply

KEY = "sk-test-5ecret-key"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def model(openai_server: OpenAIServer, sleeps: list[float]) -> Iterator[OpenAIChatModel]:
    policy = RetryPolicy(max_retries=2, sleep=sleeps.append)
    with OpenAIChatModel(
        base_url=openai_server.base_url, api_key=KEY, model="test-model", timeout=2.0, retry_policy=policy
    ) as chat:
        yield chat


def texts(chunks: list[ChatResponse]) -> list[str]:
    return [c.text for c in chunks]


def test_plain_call(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    openai_server.enqueue(Reply(json=completion("Paris.", usage=(9, 2))))
    response = model.call(Prompt("Capital of France?"))
    assert isinstance(model, ChatModel)
    assert (response.text, response.finish_reason, response.model) == ("Paris.", "stop", "test-model")
    assert response.usage == Usage(9, 2, 11)
    assert response.metadata["id"] == "chatcmpl-1"
    [request] = openai_server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "Capital of France?"}],
    }


def test_request_body_follows_the_chat_completions_format(
    openai_server: OpenAIServer, openai_server_url: str
) -> None:
    weather = ToolDefinition("weather", "Weather in a city", {"type": "object", "properties": {"city": {}}})
    defaults = ChatOptions(model="default-model", temperature=1.0, max_tokens=50, stop=("END",), seed=7)
    options = ChatOptions(
        temperature=0.0,
        top_p=0.5,
        tools=(weather,),
        tool_choice="weather",
        response_format={"type": "json_object"},
        extra={"user": "u1"},
    )
    call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
    prompt = Prompt(
        [
            SystemMessage("Be brief."),
            UserMessage("Weather in Oslo?"),
            AssistantMessage(None, (call,)),
            ToolMessage("call_1", "weather", "sunny"),
            AssistantMessage("Sunny."),
        ],
        options,
    )
    openai_server.enqueue(Reply(json=completion()))
    with OpenAIChatModel(base_url=openai_server_url, api_key=KEY, default_options=defaults) as chat:
        chat.call(prompt)
    assert openai_server.requests[0].json == {
        "model": "default-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
        "temperature": 0.0,
        "max_tokens": 50,
        "top_p": 0.5,
        "seed": 7,
        "stop": ["END"],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather in a city",
                    "parameters": {"type": "object", "properties": {"city": {}}},
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "response_format": {"type": "json_object"},
        "user": "u1",
    }


@pytest.fixture
def openai_server_url(openai_server: OpenAIServer) -> str:
    return openai_server.base_url


def _stream_body() -> bytes:
    return sse(
        [
            chunk("Hé"),
            chunk("llo, wörld 😀"),
            chunk("!\n"),
            chunk(finish_reason="stop"),
            chunk(usage=(7, 4)),
        ]
    )


@pytest.mark.parametrize("step", [1, 2, 3, 5, 13])
def test_stream_split_at_awkward_byte_boundaries(
    openai_server: OpenAIServer, model: OpenAIChatModel, step: int
) -> None:
    body = _stream_body()
    openai_server.enqueue(stream_reply(body, range(step, len(body), step)))
    chunks = list(model.stream(Prompt("Say hello")))
    assert "".join(texts(chunks)) == "Héllo, wörld 😀!\n"
    final = chunks[-1]
    assert (final.text, final.finish_reason, final.usage) == ("", "stop", Usage(7, 4, 11))
    assert all(c.finish_reason is None for c in chunks[:-1])
    request = openai_server.requests[0]
    assert request.json["stream"] is True
    assert request.json["stream_options"] == {"include_usage": True}
    assert request.headers["accept"] == "text/event-stream"


def test_stream_with_crlf_lines_comments_and_multiline_events(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    # One JSON object over two data lines: the decoder joins them with a newline, which JSON allows.
    head, tail = json.dumps(chunk("a")).split(", ", 1)
    body = (
        f": keep-alive\r\n\r\ndata: {head},\r\ndata: {tail}\r\n\r\n"
        f"event: message\rdata: {json.dumps(chunk('b', finish_reason='stop'))}\r\r"
        "data: [DONE]\r\n\r\n"
    ).encode()
    # Cut between every "\r" and "\n" so the decoder must wait to know where a line ends.
    cuts = [i + 1 for i, byte in enumerate(body) if byte == ord("\r")]
    openai_server.enqueue(stream_reply(body, cuts))
    chunks = list(model.stream(Prompt("x")))
    assert texts(chunks) == ["a", "b", ""]
    assert chunks[-1].finish_reason == "stop"


def test_streamed_tool_call_deltas_are_reassembled_by_index(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    def delta(index: int, **fields: Any) -> dict[str, Any]:
        return {"index": index, **fields}

    events = [
        chunk("Let me check. "),
        chunk(
            tool_calls=[delta(0, id="call_a", type="function", function={"name": "weather", "arguments": ""})]
        ),
        chunk(
            tool_calls=[
                delta(1, id="call_b", type="function", function={"name": "time", "arguments": '{"tz'})
            ]
        ),
        chunk(tool_calls=[delta(0, function={"arguments": '{"city": '})]),
        chunk(tool_calls=[delta(1, function={"arguments": '": "CET"}'})]),
        chunk(tool_calls=[delta(0, function={"arguments": '"Oslo"}'})]),
        chunk(finish_reason="tool_calls"),
        chunk(usage=(20, 10)),
    ]
    body = sse(events)
    openai_server.enqueue(stream_reply(body, range(4, len(body), 9)))
    chunks = list(model.stream(Prompt("Weather and time?")))
    assert texts(chunks) == ["Let me check. ", ""]
    final = chunks[-1]
    assert final.message.tool_calls == (
        ToolCall("call_a", "weather", '{"city": "Oslo"}'),
        ToolCall("call_b", "time", '{"tz": "CET"}'),
    )
    assert final.finish_reason == "tool_calls"
    assert final.usage == Usage(20, 10, 30)


def test_non_streamed_tool_calls(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}
    ]
    openai_server.enqueue(Reply(json=completion(None, tool_calls=calls, finish_reason="tool_calls")))
    response = model.call(Prompt("Weather in Rome?"))
    assert response.message.tool_calls == (ToolCall("c1", "weather", '{"city": "Rome"}'),)
    assert (response.text, response.finish_reason) == ("", "tool_calls")


def test_429_with_retry_after_then_success(
    openai_server: OpenAIServer, model: OpenAIChatModel, sleeps: list[float]
) -> None:
    busy = Reply(status=429, headers={"Retry-After": "1.5"}, json={"error": {"message": "slow down"}})
    openai_server.enqueue(busy, Reply(json=completion("finally")))
    assert model.call(Prompt("q")).text == "finally"
    assert sleeps == [1.5]
    assert len(openai_server.requests) == 2


def test_a_retry_after_past_the_timeout_fails_now_with_the_servers_error(
    openai_server: OpenAIServer, model: OpenAIChatModel, sleeps: list[float]
) -> None:
    # timeout=2.0 bounds the call, retries included: waiting 3 s could only end in a timeout.
    busy = Reply(status=429, headers={"Retry-After": "3"}, json={"error": {"message": "slow down"}})
    openai_server.enqueue(busy, Reply(json=completion("too late")))
    late = r"HTTP 429 Too Many Requests: slow down \(no retry: the next one would end past the timeout\)"
    with pytest.raises(ModelError, match=late):
        model.call(Prompt("q"))
    assert sleeps == []
    assert len(openai_server.requests) == 1


def test_500_three_times_is_a_model_error_with_status_and_body(
    openai_server: OpenAIServer, model: OpenAIChatModel, sleeps: list[float]
) -> None:
    failure = Reply(status=500, json={"error": {"message": "the engine is on fire"}})
    openai_server.enqueue(failure, failure, failure)
    with pytest.raises(ModelError) as info:
        model.call(Prompt("q"))
    error = info.value
    assert error.status_code == 500
    assert error.body is not None and "the engine is on fire" in error.body
    assert "failed with HTTP 500 Internal Server Error after 3 attempts: the engine is on fire" in str(error)
    assert "'test-model'" in str(error) and "/v1/chat/completions" in str(error)
    assert len(openai_server.requests) == 3
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential backoff with jitter


def test_client_errors_are_not_retried(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    openai_server.enqueue(Reply(status=400, json={"error": {"message": "unknown model"}}))
    with pytest.raises(ModelError, match="HTTP 400 Bad Request: unknown model") as info:
        model.call(Prompt("q"))
    assert info.value.status_code == 400
    assert len(openai_server.requests) == 1


def test_long_error_bodies_are_truncated(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    openai_server.enqueue(Reply(status=404, body=b"x" * 50_000))
    with pytest.raises(ModelError) as info:
        model.call(Prompt("q"))
    assert info.value.body == "x" * 2000
    assert len(str(info.value)) < 400


def test_timeout_is_a_model_error(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(delay=5.0, json=completion()))
    with (
        OpenAIChatModel(base_url=openai_server.base_url, timeout=0.1, max_retries=0) as chat,
        pytest.raises(ModelError, match=r"failed: timed out \(ReadTimeout\)") as info,
    ):
        chat.call(Prompt("q"))
    assert info.value.status_code is None


def test_stall_mid_stream_is_a_timeout_error(openai_server: OpenAIServer) -> None:
    body = _stream_body()
    openai_server.enqueue(stream_reply(body, [20, 60], chunk_delay=0.4))
    policy = RetryPolicy(max_retries=0)
    with (
        OpenAIChatModel(base_url=openai_server.base_url, timeout=0.1, retry_policy=policy) as chat,
        pytest.raises(ModelError, match="timed out while streaming"),
    ):
        list(chat.stream(Prompt("q")))


def test_connection_dropped_before_any_reply_is_retried(
    openai_server: OpenAIServer, model: OpenAIChatModel, sleeps: list[float]
) -> None:
    openai_server.enqueue(Reply(drop=True), Reply(json=completion("second try")))
    assert model.call(Prompt("q")).text == "second try"
    assert len(sleeps) == 1


def test_connection_dropped_every_time_names_the_problem(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    openai_server.enqueue(Reply(drop=True), Reply(drop=True), Reply(drop=True))
    with pytest.raises(ModelError, match=r"failed after 3 attempts: connection error \(RemoteProtocolError"):
        model.call(Prompt("q"))


def test_connection_dropped_mid_stream_is_not_retried(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    body = _stream_body()
    first_event_end = body.index(b"\n\n") + 2
    openai_server.enqueue(stream_reply(body, [first_event_end, first_event_end + 30], drop_after=2))
    received: list[str] = []
    with pytest.raises(ModelError, match="the connection broke while streaming"):
        for piece in model.stream(Prompt("q")):
            received.append(piece.text)
    assert received == ["Hé"]
    assert len(openai_server.requests) == 1


def test_opening_a_stream_is_retried(
    openai_server: OpenAIServer, model: OpenAIChatModel, sleeps: list[float]
) -> None:
    openai_server.enqueue(Reply(status=503, headers={"Retry-After": "1"}), stream_reply(_stream_body(), [5]))
    assert "".join(texts(list(model.stream(Prompt("q"))))) == "Héllo, wörld 😀!\n"
    assert sleeps == [1.0]


def test_stream_http_error_carries_status_and_body(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    openai_server.enqueue(Reply(status=401, json={"error": {"message": "no key"}}))
    with pytest.raises(ModelError, match="HTTP 401 Unauthorized: no key") as info:
        next(model.stream(Prompt("q")))
    assert info.value.status_code == 401


def test_malformed_sse_line_is_named(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    body = sse([chunk("ok")], done=False) + b'{"choices": "not an event line"}\n\n' + sse([], done=True)
    openai_server.enqueue(stream_reply(body))
    with pytest.raises(
        ModelError, match=r"malformed server-sent event line '\{\"choices\": \"not an event line\"\}'"
    ):
        list(model.stream(Prompt("q")))


def test_event_data_that_is_not_json(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    openai_server.enqueue(stream_reply(b"data: {broken\n\n"))
    with pytest.raises(ModelError, match=r"sent an event whose data is not JSON: '\{broken'"):
        list(model.stream(Prompt("q")))


def test_stream_ending_without_done_or_finish_reason(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    openai_server.enqueue(stream_reply(sse([chunk("partial")], done=False)))
    with pytest.raises(ModelError, match=r"the stream ended before the reply finished"):
        list(model.stream(Prompt("q")))


def test_stream_with_finish_reason_but_no_done_is_accepted(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    openai_server.enqueue(stream_reply(sse([chunk("all"), chunk(finish_reason="length")], done=False)))
    chunks = list(model.stream(Prompt("q")))
    assert texts(chunks) == ["all", ""]
    assert chunks[-1].finish_reason == "length"
    assert chunks[-1].usage is None


def test_stream_cut_inside_an_event_is_an_error(openai_server: OpenAIServer, model: OpenAIChatModel) -> None:
    openai_server.enqueue(stream_reply(b'data: {"choices": [', [5]))
    with pytest.raises(ModelError, match="ended in the middle of an event"):
        list(model.stream(Prompt("q")))


def test_api_key_never_shows(
    openai_server: OpenAIServer, model: OpenAIChatModel, caplog: pytest.LogCaptureFixture
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    openai_server.enqueue(Reply(status=503, json=echo), Reply(status=401, json=echo))
    with caplog.at_level(logging.DEBUG), pytest.raises(ModelError) as info:
        model.call(Prompt("q"))
    shown = [repr(model), str(model), str(info.value), repr(info.value), info.value.body or "", caplog.text]
    assert all(KEY not in text for text in shown)
    assert "Incorrect API key provided: ***" in str(info.value)
    assert "retry 1 of 2" in caplog.text
    assert repr(model) == f"OpenAIChatModel(model='test-model', base_url='{openai_server.base_url}')"


def test_settings_come_from_the_environment(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("RAG_CHAT_MODEL", "env-model")
    openai_server.enqueue(Reply(json=completion()))
    with OpenAIChatModel() as chat:
        assert (chat.model, chat.base_url) == ("env-model", openai_server.base_url)
        chat.call(Prompt("q"))
    request = openai_server.requests[0]
    assert request.headers["authorization"] == "Bearer env-key"
    assert request.json["model"] == "env-model"


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RAG_CHAT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIChatModel() as chat:
        assert (chat.model, chat.base_url) == ("gpt-4o-mini", "https://api.openai.com/v1")


def test_base_url_without_scheme_is_rejected() -> None:
    with pytest.raises(InvalidRequestError, match="got 'localhost:8080/v1'"):
        OpenAIChatModel(base_url="localhost:8080/v1")


def test_injected_client_is_used_and_left_open(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(json=completion("via injected client")))
    with httpx.Client(headers={"X-Trace": "t1"}) as client:
        chat = OpenAIChatModel(base_url=openai_server.base_url, client=client)
        assert chat.call(Prompt("q")).text == "via injected client"
        chat.close()
        assert not client.is_closed
    assert openai_server.requests[0].headers["x-trace"] == "t1"
    assert "authorization" not in openai_server.requests[0].headers


def test_model_created_client_is_closed_by_close() -> None:
    chat = OpenAIChatModel(base_url="http://127.0.0.1:9/v1")
    chat.close()
    with pytest.raises(ModelError, match="the HTTP client is closed"):
        chat.call(Prompt("q"))


def test_empty_prompt_is_rejected_before_sending(model: OpenAIChatModel) -> None:
    with pytest.raises(ModelError, match="no messages"):
        model.stream(Prompt([]))
