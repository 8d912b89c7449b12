"""RetrievalAugmentationAdvisor: every stage wired through a real ChatClient and a real store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rag import Document, HashingEmbedding, RetrievalAugmentationAdvisor
from rag.advisors import MessageChatMemoryAdvisor, VectorStoreChatMemoryAdvisor
from rag.chat import Prompt, SystemMessage, UserMessage
from rag.client import ChatClient, ChatClientResponse
from rag.errors import InvalidRequestError
from rag.memory import InMemoryChatMemoryRepository, MessageWindowChatMemory
from rag.models import ExtractiveChatModel
from rag.retrieval import (
    CompressionQueryTransformer,
    ContextualQueryAugmenter,
    MaxPerSource,
    MultiQueryExpander,
    Query,
    ReciprocalRankDocumentJoiner,
    TranslationQueryTransformer,
    VectorStoreDocumentRetriever,
)
from rag.testing import FakeChatModel
from stores import NumpyVectorStore

DOCUMENTS = [
    Document(
        "beacon-1", "The beacon lamp is lit at dusk by the keeper.", {"source": "beacon.md", "lang": "en"}
    ),
    Document("beacon-2", "In winter the keeper lights the beacon lamp at four.", {"source": "beacon.md"}),
    Document("beacon-3", "The beacon lamp burns paraffin oil.", {"source": "beacon.md", "lang": "en"}),
    Document("tides", "Spring tides flood the causeway twice a month.", {"source": "tides.md", "lang": "en"}),
    Document("phare", "Le phare est allumé au crépuscule.", {"source": "phare.md", "lang": "fr"}),
]


@pytest.fixture
def store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(DOCUMENTS)
    return store


class Recorder:
    """A stage of every kind that records what it saw and passes it on unchanged."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def transform(self, query: Query) -> Query:
        self.log.append(f"{self.name}.transform({query.text})")
        return query

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        self.log.append(f"{self.name}.process({query.text}, {len(documents)})")
        return list(documents)


def _documents(response: ChatClientResponse) -> list[str]:
    return [d.id for d in response.documents]


def test_the_stages_run_in_order_and_the_model_sees_the_original_question(store: NumpyVectorStore) -> None:
    log: list[str] = []
    helper = FakeChatModel(["beacon lamp lighting", "beacon lamp keeper\nbeacon lamp oil"])
    retriever = VectorStoreDocumentRetriever(store, top_k=2)
    advisor = RetrievalAugmentationAdvisor(
        [retriever, VectorStoreDocumentRetriever(store, top_k=2, mode="lexical")],
        transformers=[TranslationQueryTransformer(helper, "English"), Recorder(log, "t2")],
        expander=MultiQueryExpander(helper, 2),
        post_processors=[Recorder(log, "p1"), MaxPerSource(2), Recorder(log, "p2")],
    )
    model = FakeChatModel(default="At dusk [1].")
    response = (
        ChatClient(model, advisors=[advisor]).prompt("Quand la lampe est-elle allumée ?").call().response()
    )
    # Transformers in turn; the post-processors see the transformed query, in turn.
    assert log[0] == "t2.transform(beacon lamp lighting)"
    assert log[1].startswith("p1.process(beacon lamp lighting, ") and log[2].startswith("p2.process(")
    ids = _documents(response)
    assert len(ids) == len(set(ids)) and sum(i.startswith("beacon") for i in ids) <= 2
    assert response.context["rag.transformed_query"] == "beacon lamp lighting"
    # 3 queries x 2 retrievers were searched, then joined and capped; the prompt shows those documents.
    expected = []
    for text in ("beacon lamp lighting", "beacon lamp keeper", "beacon lamp oil"):
        expected += [retriever.retrieve(Query(text)), advisor.retrievers[1].retrieve(Query(text))]
    joined = MaxPerSource(2).process(Query("x"), advisor.joiner.join(expected))
    assert ids == [d.id for d in joined]
    user = model.prompts[0].messages[-1]
    assert isinstance(user, UserMessage)
    assert user.text.endswith("Question: Quand la lampe est-elle allumée ?")
    assert user.metadata["question"] == "Quand la lampe est-elle allumée ?"
    assert "[1] (source: beacon.md)" in user.text


def test_without_optional_stages_it_is_retrieve_then_augment(store: NumpyVectorStore) -> None:
    model = FakeChatModel(default="ok")
    advisor = RetrievalAugmentationAdvisor(VectorStoreDocumentRetriever(store, top_k=3))
    response = ChatClient(model, advisors=[advisor]).prompt("When is the beacon lamp lit?").call().response()
    expected = store.similarity_search("When is the beacon lamp lit?")[:3]
    assert [d.id for d in response.documents] == [d.id for d in expected]


def test_empty_context_policy(store: NumpyVectorStore) -> None:
    nothing = VectorStoreDocumentRetriever(store, filter="lang == 'de'")
    refuse = FakeChatModel(default="Sorry.")
    ChatClient(refuse, advisors=[RetrievalAugmentationAdvisor(nothing)]).prompt("Beacon?").call().content()
    assert "cannot answer it from the documents" in refuse.prompts[0].user_text
    allow = FakeChatModel(default="From what I know...")
    advisor = RetrievalAugmentationAdvisor(
        nothing, augmenter=ContextualQueryAugmenter(allow_empty_context=True)
    )
    ChatClient(allow, advisors=[advisor]).prompt("Beacon?").call().content()
    assert allow.prompts[0].user_text == "Beacon?"


def test_a_request_filter_reaches_the_retrievers(store: NumpyVectorStore) -> None:
    advisor = RetrievalAugmentationAdvisor(VectorStoreDocumentRetriever(store, top_k=5))
    client = ChatClient(FakeChatModel(default="ok"), advisors=[advisor])
    french = RetrievalAugmentationAdvisor.Params(filter="lang == 'fr'")
    response = client.prompt("beacon lamp allumé").advisors(french).call().response()
    assert _documents(response) == ["phare"]
    spring = client.prompt("beacon lamp allumé").advisors(params={"vector_store_filter": "lang == 'fr'"})
    assert _documents(spring.call().response()) == ["phare"]


def test_per_request_search_settings_reach_the_retrievers(store: NumpyVectorStore) -> None:
    retriever = VectorStoreDocumentRetriever(store, top_k=5, scope="source == 'beacon.md'")
    client = ChatClient(FakeChatModel(default="ok"), advisors=[RetrievalAugmentationAdvisor(retriever)])
    Params = VectorStoreDocumentRetriever.Params
    one = client.prompt("beacon lamp keeper").advisors(Params(top_k=1)).call().response()
    assert len(_documents(one)) == 1
    lexical = client.prompt("paraffin").advisors(Params(mode="lexical")).call().response()
    assert _documents(lexical) == ["beacon-3"]  # the only document holding the word
    assert (lexical.documents[0].score or 0) > 1.0  # a BM25 score, not a cosine
    wide = Params(filter="source == 'tides.md'", top_k=5)
    widened = client.prompt("tides").advisors(wide).call().response()
    assert _documents(widened) == []  # the scope holds against a request filter


def test_compression_reads_the_conversation_from_chat_memory(store: NumpyVectorStore) -> None:
    memory = MessageChatMemoryAdvisor(MessageWindowChatMemory(InMemoryChatMemoryRepository()))
    helper = FakeChatModel(["In winter, when does the keeper light the beacon lamp?"])
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreDocumentRetriever(store, top_k=1), transformers=[CompressionQueryTransformer(helper)]
    )
    model = FakeChatModel(["At dusk.", "At four."])
    client = ChatClient(model, advisors=[memory, advisor])
    first = client.prompt("When is the beacon lamp lit?").advisors(conversation_id="c1").call().response()
    assert helper.prompts == []  # no history yet: nothing to compress, no model call
    assert _documents(first) == ["beacon-1"]
    second = client.prompt("And in winter?").advisors(conversation_id="c1").call().response()
    assert "user: When is the beacon lamp lit?\nassistant: At dusk." in helper.prompts[0].user_text
    assert _documents(second) == ["beacon-2"]
    assert model.prompts[1].messages[-1].metadata["question"] == "And in winter?"


def test_chat_memory_in_the_same_store_is_never_retrieved(store: NumpyVectorStore) -> None:
    memory = VectorStoreChatMemoryAdvisor(store, top_k=4)
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreDocumentRetriever(store, top_k=20), joiner=ReciprocalRankDocumentJoiner()
    )
    client = ChatClient(FakeChatModel(default="The beacon lamp is lit at dusk."), advisors=[memory, advisor])
    for _ in range(2):
        response = (
            client.prompt("beacon lamp")
            .advisors(
                RetrievalAugmentationAdvisor.Params(filter="turn >= 0 OR lang IS NULL"), conversation_id="a"
            )
            .call()
            .response()
        )
    remembered = {d.id for d in store.get() if d.metadata.get("conversation_id") == "a"}
    assert remembered and not set(_documents(response)) & remembered
    assert set(_documents(response)) == {"beacon-2"}  # the one document without `lang`


def test_streaming_returns_the_documents_too(store: NumpyVectorStore) -> None:
    advisor = RetrievalAugmentationAdvisor(VectorStoreDocumentRetriever(store, top_k=2))
    stream = ChatClient(FakeChatModel(default="At dusk."), advisors=[advisor]).prompt("beacon lamp").stream()
    assert "".join(stream.content()) == "At dusk."
    assert len(stream.documents) == 2


def test_the_offline_answerer_quotes_the_documents(store: NumpyVectorStore) -> None:
    advisor = RetrievalAugmentationAdvisor(VectorStoreDocumentRetriever(store, top_k=3))
    answer = (
        ChatClient(ExtractiveChatModel(), advisors=[advisor])
        .prompt("When is the beacon lamp lit?")
        .call()
        .content()
    )
    assert "lit at dusk" in answer and "beacon.md" in answer


def test_bad_construction_and_requests(store: NumpyVectorStore) -> None:
    with pytest.raises(InvalidRequestError, match="retrievers"):
        RetrievalAugmentationAdvisor([])
    with pytest.raises(InvalidRequestError, match="retrievers"):
        RetrievalAugmentationAdvisor(store)  # type: ignore[arg-type]  # a store is not a retriever
    retriever = VectorStoreDocumentRetriever(store)
    with pytest.raises(InvalidRequestError, match="transformers must be QueryTransformer"):
        RetrievalAugmentationAdvisor(retriever, transformers=[MaxPerSource(1)])  # type: ignore[list-item]
    with pytest.raises(InvalidRequestError, match="post_processors must be DocumentPostProcessor"):
        RetrievalAugmentationAdvisor(retriever, post_processors=MaxPerSource(1))  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="expander must be QueryExpander"):
        RetrievalAugmentationAdvisor(retriever, expander=retriever)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="augmenter must be QueryAugmenter"):
        RetrievalAugmentationAdvisor(retriever, augmenter="{query}")  # type: ignore[arg-type]
    advisor = RetrievalAugmentationAdvisor(retriever)
    with pytest.raises(InvalidRequestError, match="needs user text"):
        client = ChatClient(FakeChatModel(default="x"), advisors=[advisor])
        client.prompt(Prompt([SystemMessage("Be brief.")])).call().content()


def test_the_worked_example_in_the_docs_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "retrieval.md").read_text(encoding="utf-8")
    example = docs[docs.index("## A worked example") :].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/retrieval.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "In winter, when does the keeper light the beacon lamp?",
        "['winter', 'dusk', 'tides']",
    ]
    assert "four" in namespace["reply"].chat_response.text  # the offline answerer quotes the winter passage
