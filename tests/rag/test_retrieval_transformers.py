"""Query transformers and MultiQueryExpander with the scripted fake model and a loopback OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag.chat import AssistantMessage, SystemMessage, UserMessage
from rag.errors import InvalidRequestError, ModelError, TemplateError
from rag.http import RetryPolicy
from rag.models.openai import OpenAIChatModel
from rag.retrieval import (
    CompressionQueryTransformer,
    MultiQueryExpander,
    Query,
    QueryExpander,
    QueryTransformer,
    RewriteQueryTransformer,
    TranslationQueryTransformer,
)
from rag.testing import FakeChatModel
from tests.openai_server import OpenAIServer, Reply, completion

CONTEXT = {"tenant": "acme"}
HISTORY = (
    SystemMessage("Be brief."),
    UserMessage("When is the beacon lit?"),
    AssistantMessage("At dusk."),
)


@pytest.fixture
def chat(openai_server: OpenAIServer) -> Iterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        base_url=openai_server.base_url, api_key="sk-test", model="m", retry_policy=RetryPolicy(max_retries=0)
    )
    yield model
    model.close()


def test_rewrite_renders_its_template_and_keeps_history_and_context() -> None:
    model = FakeChatModel(["  beacon lighting time \n"])
    rewrite = RewriteQueryTransformer(model, target="docs index")
    query = Query("so erm when do they light the beacon", HISTORY, CONTEXT)
    out = rewrite.transform(query)
    assert isinstance(rewrite, QueryTransformer)
    assert (out.text, out.history, out.context) == ("beacon lighting time", HISTORY, CONTEXT)
    sent = model.prompts[0].user_text
    assert "Query: so erm when do they light the beacon" in sent and "docs index" in sent


def test_an_empty_reply_keeps_the_query(caplog: pytest.LogCaptureFixture) -> None:
    for transformer in (
        RewriteQueryTransformer(FakeChatModel(["   "])),
        TranslationQueryTransformer(FakeChatModel([""]), "English"),
        CompressionQueryTransformer(FakeChatModel(["\n"])),
    ):
        assert transformer.transform(Query("beacon?", HISTORY)).text == "beacon?"
    assert "replied nothing" in caplog.text


def test_compression_sends_the_user_and_assistant_turns() -> None:
    model = FakeChatModel(["When is the beacon lit in winter?"])
    out = CompressionQueryTransformer(model).transform(Query("And in winter?", HISTORY))
    assert out.text == "When is the beacon lit in winter?"
    sent = model.prompts[0].user_text
    assert "user: When is the beacon lit?\nassistant: At dusk." in sent
    assert "Be brief." not in sent  # system text is not conversation
    assert "Follow-up query: And in winter?" in sent


def test_compression_without_history_does_not_call_the_model() -> None:
    model = FakeChatModel([])  # any call would raise: nothing is scripted
    assert CompressionQueryTransformer(model).transform(Query("And in winter?")).text == "And in winter?"
    assert model.prompts == []


def test_translation_names_the_target_language() -> None:
    model = FakeChatModel(["When is the lighthouse lit?"])
    out = TranslationQueryTransformer(model, "English").transform(Query("Quand le phare est-il allumé ?"))
    assert out.text == "When is the lighthouse lit?"
    assert model.prompts[0].user_text.count("English") >= 2
    with pytest.raises(InvalidRequestError, match="target_language"):
        TranslationQueryTransformer(model, " ")


@pytest.mark.parametrize(
    ("build", "missing"),
    [
        (lambda t: RewriteQueryTransformer(FakeChatModel(), t), "target"),
        (lambda t: TranslationQueryTransformer(FakeChatModel(), "German", t), "target_language"),
        (lambda t: CompressionQueryTransformer(FakeChatModel(), t), "history"),
        (lambda t: MultiQueryExpander(FakeChatModel(), template=t), "number"),
    ],
)
def test_a_template_without_its_placeholders_is_refused(build, missing: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TemplateError, match=rf"lacks the placeholder\(s\) \[.*'{missing}'"):
        build("Just {query}")


def test_expander_parses_lines_drops_markers_repeats_and_the_original() -> None:
    reply = "1. beacon lighting hours\n\n- When is the lamp lit?\n* beacon lighting hours\n2) Beacon time?"
    model = FakeChatModel([reply])
    expander = MultiQueryExpander(model, number_of_queries=3)  # fewer usable lines than asked: all kept
    queries = expander.expand(Query("beacon time?", HISTORY, CONTEXT))
    assert isinstance(expander, QueryExpander)
    assert [q.text for q in queries] == ["beacon time?", "beacon lighting hours", "When is the lamp lit?"]
    assert all(q.history == HISTORY and q.context == CONTEXT for q in queries)
    assert "3 different versions" in model.prompts[0].user_text


def test_expander_without_original_and_with_a_useless_reply() -> None:
    without = MultiQueryExpander(FakeChatModel(["a\nb\nc"]), 2, include_original=False)
    assert [q.text for q in without.expand(Query("x"))] == ["a", "b"]
    useless = MultiQueryExpander(FakeChatModel(["\n  \n1. x"]), 2, include_original=False)
    assert [q.text for q in useless.expand(Query("x"))] == ["x"]  # only the query itself came back
    with pytest.raises(InvalidRequestError, match="number_of_queries"):
        MultiQueryExpander(FakeChatModel(), 0)


def test_stages_over_a_real_openai_compatible_server(
    openai_server: OpenAIServer, chat: OpenAIChatModel
) -> None:
    openai_server.enqueue(
        Reply(json=completion("When is the beacon lit in winter?")),
        Reply(json=completion("beacon winter hours\nlamp lighting in winter")),
    )
    query = CompressionQueryTransformer(chat).transform(Query("And in winter?", HISTORY))
    queries = MultiQueryExpander(chat, 2).expand(query)
    assert [q.text for q in queries] == [
        "When is the beacon lit in winter?",
        "beacon winter hours",
        "lamp lighting in winter",
    ]
    first, second = (request.json for request in openai_server.requests)
    assert first["messages"][-1]["role"] == "user"
    assert "assistant: At dusk." in first["messages"][-1]["content"]
    assert "Query: When is the beacon lit in winter?" in second["messages"][-1]["content"]


def test_a_model_error_propagates(openai_server: OpenAIServer, chat: OpenAIChatModel) -> None:
    openai_server.enqueue(Reply(status=400, json={"error": {"message": "bad model"}}))
    with pytest.raises(ModelError, match="bad model"):
        RewriteQueryTransformer(chat).transform(Query("beacon"))
