"""Chat-memory turns in the home's store, as `rag info` counts them and `rag memory mark-legacy` repairs.

Python code may give `VectorStoreChatMemoryAdvisor` the home's own store. `rag info` counts its turns
apart from the documents. Turns written before the memory marker existed carry exactly four metadata
keys and no marker: `rag memory mark-legacy` marks them, and nothing else, not even ingested JSON
Lines records that carry the same four fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import Result

from ingest import open_home
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.cli.chat import chat_memory_store
from rag.client import ChatClient
from rag.documents import Document
from rag.retrieval.scope import KIND_KEY, MEMORY_MARKER
from rag.testing import FakeChatModel

Cli = Callable[..., Result]
QUESTION = "Which lantern oil does the keeper prefer for the beacon?"
REPLY = "The keeper prefers colza oil for the beacon lantern."
OLD_TURNS = {  # what the advisor wrote before the marker: these four keys and nothing else
    "old-user": ("Which lantern oil burns longest in the beacon?", "user"),
    "old-reply": ("Colza oil burns longest in the beacon lantern.", "assistant"),
}
CHAT_LOG = [  # a chat export ingested as documents: the same four fields, plus what ingest stamps
    {"text": "Lantern oil is ordered each spring.", "conversation_id": "log", "message_type": "user",
     "turn": 1, "timestamp": 1.6e9},
    {"text": "Colza oil arrives by the supply boat.", "conversation_id": "log", "message_type": "assistant",
     "turn": 1, "timestamp": 1.6e9},
]  # fmt: skip


def _ingest(cli: Cli, root: Path, store: str) -> int:
    """Ingest a page and a JSON Lines chat log into the home; returns the number of chunks."""
    folder = root / "site"
    folder.mkdir()
    (folder / "oil.md").write_text("# Oil\n\nThe beacon lantern burns colza oil.\n", encoding="utf-8")
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CHAT_LOG), encoding="utf-8")
    result = cli("ingest", folder, "--store", store, "--json")
    assert result.exit_code == 0, result.stderr
    written: int = json.loads(result.stdout)["chunks_written"]
    assert written == 3
    return written


def _remember(home: Path, store: str) -> None:
    """One exchange remembered through the advisor today (two marked turns)."""
    with open_home(home, store=store) as opened:
        client = ChatClient(
            FakeChatModel(default=REPLY), advisors=[VectorStoreChatMemoryAdvisor(opened.store)]
        )
        client.prompt(QUESTION).advisors(conversation_id="notebook").call().content()
        opened.save()


def _write_old_turns(home: Path, store: str) -> None:
    """Two turns as the advisor wrote them before the marker existed."""
    with open_home(home, store=store) as opened:
        opened.store.add(
            Document(
                doc_id, text, {"conversation_id": "old", "message_type": kind, "turn": 1, "timestamp": 1.7e9}
            )
            for doc_id, (text, kind) in OLD_TURNS.items()
        )
        opened.save()


def _info(cli: Cli, *args: Any) -> dict[str, Any]:
    result = cli("info", *args, "--json")
    assert result.exit_code == 0, result.stderr
    facts: dict[str, Any] = json.loads(result.stdout)
    return facts


def _records(home: Path, store: str) -> dict[str, Document]:
    with open_home(home, store=store) as opened:
        return {d.id: d for d in opened.store.get(include_embeddings=True)}


# -- rag info -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_info_counts_documents_and_turns_apart(cli: Cli, rag_home: Path, tmp_path: Path, store: str) -> None:
    chunks = _ingest(cli, tmp_path, store)
    _remember(rag_home, store)
    facts = _info(cli)
    assert (facts["count"], facts["documents"], facts["chat_memory_turns"]) == (chunks + 2, chunks, 2)
    assert facts["unmarked_turns"] == 0
    text = cli("info").stdout
    assert f"records:         {chunks + 2} ({chunks} documents, 2 chat-memory turns)\n" in text


def test_info_names_unmarked_turns_and_the_command_that_marks_them(
    cli: Cli, rag_home: Path, tmp_path: Path
) -> None:
    chunks = _ingest(cli, tmp_path, "numpy")
    _write_old_turns(rag_home, "numpy")
    facts = _info(cli)
    # Unmarked turns are still documents to every command: that is why they are named.
    assert (facts["documents"], facts["chat_memory_turns"], facts["unmarked_turns"]) == (chunks + 2, 0, 2)
    line = next(line for line in cli("info").stdout.splitlines() if line.startswith("records:"))
    assert line.endswith(
        "(5 documents, 0 chat-memory turns); 2 of the documents are turns written before turns were "
        "marked: `rag memory mark-legacy` marks them"
    )


def test_info_on_an_empty_store(cli: Cli, rag_home: Path, tmp_path: Path) -> None:
    _ingest(cli, tmp_path, "numpy")
    assert cli("delete", "--filter", "chunk_index >= 0", "--yes").exit_code == 0
    facts = _info(cli)
    assert (facts["count"], facts["documents"], facts["chat_memory_turns"], facts["unmarked_turns"]) == (
        0,
        0,
        0,
        0,
    )
    assert "records:         0 (0 documents, 0 chat-memory turns)" in cli("info").stdout


# -- rag memory mark-legacy ---------------------------------------------------------------------------


def _query_texts(cli: Cli) -> list[str]:
    result = cli("query", "Which lantern oil burns longest in the beacon?", "--top-k", "10", "--json")
    assert result.exit_code == 0, result.stderr
    return [hit["text"] for hit in json.loads(result.stdout)]


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_mark_legacy_marks_old_turns_and_nothing_else(
    cli: Cli, rag_home: Path, tmp_path: Path, store: str
) -> None:
    _ingest(cli, tmp_path, store)
    _remember(rag_home, store)
    _write_old_turns(rag_home, store)
    before = _records(rag_home, store)
    assert OLD_TURNS["old-user"][0] in _query_texts(cli)  # an old turn reads as a document

    dry = cli("memory", "mark-legacy", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert (
        dry.stdout == "would mark 2 unmarked chat-memory turns in 1 conversation (dry run: nothing changed)\n"
    )
    assert "'old': 2 turns" in dry.stderr
    assert _records(rag_home, store).keys() == before.keys()
    assert all(KIND_KEY not in _records(rag_home, store)[i].metadata for i in OLD_TURNS)

    done = cli("memory", "mark-legacy")
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "marked 2 unmarked chat-memory turns in 1 conversation\n"
    after = _records(rag_home, store)
    assert after.keys() == before.keys()  # nothing lost, nothing added
    for doc_id, doc in after.items():
        old = before[doc_id]
        assert doc.text == old.text
        assert old.embedding is not None and doc.embedding is not None
        np.testing.assert_array_equal(doc.embedding, old.embedding)  # kept, not re-embedded
        expected = {**old.metadata, KIND_KEY: "chat_memory"} if doc_id in OLD_TURNS else old.metadata
        assert doc.metadata == expected  # ingested chat-log records and today's turns untouched
    assert not [t for t in _query_texts(cli) if t in {text for text, _ in OLD_TURNS.values()}]
    log = [d.metadata for d in after.values() if d.metadata.get("conversation_id") == "log"]
    assert len(log) == 2 and all(set(m) > {"turn", "timestamp", "message_type", "source"} for m in log)
    assert not [m for m in log if KIND_KEY in m]  # the ingested chat log is still documents
    facts = _info(cli)
    assert (facts["chat_memory_turns"], facts["unmarked_turns"]) == (4, 0)

    again = cli("memory", "mark-legacy")
    assert again.stdout == "marked 0 unmarked chat-memory turns in 0 conversations\n"


def test_marked_old_turns_are_recalled_by_the_advisor(cli: Cli, rag_home: Path, tmp_path: Path) -> None:
    _ingest(cli, tmp_path, "numpy")
    _write_old_turns(rag_home, "numpy")

    def recalled() -> list[str]:
        with open_home(rag_home, store="numpy") as opened:
            advisor = VectorStoreChatMemoryAdvisor(opened.store)
            return [d.id for d in advisor.recall("old", "lantern oil", top_k=4)]

    assert recalled() == []  # recall reads marked turns only: the old conversation was forgotten
    assert cli("memory", "mark-legacy").exit_code == 0
    assert recalled() == ["old-user", "old-reply"]


def test_mark_legacy_leaves_near_misses_alone(cli: Cli, rag_home: Path, tmp_path: Path) -> None:
    """Records with the four keys plus another, or with a value the advisor never wrote, are not turns."""
    _ingest(cli, tmp_path, "numpy")
    base = {"conversation_id": "c", "message_type": "user", "turn": 1, "timestamp": 1.7e9}
    near = {
        "extra-key": {**base, "author": "ann"},
        "system-role": {**base, "message_type": "system"},
        "flag-turn": {**base, "turn": True},
        "text-time": {**base, "timestamp": "yesterday"},
        "other-kind": {**base, KIND_KEY: "note"},
    }
    with open_home(rag_home, store="numpy") as opened:
        opened.store.add(Document(doc_id, "A lantern note.", meta) for doc_id, meta in near.items())
        opened.save()
    result = cli("memory", "mark-legacy")
    assert result.stdout == "marked 0 unmarked chat-memory turns in 0 conversations\n"
    with open_home(rag_home, store="numpy") as opened:
        assert opened.store.count(MEMORY_MARKER) == 0
        assert {d.id: d.metadata for d in opened.store.get(list(near))} == near


def test_mark_legacy_without_a_store_is_one_line(cli: Cli, rag_home: Path) -> None:
    result = cli("memory", "mark-legacy")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no ") and "Traceback" not in result.stderr


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_mark_legacy_chat_repairs_the_memory_rag_chat_keeps(
    cli: Cli, rag_home: Path, tmp_path: Path, store: str
) -> None:
    """Before the marker, `rag chat` wrote its long-term turns unmarked: resumed chats recalled nothing."""
    _ingest(cli, tmp_path, store)
    none = cli("memory", "mark-legacy", "--chat")
    assert (
        none.stdout
        == "marked 0 unmarked chat-memory turns in 0 conversations of rag chat's long-term memory\n"
    )
    assert not (rag_home / "chat").exists()  # nothing created where rag chat kept nothing

    def chat_memory() -> tuple[list[str], int]:
        with open_home(rag_home, store=store) as opened:
            memory, persist = chat_memory_store(opened.settings, opened)
            old = {"conversation_id": "old", "turn": 1, "timestamp": 1.7e9}
            if not memory.count():  # as rag chat wrote them before the marker
                memory.add(Document(i, t, {**old, "message_type": k}) for i, (t, k) in OLD_TURNS.items())
                persist()
            recalled = [d.id for d in VectorStoreChatMemoryAdvisor(memory).recall("old", "lantern oil")]
            marked = memory.count(MEMORY_MARKER)
            getattr(memory, "close", lambda: None)()
            return recalled, marked

    assert chat_memory() == ([], 0)
    dry = cli("memory", "mark-legacy", "--chat", "--dry-run")
    assert dry.stdout.startswith("would mark 2 unmarked chat-memory turns in 1 conversation of rag chat's")
    assert chat_memory() == ([], 0)
    done = cli("memory", "mark-legacy", "--chat")
    assert done.exit_code == 0, done.stderr
    assert chat_memory() == (["old-user", "old-reply"], 2)
    assert _info(cli)["count"] == 3  # the documents' store was not written
