"""Isolation: no conversation id, however hostile, lets one conversation see another's turns.

Every advisor, on both backends it can use (repositories: in memory and SQLite; vector stores: numpy and
embedded Chroma), runs a few interleaved conversations with generated ids. Each turn carries a unique
marker; every marker a model receives must belong to the conversation being asked.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.advisors.memory import ChatMemoryAdvisor
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.memory_prompt import PromptChatMemoryAdvisor
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.chat import Prompt
from rag.client import ChatClient
from rag.documents import SearchRequest
from rag.memory import InMemoryChatMemoryRepository, MessageWindowChatMemory, SQLiteChatMemoryRepository
from rag.testing import FakeChatModel, FakeEmbedding
from stores import ChromaVectorStore, NumpyVectorStore

HOSTILE = [
    "x' OR conversation_id != '",
    '" || true',
    "' OR 1=1 --",
    "a\\' OR \\'b",
    "conversation_id IS NOT NULL",
    "NOT (conversation_id == 'x')",
    "%",
    "*",
    "$ne",
    "null",
    "",  # replaced below: empty ids are refused, tested elsewhere
    "會話 🚢 ß",
    "e\u0301",  # combining accent: differs from the precomposed form below
    "\u00e9",
    "tab\there\nnewline",
    "x" * 1024,
    "y" * 1023 + "'",
]
HOSTILE = [h for h in HOSTILE if h]
_ids = st.sampled_from(HOSTILE) | st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
_MARK = re.compile(r"zq\d+zq")
_counter = itertools.count()
_owner: dict[str, str] = {}  # marker -> conversation id, over all examples of a backend
_turns: dict[tuple[int, str], int] = {}  # (advisor, conversation id) -> turns completed


def answer(prompt: Prompt) -> str:
    found = _MARK.findall(prompt.user_text)
    return f"noted {found[-1]}-r" if found else "nothing new"


def _backend(name: str, folder: Path) -> tuple[ChatMemoryAdvisor, Callable[[], None]]:
    kind, store = name.split("-")
    if kind in ("message", "prompt"):
        repo = (
            SQLiteChatMemoryRepository(folder / "m.sqlite")
            if store == "sqlite"
            else InMemoryChatMemoryRepository()
        )
        memory = MessageWindowChatMemory(repo, max_messages=50)
        cls = MessageChatMemoryAdvisor if kind == "message" else PromptChatMemoryAdvisor
        closer = repo.close if isinstance(repo, SQLiteChatMemoryRepository) else (lambda: None)
        return cls(memory), closer
    if store == "chroma":
        chroma = ChromaVectorStore(FakeEmbedding(), collection="memory", path=str(folder / "chroma"))
        return VectorStoreChatMemoryAdvisor(chroma, top_k=50), chroma.close
    return VectorStoreChatMemoryAdvisor(NumpyVectorStore(FakeEmbedding()), top_k=50), lambda: None


BACKENDS = [
    "message-memory",
    "message-sqlite",
    "prompt-memory",
    "prompt-sqlite",
    "vector-numpy",
    "vector-chroma",
]


@pytest.fixture(scope="module", params=BACKENDS)
def advisor(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChatMemoryAdvisor]:
    made, close = _backend(request.param, tmp_path_factory.mktemp(request.param))
    yield made
    close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_ids, min_size=2, max_size=3, unique=True))
def test_conversations_never_see_each_other(advisor: ChatMemoryAdvisor, ids: list[str]) -> None:
    client = ChatClient(FakeChatModel(answer), advisors=[advisor])
    for _round in range(2):
        for cid in ids:  # interleaved: a turn of each conversation in turn
            marker = f"zq{next(_counter)}zq"
            _owner[marker] = _owner[f"{marker}-r"] = cid
            client.prompt(f"tell me about the lighthouse {marker}").advisors(
                conversation_id=cid
            ).call().content()
            _turns[id(advisor), cid] = _turns.get((id(advisor), cid), 0) + 1
    for cid in ids:
        model = FakeChatModel(default="ok")
        ChatClient(model, advisors=[advisor]).prompt("tell me about the lighthouse").advisors(
            conversation_id=cid
        ).call().content()
        _turns[id(advisor), cid] += 1
        seen = "\n".join(m.text or "" for m in model.prompts[0].messages)
        markers = set(re.findall(r"zq\d+zq(?:-r)?", seen))
        assert markers, f"conversation {cid!r} remembered nothing"
        strangers = {m: _owner[m] for m in markers if _owner[m] != cid}
        assert not strangers, f"conversation {cid!r} saw turns of {set(strangers.values())!r}"
        if isinstance(advisor, VectorStoreChatMemoryAdvisor):
            # The filter tree alone selects exactly this conversation's documents (no re-check involved).
            search = SearchRequest("lighthouse", top_k=10_000, filter=advisor.conversation_filter(cid))
            found = advisor.store.similarity_search(search)
            assert {d.metadata["conversation_id"] for d in found} == {cid}
            assert (
                len(found)
                == advisor.store.count(advisor.conversation_filter(cid))
                == 2 * _turns[id(advisor), cid]
            )
