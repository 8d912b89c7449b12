"""Chat memory is never answered as a document, and a fixed scope is never widened by a request.

Documents and two users' vector-store chat memory share one store (numpy and embedded Chroma). The
QuestionAnswerAdvisor is then asked with many per-request filters, including ones aimed at the memory
metadata, OR-widenings and NOT tricks: no remembered turn may ever come back, and a scoped advisor
returns only documents inside its scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.advisors.memory_vector import MEMORY_MARKER, VectorStoreChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.client import ChatClient
from rag.documents import Document
from rag.errors import FilterSyntaxError, InvalidRequestError
from rag.filters import Filter, as_filter, key, matches
from rag.testing import FakeChatModel, FakeEmbedding
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore

DOCUMENTS = [
    Document(
        "acme-en", "The lighthouse lamp is lit at dusk.", {"tenant": "acme", "lang": "en", "year": 2020}
    ),
    Document(
        "acme-fr", "La lampe du phare est allumee le soir.", {"tenant": "acme", "lang": "fr", "year": 2021}
    ),
    Document(
        "globex-en", "The lighthouse keeper logs the lamp.", {"tenant": "globex", "lang": "en", "year": 2022}
    ),
    Document("plain", "A lighthouse lamp without a tenant.", {"lang": "en"}),
]

FILTERS: list[str | Filter] = [
    "conversation_id == 'alice'",
    "conversation_id == 'bob'",
    "message_type == 'user'",
    "message_type == 'USER'",
    "message_type IN ['user', 'assistant']",
    "conversation_id IS NOT NULL",
    "turn >= 0 OR turn < 0",
    "timestamp > 0",
    "lang == 'en' OR conversation_id IS NOT NULL",
    "lang == 'nope' OR NOT lang == 'nope'",
    "NOT conversation_id IS NULL",
    "NOT (lang == 'en')",
    "NOT (lang == 'en' AND tenant == 'acme')",
    "'rag:kind' == 'chat_memory'",
    "'rag:kind' IS NOT NULL",
    "NOT 'rag:kind' != 'chat_memory'",
    "'rag:kind' != 'x' OR 'rag:kind' == 'chat_memory'",
    "NOT (NOT ('rag:kind' == 'chat_memory'))",
    (key("conversation_id") == "alice") | ~(key("conversation_id") == "alice"),
    MEMORY_MARKER,
    MEMORY_MARKER | (key("lang") == "en"),
]


@pytest.fixture(params=["numpy", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    embedding = FakeEmbedding()
    if request.param == "numpy":
        yield NumpyVectorStore(embedding)
        return
    chroma = ChromaVectorStore(embedding, path=tmp_path / "chroma")
    yield chroma
    chroma.close()


def _remember_two_users(store: VectorStore) -> set[str]:
    """Alice and Bob talk about the lighthouse through a memory advisor on `store`; their turns' ids."""
    memory = VectorStoreChatMemoryAdvisor(store, top_k=4)
    client = ChatClient(FakeChatModel(default="The lighthouse lamp answer."), advisors=[memory])
    for user in ("alice", "bob"):
        for question in ("Where is the lighthouse lamp?", "Is the lighthouse lamp lit at dusk?"):
            client.prompt(question).advisors(conversation_id=user).call().content()
    remembered = {d.id for d in store.get() if d.metadata.get("conversation_id") in ("alice", "bob")}
    assert len(remembered) == 8
    return remembered


def _retrieved(advisor: QuestionAnswerAdvisor, filter: str | Filter | None = None) -> list[Document]:
    client = ChatClient(FakeChatModel(default="ok"), advisors=[advisor])
    spec = client.prompt("lighthouse lamp dusk")
    if filter is not None:
        spec = spec.advisors(QuestionAnswerAdvisor.Params(filter=filter))
    return spec.call().response().documents


@pytest.mark.parametrize("filter", FILTERS, ids=str)
def test_no_request_filter_returns_chat_memory(store: VectorStore, filter: str | Filter) -> None:
    store.add(DOCUMENTS)
    remembered = _remember_two_users(store)
    found = _retrieved(QuestionAnswerAdvisor(store, top_k=50), filter)
    assert not {d.id for d in found} & remembered
    # What is returned is exactly the documents the request filter selects, memory aside.
    wanted = [d.id for d in DOCUMENTS if matches(as_filter(filter), d.metadata)]
    assert sorted(d.id for d in found) == sorted(wanted)


def test_default_filter_and_no_filter_never_return_memory(store: VectorStore) -> None:
    store.add(DOCUMENTS)
    remembered = _remember_two_users(store)
    for advisor in (
        QuestionAnswerAdvisor(store, top_k=50),
        QuestionAnswerAdvisor(store, top_k=50, filter="conversation_id == 'alice' OR lang == 'en'"),
    ):
        found = {d.id for d in _retrieved(advisor)}
        assert found and not found & remembered


def test_memory_recall_still_works_beside_documents(store: VectorStore) -> None:
    store.add(DOCUMENTS)
    _remember_two_users(store)
    memory = VectorStoreChatMemoryAdvisor(store, top_k=10)
    recalled = memory.recall("alice", "lighthouse lamp")
    assert len(recalled) == 4
    assert {d.metadata["conversation_id"] for d in recalled} == {"alice"}
    assert all(matches(MEMORY_MARKER, d.metadata) for d in recalled)
    # A document that merely claims a conversation id is not memory: it is never recalled.
    store.add(
        [Document("fake-turn", "lighthouse lamp", {"conversation_id": "alice", "message_type": "user"})]
    )
    assert "fake-turn" not in {d.id for d in memory.recall("alice", "lighthouse lamp")}
    assert memory.clear("alice") == 4
    assert store.get(ids=["fake-turn"]) != []


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        (None, ["acme-en", "acme-fr"]),
        ("tenant == 'globex'", []),
        ("tenant == 'globex' OR tenant == 'acme'", ["acme-en", "acme-fr"]),
        ("NOT tenant == 'acme'", []),
        ("tenant != 'acme' OR lang == 'en'", ["acme-en"]),
        ("lang == 'en'", ["acme-en"]),
        ("year >= 2021 OR tenant IS NULL", ["acme-fr"]),
        (key("lang") == "fr", ["acme-fr"]),
    ],
)
def test_scope_is_narrowed_never_widened(
    store: VectorStore, filter: str | Filter | None, expected: list[str]
) -> None:
    store.add(DOCUMENTS)
    _remember_two_users(store)
    advisor = QuestionAnswerAdvisor(
        store, top_k=50, scope="tenant == 'acme'", filter="year >= 2000 OR lang == 'fr'"
    )
    assert sorted(d.id for d in _retrieved(advisor, filter)) == expected


def test_scope_applies_to_the_default_filter_and_is_a_tree(store: VectorStore) -> None:
    store.add(DOCUMENTS)
    advisor = QuestionAnswerAdvisor(store, top_k=50, scope=key("tenant") == "globex", filter="lang == 'fr'")
    assert _retrieved(advisor) == []
    assert [d.id for d in _retrieved(advisor, "lang == 'en'")] == ["globex-en"]
    # The limits are ANDed as tree nodes, so the request's text cannot close a parenthesis early.
    assert advisor.effective_filter("lang == 'en'") == (
        (key("tenant") == "globex") & (key("lang") == "en") & ~MEMORY_MARKER
    )


def test_memory_scopes_keep_tenants_apart_in_one_store(store: VectorStore) -> None:
    acme = VectorStoreChatMemoryAdvisor(
        store, top_k=10, scope="tenant == 'acme'", metadata={"tenant": "acme"}
    )
    globex = VectorStoreChatMemoryAdvisor(
        store, top_k=10, scope=key("tenant") == "globex", metadata={"tenant": "globex"}
    )
    for advisor, word in ((acme, "anvil"), (globex, "gizmo")):
        client = ChatClient(FakeChatModel(default=f"The {word} is noted."), advisors=[advisor])
        for _ in range(2):
            client.prompt(f"Remember the {word}.").advisors(conversation_id="c1").call().content()
    # The same conversation id, two tenants: each recalls only its own turns, numbered on its own.
    for advisor, word, tenant in ((acme, "anvil", "acme"), (globex, "gizmo", "globex")):
        recalled = advisor.recall("c1", "anvil gizmo")
        assert len(recalled) == 4
        assert all(word in d.text and d.metadata["tenant"] == tenant for d in recalled)
        assert sorted({d.metadata["turn"] for d in recalled}) == [1, 2]
    assert acme.clear("c1") == 4
    assert [d.metadata["tenant"] for d in globex.recall("c1", "gizmo")] == ["globex"] * 4
    # Memory of either tenant is still never a document, even for a QA advisor scoped to the tenant.
    qa = QuestionAnswerAdvisor(store, top_k=50, scope="tenant == 'globex'")
    assert _retrieved(qa, "conversation_id == 'c1'") == []


def test_memory_metadata_must_fit_the_scope_and_leave_reserved_keys_alone(store: VectorStore) -> None:
    with pytest.raises(InvalidRequestError, match=r"falls outside the scope \"tenant == 'acme'\""):
        VectorStoreChatMemoryAdvisor(store, scope="tenant == 'acme'")
    with pytest.raises(InvalidRequestError, match=r"reserved key\(s\) \['conversation_id', 'rag:kind'\]"):
        VectorStoreChatMemoryAdvisor(store, metadata={"rag:kind": "document", "conversation_id": "x"})
    with pytest.raises(FilterSyntaxError):
        VectorStoreChatMemoryAdvisor(store, scope="tenant = 'acme'", metadata={"tenant": "acme"})
    with pytest.raises(FilterSyntaxError):
        QuestionAnswerAdvisor(store, scope="tenant = 'acme'")
