"""OpenAIChatModel on replies a well-behaved server cannot easily produce, through httpx.MockTransport."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rag.chat import Prompt, ToolCall
from rag.errors import ModelError
from rag.http import RetryPolicy
from rag.models.openai import OpenAIChatModel
from tests.openai_server import chunk, completion, sse


def _mock_model(handler: Any) -> OpenAIChatModel:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return OpenAIChatModel(
        base_url="http://mock/v1", client=client, retry_policy=RetryPolicy(sleep=lambda _: None)
    )


def test_server_that_ignores_stream_and_answers_json() -> None:
    chat = _mock_model(lambda request: httpx.Response(200, json=completion("whole")))
    chunks = list(chat.stream(Prompt("q")))
    assert [c.text for c in chunks] == ["whole"]
    assert chunks[0].finish_reason == "stop"


def test_error_object_inside_the_stream() -> None:
    body = sse([chunk("so far"), {"error": {"message": "overloaded"}}])
    chat = _mock_model(
        lambda request: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(ModelError, match="error mid-stream: 'overloaded'"):
        list(chat.stream(Prompt("q")))


def test_reply_that_is_not_json_or_not_a_completion() -> None:
    chat = _mock_model(lambda request: httpx.Response(200, content=b"<html>proxy page</html>"))
    with pytest.raises(ModelError, match="returned a body that is not JSON: '<html>proxy page</html>'"):
        chat.call(Prompt("q"))
    odd = _mock_model(lambda request: httpx.Response(200, json={"choices": []}))
    with pytest.raises(ModelError, match="unexpected chat completion from the server"):
        odd.call(Prompt("q"))


def test_lenient_tool_call_shapes() -> None:
    calls = [{"function": {"name": "f", "arguments": {"a": 1}}}]  # no id, arguments as an object
    chat = _mock_model(lambda request: httpx.Response(200, json=completion(None, tool_calls=calls)))
    assert chat.call(Prompt("q")).message.tool_calls == (ToolCall("call_0", "f", '{"a": 1}'),)


def test_invalid_utf8_in_the_stream() -> None:
    chat = _mock_model(
        lambda request: httpx.Response(
            200, content=b"data: \xff\xfe\n\n", headers={"content-type": "text/event-stream"}
        )
    )
    with pytest.raises(ModelError, match="not valid UTF-8"):
        list(chat.stream(Prompt("q")))
