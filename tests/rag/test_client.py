"""ChatClient: prompt assembly, templates, options layers, advisor params, tools, entity(), streams."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from rag.advisors import QuestionAnswerAdvisor
from rag.advisors.request import CONVERSATION_ID, MODEL_CALLS, TOOLS
from rag.chat import AssistantMessage, ChatOptions, Prompt, SystemMessage, ToolDefinition, UserMessage
from rag.chat.template import PromptTemplate
from rag.client import ChatClient
from rag.errors import InvalidRequestError, ModelError, StructuredOutputError, TemplateError
from rag.testing import FakeChatModel


class City(BaseModel):
    name: str
    population: int


def test_system_and_user_text_with_template_params() -> None:
    model = FakeChatModel(default="ok")
    client = ChatClient(model, system="Default system, {kept} as is.")
    client.prompt("What is {x}?").call().content()
    client.prompt().system("Answer in {lang}.", lang="French").user(
        "Tell me about {topic}", topic="tides"
    ).call().content()
    client.prompt(PromptTemplate("Hi {{literally}} {name}"), name="Ann").call().content()
    first, second, third = model.prompts
    assert [(m.role.value, m.text) for m in first.messages] == [  # type: ignore[union-attr]
        ("system", "Default system, {kept} as is."),
        ("user", "What is {x}?"),
    ]
    assert (second.system_text, second.user_text) == ("Answer in French.", "Tell me about tides")
    assert third.user_text == "Hi {literally} Ann"
    with pytest.raises(TemplateError, match="'lang'"):
        client.prompt().system("Answer in {lang}.", other=1).user("q").call().content()


def test_client_system_template_params() -> None:
    model = FakeChatModel(default="ok")
    ChatClient(model, system="You are {role}.", system_params={"role": "a keeper"}).prompt(
        "q"
    ).call().content()
    assert model.prompts[0].system_text == "You are a keeper."


def test_messages_go_between_system_and_user_text() -> None:
    model = FakeChatModel(default="ok")
    history = [UserMessage("earlier"), AssistantMessage("reply")]
    ChatClient(model, system="sys").prompt("now").messages(*history).call().content()
    assert [m.text for m in model.prompts[0].messages] == ["sys", "earlier", "reply", "now"]  # type: ignore[union-attr]


def test_a_whole_prompt_can_be_given() -> None:
    model = FakeChatModel(default="ok")
    prompt = Prompt([SystemMessage("s"), UserMessage("u")], ChatOptions(temperature=0.5))
    ChatClient(model).prompt(prompt).call().content()
    assert model.prompts[0].messages == prompt.messages and model.prompts[0].options.temperature == 0.5  # type: ignore[union-attr]


def test_an_empty_prompt_is_an_error() -> None:
    with pytest.raises(InvalidRequestError, match="no user text"):
        ChatClient(FakeChatModel(default="ok")).prompt().call().content()


def test_options_merge_request_over_client_over_model() -> None:
    model = FakeChatModel(
        default="ok", default_options=ChatOptions(model="m-default", temperature=1.0, max_tokens=100, seed=7)
    )
    client = ChatClient(model, options=ChatOptions(temperature=0.5, max_tokens=50))
    client.prompt("q").options(ChatOptions(temperature=0.0)).call().content()
    client.prompt("q").call().content()
    first, second = (p.options for p in model.prompts)
    assert first is not None and second is not None
    assert (first.model, first.temperature, first.max_tokens, first.seed) == ("m-default", 0.0, 50, 7)
    assert (second.temperature, second.max_tokens) == (0.5, 50)


def test_advisor_params_travel_typed_and_the_conversation_id_in_the_context() -> None:
    Params = QuestionAnswerAdvisor.Params
    spec = ChatClient(FakeChatModel(default="ok")).prompt("q")
    spec.advisors(Params(top_k=8, filter="year > 2020", similarity_threshold=0.3), conversation_id="42")
    spec.advisors(Params(top_k=2))
    request = spec.build_request()
    assert request.context == {CONVERSATION_ID: "42"}
    params = request.params.get(Params)
    assert params is not None and (params.top_k, params.similarity_threshold) == (2, 0.3)
    assert str(params.filter) == "year > 2020"


def test_tools_are_kept_in_the_context_and_listed_in_the_options() -> None:
    class Tool:
        definition = ToolDefinition("weather", "Weather for a city")

    model = FakeChatModel(default="ok")
    other = ToolDefinition("clock", "The time")
    tool = Tool()
    response = ChatClient(model, tools=[other]).prompt("q").tools(tool).call().response()
    options = model.prompts[0].options
    assert options is not None and [t.name for t in options.tools or ()] == ["clock", "weather"]
    assert response.context[TOOLS] == (other, tool)
    with pytest.raises(InvalidRequestError, match="is not a tool"):
        ChatClient(model).prompt("q").tools("nope")


def test_call_runs_once_however_often_it_is_read() -> None:
    model = FakeChatModel(["only once"])
    result = ChatClient(model).prompt("q").call()
    assert model.prompts == []  # nothing runs until the result is read
    assert result.content() == "only once" and result.chat_response().text == "only once"
    assert result.response().context[MODEL_CALLS] == 1 and len(model.prompts) == 1


def test_entity_asks_for_json_and_validates() -> None:
    model = FakeChatModel(['```json\n{"name": "Paris", "population": 2100000}\n```'])
    city = ChatClient(model).prompt("Biggest city of France?").call().entity(City)
    assert city == City(name="Paris", population=2100000)
    prompt = model.prompts[0]
    assert prompt.options is not None and prompt.options.response_format is not None
    response_format = prompt.options.response_format
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["name"] == "City"
    assert response_format["json_schema"]["schema"]["required"] == ["name", "population"]
    assert prompt.user_text.startswith("Biggest city of France?\n\nReply with only a JSON value")
    assert json.dumps(City.model_json_schema(), sort_keys=True) in prompt.user_text


def test_entity_retries_once_with_the_validation_error() -> None:
    model = FakeChatModel(['{"name": "Paris"}', '{"name": "Paris", "population": 3}'])
    result = ChatClient(model).prompt("q").call()
    assert result.entity(City) == City(name="Paris", population=3)
    retry = model.prompts[1]
    assert isinstance(retry.messages[-2], AssistantMessage) and retry.messages[-2].text == '{"name": "Paris"}'
    assert "population" in retry.user_text and "Field required" in retry.user_text
    assert result.response().context[MODEL_CALLS] == 2


def test_entity_fails_after_one_retry_naming_the_type() -> None:
    model = FakeChatModel(["not json", "still not json", "never asked"])
    with pytest.raises(StructuredOutputError, match=r"not a valid 'City'.*still not json") as caught:
        ChatClient(model).prompt("q").call().entity(City)
    assert isinstance(caught.value, ModelError) and caught.value.output_type is City
    assert caught.value.text == "still not json" and "Invalid JSON" in caught.value.reason
    assert model.remaining == 1


def test_entity_of_other_types() -> None:
    assert ChatClient(FakeChatModel(["[1, 2, 3]"])).prompt("q").call().entity(list[int]) == [1, 2, 3]


def test_stream_content_and_responses() -> None:
    client = ChatClient(FakeChatModel([["Hel", "lo"], "two words"]))
    assert list(client.prompt("q").stream().content()) == ["Hel", "lo"]
    chunks = list(client.prompt("q").stream().chat_response())
    assert [c.text for c in chunks] == ["two", " words", ""] and chunks[-1].finish_reason == "stop"


def test_a_stream_is_read_once() -> None:
    stream = ChatClient(FakeChatModel(default="ok")).prompt("q").stream()
    assert list(stream.content()) == ["ok"]
    with pytest.raises(InvalidRequestError, match="already been read"):
        stream.content()


def test_a_stream_left_unread_never_calls_the_model() -> None:
    model = FakeChatModel(default="ok")
    ChatClient(model).prompt("q").stream()
    assert model.prompts == []
