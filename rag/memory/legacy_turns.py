"""Chat-memory turns written before the memory marker existed: find them, count them, mark them.

`VectorStoreChatMemoryAdvisor` marks every turn it writes with `rag:kind = 'chat_memory'`, and every
document search leaves marked records out. Turns written by versions before the marker carry none:
searches return them as documents, and the advisor's own recall (which reads marked records only)
no longer finds them. Those versions wrote exactly four metadata keys (`conversation_id`,
`message_type` = `user` or `assistant`, `turn`, `timestamp`) and nothing else, so a record is taken for
an unmarked turn only when its metadata is exactly that: a chunk written by `rag ingest` always carries
`source` and `chunk_index`, and a document of your own with any further key is never matched.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> old = {"conversation_id": "c1", "message_type": "user", "turn": 1, "timestamp": 1.7e9}
    >>> store.add([Document("t", "My boat is the Gull.", old),
    ...            Document("d", "Boats.", {**old, "source": "log.jsonl", "chunk_index": 0})])
    >>> [d.id for d in mark_legacy_turns(store)]
    ['t']
    >>> store.get(["t"])[0].metadata["rag:kind"], count_legacy_turns(store)
    ('chat_memory', 0)
"""

from __future__ import annotations

from collections.abc import Mapping

from rag.documents import Document, MetadataValue
from rag.filters import Filter, key
from rag.retrieval.scope import CHAT_MEMORY_KIND, KIND_KEY
from rag.vectorstore import VectorStore

__all__ = [
    "LEGACY_TURN_KEYS",
    "count_legacy_turns",
    "find_legacy_turns",
    "is_legacy_turn",
    "legacy_turn_filter",
    "mark_legacy_turns",
]

LEGACY_TURN_KEYS = frozenset({"conversation_id", "message_type", "turn", "timestamp"})
"""The metadata keys, and the only ones, of a turn written before the marker."""

_ROLES = ("user", "assistant")
_BATCH = 1000  # records re-written per `add`: bounded memory and request size on a server


def legacy_turn_filter() -> Filter:
    """The filter tree that narrows a store to candidate unmarked turns (`is_legacy_turn` decides).

    Example:
        >>> "'rag:kind' IS NULL" in str(legacy_turn_filter())
        True
    """
    return (
        key(KIND_KEY).is_null()
        & key("conversation_id").is_not_null()
        & key("message_type").in_(_ROLES)
        & key("turn").is_not_null()
        & key("timestamp").is_not_null()
        & key("source").is_null()
        & key("chunk_index").is_null()
    )


def is_legacy_turn(metadata: Mapping[str, MetadataValue]) -> bool:
    """Whether `metadata` is exactly what the memory advisor wrote before the marker.

    Example:
        >>> is_legacy_turn({"conversation_id": "c", "message_type": "user", "turn": 2, "timestamp": 1.0})
        True
        >>> is_legacy_turn({"conversation_id": "c", "message_type": "user", "turn": 2, "timestamp": 1.0,
        ...                 "source": "chat.jsonl"})
        False
    """
    if set(metadata) != LEGACY_TURN_KEYS:
        return False
    turn, stamp = metadata["turn"], metadata["timestamp"]
    return (
        isinstance(metadata["conversation_id"], str)
        and metadata["message_type"] in _ROLES
        # bool is an int: a flag is never a turn number or a time.
        and isinstance(turn, int)
        and not isinstance(turn, bool)
        and turn >= 1
        and isinstance(stamp, int | float)
        and not isinstance(stamp, bool)
    )


def find_legacy_turns(store: VectorStore, *, include_embeddings: bool = False) -> list[Document]:
    """The store's unmarked turns, in the store's `get` order."""
    found = store.get(filter=legacy_turn_filter(), include_embeddings=include_embeddings)
    return [d for d in found if is_legacy_turn(d.metadata)]


def count_legacy_turns(store: VectorStore) -> int:
    """How many unmarked turns the store holds (a filtered count first: usually there are none)."""
    if store.count(legacy_turn_filter()) == 0:
        return 0
    return len(find_legacy_turns(store))


def mark_legacy_turns(store: VectorStore, *, dry_run: bool = False) -> list[Document]:
    """Stamp `rag:kind = 'chat_memory'` on every unmarked turn; returns the turns found (and marked).

    Each turn is written back under its own id with its text, its vector (never re-embedded) and its
    metadata plus the marker, so nothing is lost and a second run finds nothing. `dry_run` finds them
    and writes nothing. A numpy store must be saved afterwards, as after any `add`.
    """
    turns = find_legacy_turns(store, include_embeddings=True)
    if dry_run or not turns:
        return turns
    for start in range(0, len(turns), _BATCH):
        store.add(_marked(d) for d in turns[start : start + _BATCH])
    return turns


def _marked(document: Document) -> Document:
    metadata = {**document.metadata, KIND_KEY: CHAT_MEMORY_KIND}
    return Document(document.id, document.text, metadata, embedding=document.embedding)
