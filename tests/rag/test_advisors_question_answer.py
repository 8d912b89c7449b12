"""QuestionAnswerAdvisor on a real NumpyVectorStore with HashingEmbedding."""

from __future__ import annotations

from typing import Any

import pytest

from rag import Document, HashingEmbedding, SearchRequest
from rag.advisors import QuestionAnswerAdvisor
from rag.advisors.question_answer import DEFAULT_EMPTY_TEMPLATE
from rag.client import ChatClient
from rag.errors import InvalidRequestError, TemplateError
from rag.filters import key
from rag.models import ExtractiveChatModel
from rag.testing import FakeChatModel
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore

RULE = "-" * 21


@pytest.fixture
def store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(
        [
            Document(
                "en-beacon",
                "The beacon lamp is lit at dusk by the keeper.",
                {"source": "beacon.md", "page": 2, "lang": "en"},
            ),
            Document(
                "en-tides",
                "Spring tides flood the causeway twice a month.",
                {"source": "tides.md", "lang": "en"},
            ),
            Document(
                "fr-beacon",
                "Le phare beacon lamp est allumé au crépuscule.",
                {"source": "phare.md", "lang": "fr"},
            ),
            Document(
                "braces",
                "Config uses {json: true} and {{double}} braces.",
                {"source": "conf.md", "lang": "en"},
            ),
        ]
    )
    return store


def test_retrieved_documents_go_into_the_prompt_and_the_response(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="answer")
    advisor = QuestionAnswerAdvisor(store, SearchRequest("ignored", top_k=2))
    response = ChatClient(model, advisors=[advisor]).prompt("When is the beacon lamp lit?").call().response()
    documents = response.documents
    assert [d.id for d in documents] == ["en-beacon", "fr-beacon"]
    assert all(d.score is not None and d.score > 0 for d in documents)
    # Kept once, in the context the accessor reads: the reply's metadata carries no second copy.
    assert not any(isinstance(v, list) and v == documents for v in response.chat_response.metadata.values())
    text = model.prompts[0].user_text
    assert text.startswith("When is the beacon lamp lit?\n\n")
    assert (
        f"{RULE}\n[1] (source: beacon.md, page 2)\nThe beacon lamp is lit at dusk by the keeper.\n\n"
        f"[2] (source: phare.md)\nLe phare beacon lamp est allumé au crépuscule.\n{RULE}"
    ) in text
    assert "cannot answer" in text
    assert model.prompts[0].messages[-1].metadata["question"] == "When is the beacon lamp lit?"


def test_a_request_filter_replaces_the_default_filter(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(store, filter="lang == 'en'", top_k=4)])
    ids = lambda spec: [d.id for d in spec.call().response().documents]  # noqa: E731
    assert "fr-beacon" not in ids(client.prompt("beacon lamp"))
    # Replaced, not combined: the French document is found although the default filter excludes it.
    by_text = QuestionAnswerAdvisor.Params(filter="source == 'phare.md'")
    assert ids(client.prompt("beacon lamp").advisors(by_text)) == ["fr-beacon"]
    by_tree = QuestionAnswerAdvisor.Params(filter=key("lang") == "fr")
    assert ids(client.prompt("beacon lamp").advisors(by_tree)) == ["fr-beacon"]
    # Spring AI's name is an alias of the same field.
    spring = client.prompt("beacon lamp").advisors(params={"qa_filter_expression": "source == 'phare.md'"})
    assert ids(spring) == ["fr-beacon"]


def test_top_k_and_threshold_from_the_request(store: NumpyVectorStore) -> None:
    client = ChatClient(FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(store)])
    one = client.prompt("beacon lamp").advisors(QuestionAnswerAdvisor.Params(top_k=1)).call().response()
    assert [d.id for d in one.documents] == ["en-beacon"]
    every = client.prompt("beacon lamp").call().response()
    assert len(every.documents) == 4  # the default top_k
    strict = QuestionAnswerAdvisor.Params(similarity_threshold=0.99)
    assert client.prompt("beacon lamp").advisors(strict).call().response().documents == []


def test_nothing_retrieved_tells_the_model_to_say_it_cannot_answer(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(store, similarity_threshold=0.99)])
    client.prompt("beacon lamp").call().content()
    assert model.prompts[0].user_text == DEFAULT_EMPTY_TEMPLATE.render(query="beacon lamp")
    assert "cannot answer it from the documents; do not make up an answer" in model.prompts[0].user_text
    # The offline answerer reads the empty block and declines.
    offline = ChatClient(
        ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store, similarity_threshold=0.99)]
    )
    assert (
        offline.prompt("beacon lamp").call().content().startswith("I cannot answer this from the documents")
    )


def test_the_extractive_model_quotes_the_passages_with_their_sources(store: NumpyVectorStore) -> None:
    client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store, top_k=2)])
    answer = client.prompt("When do spring tides flood the causeway?").call().content()
    assert "- Spring tides flood the causeway twice a month. [tides.md]" in answer


def test_document_text_with_braces_passes_untouched(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    ChatClient(model, advisors=[QuestionAnswerAdvisor(store, filter="source == 'conf.md'")]).prompt(
        "config {braces}"
    ).call().content()
    assert "Config uses {json: true} and {{double}} braces." in model.prompts[0].user_text
    assert model.prompts[0].user_text.startswith("config {braces}\n")


def test_custom_templates_and_their_placeholders(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    advisor = QuestionAnswerAdvisor(store, template="Q: {query}\nC: {question_answer_context}", top_k=1)
    ChatClient(model, advisors=[advisor]).prompt("tides").call().content()
    assert model.prompts[0].user_text.startswith("Q: tides\nC: [1] (source: tides.md)\n")
    with pytest.raises(TemplateError, match=r"lacks the placeholder\(s\) \['question_answer_context'\]"):
        QuestionAnswerAdvisor(store, template="just {query}")
    with pytest.raises(TemplateError, match=r"empty_template 'nothing' lacks.*'query'"):
        QuestionAnswerAdvisor(store, empty_template="nothing")


def test_streaming_delivers_the_documents_once_the_stream_is_read(store: NumpyVectorStore) -> None:
    client = ChatClient(FakeChatModel([["The ", "lamp"]]), advisors=[QuestionAnswerAdvisor(store, top_k=1)])
    stream = client.prompt("beacon lamp").stream()
    assert stream.documents == []  # nothing has run yet
    chunks = list(stream.chat_response())
    assert "".join(c.text for c in chunks) == "The lamp"
    assert [d.id for d in stream.documents] == ["en-beacon"]


def test_blank_user_text_is_an_error(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    with pytest.raises(InvalidRequestError, match="QuestionAnswerAdvisor needs user text"):
        ChatClient(model, advisors=[QuestionAnswerAdvisor(store)]).prompt("   ").call().content()
    assert model.prompts == []


def test_mode_fusion_weight_and_diversity_reach_the_store(store: NumpyVectorStore) -> None:
    recording = RecordingStore(store)
    advisor = QuestionAnswerAdvisor(
        recording,
        SearchRequest("ignored", top_k=2, rrf_k=10),
        mode="hybrid",
        fusion="weighted",
        vector_weight=0.7,
        diversity=0.25,
    )
    response = ChatClient(FakeChatModel(default="ok"), advisors=[advisor]).prompt("beacon lamp").call()
    assert len(response.response().documents) == 2
    (search,) = recording.requests
    assert (search.query, search.top_k, search.rrf_k) == ("beacon lamp", 2, 10)
    assert (search.mode, search.fusion, search.vector_weight, search.diversity) == (
        "hybrid",
        "weighted",
        0.7,
        0.25,
    )
    # Unset arguments keep the search request's values.
    plain = QuestionAnswerAdvisor(store, SearchRequest("x", mode="lexical", diversity=0.5), top_k=3)
    assert (plain.search_request.mode, plain.search_request.diversity, plain.search_request.top_k) == (
        "lexical",
        0.5,
        3,
    )
    assert QuestionAnswerAdvisor(store).search_request.mode == "vector"  # SearchRequest's own default


def test_search_settings_from_the_request_params(store: NumpyVectorStore) -> None:
    recording = RecordingStore(store)
    client = ChatClient(
        FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(recording, mode="hybrid", diversity=0.2)]
    )
    Params = QuestionAnswerAdvisor.Params
    client.prompt("beacon lamp").advisors(
        Params(mode="lexical", fusion="weighted", vector_weight=0.9)
    ).call().content()
    client.prompt("beacon lamp").advisors(Params(mode="vector", diversity=0.0)).call().content()
    # Two Params of the same class in one request merge field by field, the later winning.
    client.prompt("beacon lamp").advisors(Params(mode="lexical", fusion="rrf")).advisors(
        Params(mode="hybrid", vector_weight=0.1, diversity=0.6)
    ).call().content()
    client.prompt("beacon lamp").call().content()  # the advisor's defaults again: nothing carries over
    seen = [(r.mode, r.fusion, r.vector_weight, r.diversity) for r in recording.requests]
    assert seen == [
        ("lexical", "weighted", 0.9, 0.2),
        ("vector", "rrf", 0.5, 0.0),
        ("hybrid", "rrf", 0.1, 0.6),
        ("hybrid", "rrf", 0.5, 0.2),
    ]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mode": "bm25"}, r"mode must be one of 'vector', 'lexical', 'hybrid', got 'bm25'"),
        ({"fusion": "max"}, r"fusion must be one of 'rrf', 'weighted', got 'max'"),
        ({"vector_weight": 1.5}, r"vector_weight must be within \[0, 1\], got 1.5"),
        ({"diversity": -0.1}, r"diversity must be within \[0, 1\], got -0.1"),
    ],
)
def test_bad_search_settings_name_the_field(
    store: NumpyVectorStore, params: dict[str, Any], message: str
) -> None:
    recording = RecordingStore(store)
    with pytest.raises(InvalidRequestError, match=message) as raised:
        QuestionAnswerAdvisor.Params(**params)  # fails when built, before any request or search
    assert str(raised.value).startswith(f"QuestionAnswerAdvisor.Params({next(iter(params))}=...)")
    with pytest.raises(InvalidRequestError, match=message):
        QuestionAnswerAdvisor(store, **params)
    assert recording.requests == []
