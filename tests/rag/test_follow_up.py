"""Follow-ups searched with the conversation: `ConversationQueryExpander` in the QuestionAnswerAdvisor."""

from __future__ import annotations

import numpy as np
import pytest

from rag import Document, HashingEmbedding
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.chat.messages import AssistantMessage, Message, UserMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError
from rag.memory import MessageWindowChatMemory
from rag.models import ExtractiveChatModel
from rag.retrieval import ConversationQueryExpander, Query
from rag.retrieval.follow_up import fuse_rankings, query_similarity
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore

PAGES = {
    "install": "Your package manager has valgrind: apt install valgrind.",
    "usage": "Start your program under valgrind: valgrind --leak-check=yes ./myprog. It runs slowly.",
    "tests": "Run the test suite with make check. To run one test only, run make check TEST=name.",
    "lint": "Run the linter with make lint before you push.",
    "tides": "Spring tides flood the causeway twice a month.",
}


@pytest.fixture
def store() -> RecordingStore:
    inner = NumpyVectorStore(HashingEmbedding())
    inner.add([Document(name, text, {"source": f"{name}.md"}) for name, text in PAGES.items()])
    return RecordingStore(inner)


def _client(store: RecordingStore, expander: ConversationQueryExpander | None) -> ChatClient:
    advisors = [
        MessageChatMemoryAdvisor(MessageWindowChatMemory()),
        QuestionAnswerAdvisor(store, top_k=2, mode="lexical", expander=expander),
    ]
    return ChatClient(ExtractiveChatModel(), advisors=advisors)


def _ask(client: ChatClient, text: str) -> list[str]:
    response = client.prompt(text).advisors(conversation_id="c1").call().response()
    return [d.id for d in response.documents]


def test_the_first_question_is_one_search_as_before(store: RecordingStore) -> None:
    found = _ask(_client(store, ConversationQueryExpander()), "How do I install valgrind?")
    assert found[0] == "install"
    assert [(r.query, r.top_k) for r in store.requests] == [("How do I install valgrind?", 2)]


def test_a_follow_up_is_searched_alone_and_after_the_previous_question(store: RecordingStore) -> None:
    client = _client(store, ConversationQueryExpander())
    _ask(client, "How do I install valgrind?")
    store.requests.clear()
    found = _ask(client, "And how do I run it?")
    assert [(r.query, r.top_k) for r in store.requests] == [
        ("And how do I run it?", 6),
        ("How do I install valgrind?\nAnd how do I run it?", 6),
    ]
    assert found == ["usage", "tests"]
    # Without the expander, the same follow-up finds the pages that say "run" most.
    plain = _client(RecordingStore(store.inner), None)
    _ask(plain, "How do I install valgrind?")
    assert _ask(plain, "And how do I run it?")[0] == "tests"


def test_only_user_questions_are_joined_and_only_the_last_ones() -> None:
    history: list[Message] = [
        UserMessage("one?"),
        AssistantMessage("an answer"),
        UserMessage("two?"),
        UserMessage("  "),
    ]
    queries = ConversationQueryExpander(questions=1).expand(Query("three?", tuple(history)))
    assert [q.text for q in queries] == ["three?", "two?\nthree?"]
    assert all(q.history == tuple(history) for q in queries)
    with pytest.raises(InvalidRequestError, match="questions must be an integer >= 1, got 0"):
        ConversationQueryExpander(questions=0)


def test_the_fused_order_needs_both_questions(store: RecordingStore) -> None:
    candidates = store.inner.get(["tests", "usage", "install"])
    similarity = query_similarity(store.inner, ["run it", "install valgrind run it"], candidates)
    assert similarity.shape == (3, 2)
    assert similarity[2, 0] == 0.0 < similarity[1, 0]  # "install" shares no word with "run it"
    fused = fuse_rankings([candidates[:2], candidates[2:]], similarity, top_k=3)
    assert [d.id for d in fused] == ["usage", "tests", "install"]
    with pytest.raises(InvalidRequestError, match=r"one row per candidate .* \(3, 2\), got \(2, 2\)"):
        fuse_rankings([candidates[:2], candidates[2:]], np.zeros((2, 2)), top_k=3)
