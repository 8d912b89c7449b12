"""`rag.memory.legacy_turns`: the exact shape of a turn written before the marker, and the repair."""

from __future__ import annotations

import doctest
from collections.abc import Iterable

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


class _BatchCounting(NumpyVectorStore):
    """A numpy store that records the size of each `add`."""

    def __init__(self) -> None:
        super().__init__(HashingEmbedding(dimensions=8))
        self.batches: list[int] = []

    def add(self, documents: Iterable[Document]) -> None:
        batch = list(documents)
        self.batches.append(len(batch))
        super().add(batch)


def test_the_repair_is_exported_lazily_and_marks_in_batches() -> None:
    assert rag.memory.mark_legacy_turns is legacy.mark_legacy_turns
    store = _BatchCounting()
    ids = [f"t{i:04d}" for i in range(2001)]
    store.add(Document(doc_id, f"turn {i}", {**OLD, "turn": i + 1}) for i, doc_id in enumerate(ids))
    store.add([Document("d", "a document", {"source": "a.md", "chunk_index": 0})])
    store.batches.clear()
    assert [d.id for d in legacy.mark_legacy_turns(store, dry_run=True)] == ids
    assert store.count(MEMORY_MARKER) == 0 and DocumentsView(store).count() == 2002
    assert store.batches == []
    assert len(legacy.mark_legacy_turns(store)) == 2001
    assert store.batches == [1000, 1000, 1]  # bounded memory and request size on a server
    assert store.count(MEMORY_MARKER) == 2001 and DocumentsView(store).count() == 1
    assert legacy.find_legacy_turns(store) == [] and legacy.count_legacy_turns(store) == 0
