"""Follow-up questions searched with the conversation, without a language model.

"And how do I run it?" names nothing to search for: the words that matter ("valgrind") were in the
question before. A chat model can rewrite the follow-up into a standalone question
(`CompressionQueryTransformer`); offline there is no model, so `ConversationQueryExpander` searches
twice instead, with the follow-up alone and with the previous user question(s) joined to it, and
the candidates of both searches are ordered by how close each is to both questions at once
(`fuse_rankings`): the passages that match the follow-up's own words and the conversation's.

Example:
    >>> from rag.chat.messages import AssistantMessage, UserMessage
    >>> history = [UserMessage("How do I install valgrind?"), AssistantMessage("apt install valgrind")]
    >>> [q.text for q in ConversationQueryExpander().expand(Query("And how do I run it?", history))]
    ['And how do I run it?', 'How do I install valgrind?\\nAnd how do I run it?']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.chat.messages import Message, UserMessage
from rag.documents import Document
from rag.embeddings.base import normalize_rows
from rag.errors import InvalidRequestError
from rag.retrieval.stages import Query
from rag.vectorstore import VectorStore

__all__ = [
    "ConversationQueryExpander",
    "earlier_questions",
    "fuse_rankings",
    "query_similarity",
    "query_vectors",
]


def earlier_questions(history: Sequence[Message], count: int) -> list[str]:
    """The texts of the last `count` user messages of `history`, oldest first (blank ones skipped).

    Example:
        >>> earlier_questions([UserMessage("a"), UserMessage(" "), UserMessage("b")], 5)
        ['a', 'b']
    """
    texts = [m.text.strip() for m in history if isinstance(m, UserMessage) and m.text.strip()]
    return texts[-count:] if count > 0 else []


class ConversationQueryExpander:
    """Expands a follow-up into itself and itself after the previous `questions` user questions.

    A `QueryExpander` that needs no model: with no earlier user question in the query's history (the
    first question of a conversation, `rag ask`) it returns the query alone, so nothing changes there.
    Only user questions are joined, never the answers: an extractive answer quotes passages, and
    searching with them would find those passages again rather than what the user asked.

    Limits: words are joined, not understood. The earlier question's words weigh as much as the
    follow-up's in the joined search; a follow-up that changes the subject still finds its own
    passages when they match the joined question too (they share its words), but in a large
    collection about the earlier subject they may rank below passages found by both searches.
    A model's rewriting (`CompressionQueryTransformer`) understands the conversation; this does not.

    Example:
        >>> from rag.chat.messages import UserMessage
        >>> ConversationQueryExpander(questions=2).expand(Query("Why?"))[0].text
        'Why?'
        >>> history = [UserMessage("tides?"), UserMessage("and the moon?")]
        >>> ConversationQueryExpander(questions=2).expand(Query("why?", history))[1].text
        'tides?\\nand the moon?\\nwhy?'
    """

    def __init__(self, questions: int = 1) -> None:
        if isinstance(questions, bool) or not isinstance(questions, int) or questions < 1:
            raise InvalidRequestError(f"questions must be an integer >= 1, got {questions!r}")
        self.questions = questions

    def expand(self, query: Query) -> list[Query]:
        earlier = earlier_questions(query.history, self.questions)
        if not earlier:
            return [query]
        return [query, query.with_text("\n".join([*earlier, query.text]))]

    def __repr__(self) -> str:
        return f"ConversationQueryExpander(questions={self.questions})"


def fuse_rankings(
    rankings: Sequence[Sequence[Document]], similarity: npt.NDArray[np.floating[Any]], top_k: int
) -> list[Document]:
    """The `top_k` candidates most similar to every query at once: by the product of their similarities.

    `rankings[j]` are the hits of query j; `similarity[i, j]` is the cosine similarity of the i-th
    distinct candidate (in order of first appearance over the rankings) with query j. A candidate's
    relevance is the product over the queries of `max(similarity, 0)`: high only when it is close to
    every query, "the follow-up's words AND the conversation's". Every candidate is scored against
    every query, so one found by a single search still competes. Equal products go to the candidate
    seen first. Each keeps the score its search gave it, so a listing's numbers keep their meaning;
    only the order is the fusion's.

    Example:
        >>> import numpy as np
        >>> a, b, c = (Document(i, i, score=s) for i, s in zip("abc", (0.9, 0.6, 0.8)))
        >>> similarity = np.array([[0.9, 0.1], [0.5, 0.6], [0.0, 0.9]])  # a, b, c against 2 queries
        >>> [(d.id, d.score) for d in fuse_rankings([[a, b], [c, b]], similarity, top_k=2)]
        [('b', 0.6), ('a', 0.9)]
    """
    first: dict[str, Document] = {}
    for ranking in rankings:
        for document in ranking:
            first.setdefault(document.id, document)
    candidates = list(first.values())
    if similarity.shape != (len(candidates), len(rankings)):
        raise InvalidRequestError(
            f"similarity must have one row per candidate and one column per ranking "
            f"({len(candidates)}, {len(rankings)}), got {similarity.shape!r}"
        )
    relevance = np.prod(np.clip(similarity, 0.0, None), axis=1)
    order = sorted(range(len(candidates)), key=lambda i: (-float(relevance[i]), i))
    return [candidates[i] for i in order[:top_k]]


def query_vectors(store: VectorStore, queries: Sequence[str]) -> npt.NDArray[np.float32]:
    """The queries embedded by the store's model in one call, as unit rows: what the store computes
    for each, so searches given them (`SearchRequest.with_query_vector`) embed nothing again.

    Example:
        >>> from types import SimpleNamespace
        >>> from rag import HashingEmbedding
        >>> store = SimpleNamespace(embedding=HashingEmbedding(dimensions=8))  # any store's model
        >>> query_vectors(store, ["a", "b"]).shape
        (2, 8)
    """
    model = store.embedding
    return normalize_rows(model.embed(list(queries)), model=model.name)


def query_similarity(
    store: VectorStore,
    queries: Sequence[str],
    candidates: Sequence[Document],
    vectors: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """The cosine similarity of each candidate (rows) with each query (columns), from the stored vectors.

    One read of the candidates' vectors, and one embedding call for the queries unless their
    `vectors` are given (`query_vectors`, one row per query). A candidate the store no longer holds
    gets 0.
    """
    model = store.embedding
    stored = store.get([d.id for d in candidates], include_embeddings=True)
    held = {d.id: d.embedding for d in stored if d.embedding is not None}
    matrix = np.zeros((len(candidates), int(model.dimensions)), np.float32)
    for i, document in enumerate(candidates):
        vector = held.get(document.id)
        if vector is not None:
            matrix[i] = _unit(np.asarray(vector, np.float32))
    embedded = model.embed(list(queries)) if vectors is None else vectors
    asked = np.stack([_unit(row) for row in np.asarray(embedded, np.float32)])
    return matrix @ asked.T


def _unit(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
