"""The test doubles in rag.testing: FakeChatModel scripts and records; FakeEmbedding is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from rag.chat import (
    AssistantMessage,
    ChatModel,
    ChatOptions,
    ChatResponse,
    Prompt,
    SystemMessage,
    ToolCall,
    Usage,
    UserMessage,
)
from rag.embeddings import EmbeddingModel
from rag.errors import InvalidRequestError, ModelError
from rag.testing import FakeChatModel, FakeEmbedding


def test_fake_chat_model_satisfies_the_protocol() -> None:
    model = FakeChatModel(default_options=ChatOptions(temperature=0))
    assert isinstance(model, ChatModel)
    assert model.default_options == ChatOptions(temperature=0)


def test_call_replays_script_in_order_and_records_prompts() -> None:
    model = FakeChatModel(["one", "two words"])
    first = model.call(Prompt([SystemMessage("be brief"), UserMessage("q1")]))
    second = model.call(Prompt("q2"))
    assert (first.text, second.text) == ("one", "two words")
    assert first.finish_reason == "stop"
    assert first.usage == Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4)
    assert [p.user_text for p in model.prompts] == ["q1", "q2"]
    assert model.remaining == 0


def test_stream_of_text_is_split_into_word_chunks_then_a_final_chunk() -> None:
    chunks = list(FakeChatModel(["Hello big world"]).stream(Prompt("hi")))
    assert [c.text for c in chunks] == ["Hello", " big", " world", ""]
    assert [c.finish_reason for c in chunks] == [None, None, None, "stop"]
    assert chunks[-1].usage == Usage(1, 3, 4)


def test_list_of_strings_is_streamed_as_given_and_joined_for_call() -> None:
    model = FakeChatModel([["Str", "eam", "ed"], ["a", "b"]])
    assert [c.text for c in model.stream(Prompt("x"))] == ["Str", "eam", "ed", ""]
    assert model.call(Prompt("y")).text == "ab"


def test_tool_calls_arrive_on_the_final_chunk() -> None:
    message = AssistantMessage(None, (ToolCall("call_1", "weather", '{"city": "Oslo"}'),))
    model = FakeChatModel([message, message])
    response = model.call(Prompt("weather?"))
    assert response.finish_reason == "tool_calls"
    assert response.message.tool_calls == message.tool_calls
    chunks = list(model.stream(Prompt("weather?")))
    assert len(chunks) == 1
    assert chunks[0].message.tool_calls == message.tool_calls


def test_chat_response_items_are_returned_as_is() -> None:
    response = ChatResponse(AssistantMessage("exact"), finish_reason="length", model="m")
    model = FakeChatModel([response, response])
    assert model.call(Prompt("q")) is response
    assert list(model.stream(Prompt("q"))) == [response]


def test_exceptions_are_raised_by_call_and_lazily_by_stream() -> None:
    model = FakeChatModel([ModelError("boom", status_code=500), RuntimeError])
    with pytest.raises(ModelError, match="boom"):
        model.call(Prompt("q"))
    stream = model.stream(Prompt("q"))  # the prompt is recorded now, the error comes on iteration
    assert len(model.prompts) == 2
    with pytest.raises(RuntimeError):
        next(stream)


def test_running_out_of_script_is_a_clear_error() -> None:
    model = FakeChatModel(["only"])
    model.call(Prompt("first"))
    with pytest.raises(ModelError, match=r"no scripted reply left for prompt #2 \(user text 'second'\)"):
        model.call(Prompt("second"))


def test_default_reply_and_added_replies() -> None:
    model = FakeChatModel(default="fallback")
    model.add_replies("queued")
    assert [model.call(Prompt(str(i))).text for i in range(3)] == ["queued", "fallback", "fallback"]


def test_function_script_sees_the_prompt() -> None:
    model = FakeChatModel(lambda prompt: prompt.user_text.upper())
    assert model.call(Prompt("shout")).text == "SHOUT"
    assert "FakeChatModel(" in repr(model)


def test_unsupported_reply_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="cannot reply with 42"):
        FakeChatModel([42]).call(Prompt("q"))  # type: ignore[list-item]


def test_fake_embedding_is_deterministic_normalised_and_records_calls() -> None:
    fake = FakeEmbedding()
    assert isinstance(fake, EmbeddingModel)
    vectors = fake.embed(["alpha", "beta", "alpha"])
    assert vectors.shape == (3, 16)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(vectors[0], vectors[2])
    assert not np.allclose(vectors[0], vectors[1])
    assert np.array_equal(FakeEmbedding().embed(["alpha"])[0], vectors[0])
    assert fake.calls == [["alpha", "beta", "alpha"]]
    assert (fake.name, fake.dimensions) == ("fake-16", 16)
    assert fake.embed([]).shape == (0, 16)


def test_fake_embedding_rejects_bad_dimensions() -> None:
    with pytest.raises(InvalidRequestError, match="got 0"):
        FakeEmbedding(0)


def test_test_doubles_are_not_collected_as_tests() -> None:
    assert FakeChatModel.__test__ is False
    assert FakeEmbedding.__test__ is False
