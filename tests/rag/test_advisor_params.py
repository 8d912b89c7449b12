"""Typed per-request advisor parameters: misspellings named, values checked first, defaults merged."""

from __future__ import annotations

import doctest
import importlib
import sys
import types
from pathlib import Path

import pytest

from rag import Document, HashingEmbedding
from rag.advisors import QuestionAnswerAdvisor, RetrievalAugmentationAdvisor, VectorStoreChatMemoryAdvisor
from rag.client import ChatClient
from rag.errors import FilterSyntaxError, InvalidRequestError, RagError
from rag.params import ParamSet
from rag.retrieval import VectorStoreDocumentRetriever
from rag.testing import FakeChatModel, FakeEmbedding
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore


@pytest.fixture
def store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(
        [
            Document("d1", "The beacon lamp is lit at dusk.", {"source": "beacon.md", "lang": "en"}),
            Document("d2", "The beacon lamp burns paraffin.", {"source": "beacon.md", "lang": "en"}),
            Document("d3", "Le phare beacon lamp est allumé.", {"source": "phare.md", "lang": "fr"}),
        ]
    )
    return store


def test_a_misspelled_keyword_of_advisors_is_named(store: NumpyVectorStore) -> None:
    recording = RecordingStore(store)
    client = ChatClient(FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(recording)])
    with pytest.raises(InvalidRequestError, match=r"unknown keyword 'topk'") as raised:
        client.prompt("beacon lamp").advisors(topk=1).call().content()
    assert "QuestionAnswerAdvisor.Params(top_k=...)" in str(raised.value)  # the typed spelling, hinted
    with pytest.raises(InvalidRequestError, match=r"unknown keyword 'top_k'"):
        client.prompt("beacon lamp").advisors(top_k=1)  # the old loose keyword is no longer a mechanism
    assert recording.requests == []


def test_a_misspelled_params_field_is_named_with_the_advisor() -> None:
    with pytest.raises(InvalidRequestError) as raised:
        QuestionAnswerAdvisor.Params(topk=3)  # type: ignore[call-arg]
    assert str(raised.value).startswith(
        "QuestionAnswerAdvisor.Params has no field 'topk' (did you mean 'top_k'?)"
    )
    with pytest.raises(InvalidRequestError, match=r"VectorStoreChatMemoryAdvisor.Params has no field 'k'"):
        VectorStoreChatMemoryAdvisor.Params(k=3)  # type: ignore[call-arg]
    with pytest.raises(InvalidRequestError, match="keyword arguments only"):
        QuestionAnswerAdvisor.Params(3)  # type: ignore[misc]


def test_a_misspelled_spring_name_is_named(store: NumpyVectorStore) -> None:
    client = ChatClient(FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(store)])
    with pytest.raises(InvalidRequestError) as raised:
        client.prompt("q").advisors(params={"qa_filter_expresion": "lang == 'en'"})
    message = str(raised.value)
    assert "'qa_filter_expresion'" in message and "did you mean 'qa_filter_expression'" in message


def test_spring_names_translate_into_the_typed_form() -> None:
    spec = ChatClient(FakeChatModel(default="ok")).prompt("q")
    spec.advisors(
        params={
            "qa_filter_expression": "lang == 'fr'",
            "chat_memory_conversation_id": "c9",
            "chat_memory_vector_store_top_k": 2,
            "vector_store_filter": "lang == 'en'",
        }
    )
    request = spec.build_request()
    assert request.context == {"conversation_id": "c9"}
    qa = request.params.get(QuestionAnswerAdvisor.Params)
    retriever = request.params.get(VectorStoreDocumentRetriever.Params)
    memory = request.params.get(VectorStoreChatMemoryAdvisor.Params)
    assert qa is not None and str(qa.filter) == "lang == 'fr'"
    assert retriever is not None and str(retriever.filter) == "lang == 'en'"
    assert memory == VectorStoreChatMemoryAdvisor.Params(top_k=2)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: QuestionAnswerAdvisor.Params(top_k=0),
            InvalidRequestError,
            r"top_k=...\): must be an integer >= 1",
        ),
        (lambda: QuestionAnswerAdvisor.Params(vector_weight=1.5), InvalidRequestError, r"within \[0, 1\]"),
        (lambda: QuestionAnswerAdvisor.Params(mode="bm25"), InvalidRequestError, r"mode must be one of"),  # type: ignore[arg-type]
        (lambda: QuestionAnswerAdvisor.Params(filter="lang =="), FilterSyntaxError, r"lang =="),
        (
            lambda: VectorStoreChatMemoryAdvisor.Params(top_k=0),
            InvalidRequestError,
            r"must be an integer >= 1",
        ),
    ],
)
def test_a_bad_value_fails_when_the_params_are_built_before_any_search(
    store: NumpyVectorStore, make: object, error: type[RagError], message: str
) -> None:
    recording = RecordingStore(store)
    client = ChatClient(FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(recording)])
    with pytest.raises(error, match=message):
        client.prompt("beacon lamp").advisors(make()).call().content()  # type: ignore[operator]
    assert recording.requests == []


def test_client_default_params_merge_with_the_request_ones(store: NumpyVectorStore) -> None:
    recording = RecordingStore(store)
    Params = QuestionAnswerAdvisor.Params
    client = ChatClient(
        FakeChatModel(default="ok"),
        advisors=[QuestionAnswerAdvisor(recording), Params(top_k=1, filter="lang == 'fr'")],
    )
    assert [d.id for d in client.prompt("beacon lamp").call().response().documents] == ["d3"]
    # The request sets top_k only: the default filter stays, the request's top_k wins.
    found = client.prompt("beacon lamp").advisors(Params(top_k=3)).call().response().documents
    assert [d.id for d in found] == ["d3"]
    assert [(r.top_k, str(r.filter).startswith("(lang == 'fr')")) for r in recording.requests] == [
        (1, True),
        (3, True),
    ]


def test_per_request_memory_top_k_changes_how_many_turns_are_recalled() -> None:
    store = NumpyVectorStore(FakeEmbedding())
    advisor = VectorStoreChatMemoryAdvisor(store, top_k=4)
    client = ChatClient(FakeChatModel(default="Noted."), advisors=[advisor])
    for fact in ("My boat is the Gull.", "My dog is Rex.", "I live in Brest."):
        client.prompt(fact).advisors(conversation_id="c1").call().content()
    default = client.prompt("What do you know?").advisors(conversation_id="c1").call().response()
    assert len(default.context["chat_memory_documents"]) == 4
    one = VectorStoreChatMemoryAdvisor.Params(top_k=1)
    fewer = client.prompt("What do you know?").advisors(one, conversation_id="c1").call().response()
    assert len(fewer.context["chat_memory_documents"]) == 1
    spring = {"chat_memory_response_size": 2, "chat_memory_conversation_id": "c1"}
    two = client.prompt("What do you know?").advisors(params=spring).call().response()
    assert len(two.context["chat_memory_documents"]) == 2


def test_each_advisor_reads_only_its_own_params(store: NumpyVectorStore) -> None:
    qa = RecordingStore(store)
    modular = RecordingStore(store)
    client = ChatClient(
        FakeChatModel(default="ok"),
        advisors=[
            QuestionAnswerAdvisor(qa),
            RetrievalAugmentationAdvisor(VectorStoreDocumentRetriever(modular), name="modular"),
        ],
    )
    client.prompt("beacon lamp").advisors(
        QuestionAnswerAdvisor.Params(top_k=1), RetrievalAugmentationAdvisor.Params(top_k=2)
    ).call().content()
    assert [r.top_k for r in qa.requests] == [1]
    assert [r.top_k for r in modular.requests] == [2]


def test_the_documents_accessor(store: NumpyVectorStore) -> None:
    client = ChatClient(FakeChatModel(default="ok"), advisors=[QuestionAnswerAdvisor(store, top_k=2)])
    response = client.prompt("beacon lamp").call().response()
    assert [d.id for d in response.documents] == ["d1", "d2"]
    assert all(d.score is not None for d in response.documents)
    assert ChatClient(FakeChatModel(default="ok")).prompt("q").call().response().documents == []


def test_param_sets_merge_field_by_field_and_refuse_other_objects() -> None:
    Params = QuestionAnswerAdvisor.Params
    merged = ParamSet([Params(top_k=8, mode="vector")]).with_params([Params(top_k=2)])
    assert merged.get(Params) == Params(top_k=2, mode="vector")
    assert merged.get(VectorStoreChatMemoryAdvisor.Params) is None
    with pytest.raises(InvalidRequestError, match="is not an advisor's Params"):
        ParamSet([{"top_k": 2}])  # type: ignore[list-item]


def test_the_per_request_parameters_example_in_the_docs_runs_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "advisors.md").read_text(encoding="utf-8")
    section = text[text.index("## Per-request parameters") :].split("\n## ", 1)[0]
    blocks = [block.split("```", 1)[0] for block in section.split("```python\n")[1:]]
    assert len(blocks) == 2
    # A real module: dataclasses look their class's module up in sys.modules.
    module = types.ModuleType("docs_advisors")
    sys.modules[module.__name__] = module
    try:
        for code in blocks:
            exec(compile(code, "docs/advisors.md", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    assert capsys.readouterr().out == "['fr']\nGreet me (answer formally)\n"


@pytest.mark.parametrize(
    "name",
    [
        "rag.params",
        "rag.advisors.aliases",
        "rag.advisors.orders",
        "rag.advisors.request",
        "rag.advisors.response",
        "rag.advisors.question_answer",
        "rag.advisors.memory_vector",
        "rag.advisors.retrieval_augmentation",
        "rag.retrieval.params",
        "rag.retrieval.scope",
        "rag.client.client",
        "rag.filters.tree",
        "rag.filters.builder",
        "rag.filters.text",
    ],
)
def test_the_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_builder_default_advisors_take_params_too(store: NumpyVectorStore) -> None:
    recording = RecordingStore(store)
    Params = QuestionAnswerAdvisor.Params
    client = (
        ChatClient.builder(FakeChatModel(default="ok"))
        .default_advisors(QuestionAnswerAdvisor(recording), Params(top_k=1))
        .build()
    )
    assert len(client.prompt("beacon lamp").call().response().documents) == 1
    assert [r.top_k for r in recording.requests] == [1]


def test_the_source_names_docstring_runs() -> None:
    # Its example builds a store (`stores`), which the rag-only list above avoids.
    result = doctest.testmod(importlib.import_module("rag.retrieval.source_names"))
    assert result.attempted > 0 and result.failed == 0
