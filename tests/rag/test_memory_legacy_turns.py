"""`rag.memory.legacy_turns`: the exact shape of a turn written before the marker, and the repair."""

from __future__ import annotations

import doctest

import rag.memory
import rag.memory.legacy_turns as legacy
from rag.documents import Document
from rag.embeddings import HashingEmbedding
from rag.retrieval import DocumentsView
from rag.retrieval.scope import KIND_KEY, MEMORY_MARKER
from stores import NumpyVectorStore

OLD = {"conversation_id": "c", "message_type": "assistant", "turn": 3, "timestamp": 1_700_000_000}


def test_the_module_examples_hold() -> None:
    result = doctest.testmod(legacy)
    assert result.attempted > 0 and result.failed == 0


def test_only_the_exact_old_shape_is_a_turn() -> None:
    assert legacy.is_legacy_turn(OLD)  # an integer timestamp is a time too
    assert not legacy.is_legacy_turn({**OLD, "turn": 0})
    assert not legacy.is_legacy_turn({**OLD, "conversation_id": 7})
    assert not legacy.is_legacy_turn({k: v for k, v in OLD.items() if k != "timestamp"})
    assert not legacy.is_legacy_turn({**OLD, KIND_KEY: "chat_memory"})


def test_the_repair_is_exported_lazily_and_marks_in_batches() -> None:
    assert rag.memory.mark_legacy_turns is legacy.mark_legacy_turns
    store = NumpyVectorStore(HashingEmbedding())
    store.add(Document(f"t{i}", f"turn {i}", {**OLD, "turn": i + 1}) for i in range(5))
    store.add([Document("d", "a document", {"source": "a.md", "chunk_index": 0})])
    legacy._BATCH, saved = 2, legacy._BATCH  # three writes of at most two turns
    try:
        assert [d.id for d in legacy.mark_legacy_turns(store, dry_run=True)] == [f"t{i}" for i in range(5)]
        assert store.count(MEMORY_MARKER) == 0 and DocumentsView(store).count() == 6
        assert len(legacy.mark_legacy_turns(store)) == 5
    finally:
        legacy._BATCH = saved
    assert store.count(MEMORY_MARKER) == 5 and DocumentsView(store).count() == 1
    assert legacy.find_legacy_turns(store) == [] and legacy.count_legacy_turns(store) == 0
