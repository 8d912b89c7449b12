"""Concurrency: 32 threads, 200 interleaved conversations, one SQLite file and one vector store."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.chat import Prompt
from rag.client import ChatClient
from rag.filters import key
from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository
from rag.testing import FakeChatModel, FakeEmbedding
from stores import NumpyVectorStore

THREADS = 32
CONVERSATIONS = 200
TURNS = 3
_TAG = re.compile(r"<(c\d+)/t\d+>")


def test_threads_lose_no_turn_and_mix_none(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    # Two repository objects on one file: threads of one process also meet on SQLite's own locking.
    repos = [SQLiteChatMemoryRepository(path), SQLiteChatMemoryRepository(path)]
    memories = [MessageWindowChatMemory(repo, max_messages=2 * TURNS) for repo in repos]
    store = NumpyVectorStore(FakeEmbedding())
    vector = VectorStoreChatMemoryAdvisor(store, top_k=2 * TURNS)
    mixed: list[str] = []

    def answer(prompt: Prompt) -> str:
        asker = _TAG.findall(prompt.user_text)[-1]
        seen = set(_TAG.findall("\n".join(m.text or "" for m in prompt.messages)))
        if seen != {asker}:
            mixed.append(f"{asker} saw {sorted(seen)}")
        return f"reply {prompt.user_text}"

    model = FakeChatModel(answer)
    clients = [ChatClient(model, advisors=[MessageChatMemoryAdvisor(m), vector]) for m in memories]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            mine = range(n, CONVERSATIONS, THREADS)
            for turn in range(TURNS):
                for c in mine:  # interleaved: one turn of each of this thread's conversations at a time
                    spec = (
                        clients[c % 2]
                        .prompt(f"question <c{c}/t{turn}>")
                        .advisors(conversation_id=f"conv-{c}")
                    )
                    if n % 2:
                        "".join(spec.stream().content())
                    else:
                        spec.call().content()
        except BaseException as exc:  # reported below, with the thread's failure
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert mixed == []
    reader = SQLiteChatMemoryRepository(path)
    assert reader.count_messages() == CONVERSATIONS * TURNS * 2
    for c in range(CONVERSATIONS):
        expected = [
            text for t in range(TURNS) for text in (f"question <c{c}/t{t}>", f"reply question <c{c}/t{t}>")
        ]
        assert [m.text for m in reader.find(f"conv-{c}")] == expected
        docs = store.get(filter=key("conversation_id") == f"conv-{c}")
        assert sorted((d.metadata["turn"], d.metadata["message_type"], d.text) for d in docs) == sorted(
            (t + 1, kind, text)
            for t in range(TURNS)
            for kind, text in (
                ("user", f"question <c{c}/t{t}>"),
                ("assistant", f"reply question <c{c}/t{t}>"),
            )
        )
    assert store.count() == CONVERSATIONS * TURNS * 2
    for repo in (*repos, reader):
        repo.close()
