"""Document post-processors: drop near-duplicates, cap chunks per source, diversify with MMR.

Each keeps the order it is given except where it says otherwise, so they compose in any order after
a joiner or a reranker.

Example:
    >>> from rag import Document
    >>> docs = [Document("1", "Add CORS middleware.", {"source": "a.md"}),
    ...         Document("2", "add  CORS middleware", {"source": "a.md"}),
    ...         Document("3", "Path parameters.", {"source": "b.md"})]
    >>> [d.id for d in NearDuplicateFilter().process(Query("cors"), docs)]
    ['1', '3']
    >>> [d.id for d in MaxPerSource(1).process(Query("cors"), docs)]
    ['1', '3']
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, key
from rag.retrieval.mmr import mmr
from rag.retrieval.stages import Query
from rag.vectorstore import VectorStore

__all__ = ["MaxPerSource", "MaximalMarginalRelevance", "NearDuplicateFilter"]

_WORD = re.compile(r"\w+")


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidRequestError(f"{name} must be within [0, 1], got {value!r}")
    return float(value)


def _shingles(text: str) -> frozenset[tuple[str, ...]]:
    """Word pairs of the case-folded text (single words for a one-word text): punctuation and spacing
    do not count, so two copies of a chunk that differ only in those are identical here."""
    words = _WORD.findall(text.casefold())
    if len(words) < 2:
        return frozenset((word,) for word in words)
    return frozenset(itertools.pairwise(words))


_PageKey = tuple[str, str | None, str | None]
"""A page: its source, root and record id (`doc_id`, a JSON Lines record)."""


def _page_key(document: Document) -> _PageKey | None:
    meta = document.metadata
    source = meta.get("source")
    if source is None:
        return None
    root, record = meta.get("root"), meta.get("doc_id")
    return str(source), None if root is None else str(root), None if record is None else str(record)


def _page_filter(page: _PageKey) -> Filter:
    source, root, record = page
    tree: Filter = key("source") == source
    if root is not None:
        tree = tree & (key("root") == root)
    if record is not None:
        tree = tree & (key("doc_id") == record)
    return tree


def _index(document: Document) -> int | None:
    index = document.metadata.get("chunk_index")
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def _any(nodes: list[Filter]) -> Filter:
    """The OR of `nodes` as a balanced tree (a long list nests only logarithmically)."""
    if len(nodes) == 1:
        return nodes[0]
    middle = len(nodes) // 2
    return _any(nodes[:middle]) | _any(nodes[middle:])


_RADIUS = 4
"""Chunks on each side of a hit whose text stands for its page when telling copies apart."""

_Pairs = frozenset[tuple[str, ...]]
_Window = tuple[_Pairs, _Pairs]
"""The word pairs within `_RADIUS` chunks of a hit, and within one chunk more."""


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted distinct `indices` as runs of consecutive numbers: [(first, last), ...]."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def _windows(store: VectorStore, hits: list[Document]) -> list[_Window]:
    """Each hit's window, all read in one `store.get`: the chunks of its page near its `chunk_index`
    (its whole page without one; its own text without a page), their word pairs together."""
    spots = [(hit, _page_key(hit), _index(hit)) for hit in hits]
    whole = {page for _, page, index in spots if page is not None and index is None}
    near: dict[_PageKey, set[int]] = {}
    for _, page, index in spots:
        if page is not None and page not in whole and index is not None:
            near.setdefault(page, set()).update(range(index - _RADIUS - 1, index + _RADIUS + 2))
    clauses = [_page_filter(page) for page in sorted(whole, key=repr)]
    position = key("chunk_index")
    for page, indices in sorted(near.items(), key=repr):
        for first, last in _runs(sorted(indices)):
            clauses.append(_page_filter(page) & (position >= first) & (position <= last))
    chunks: dict[_PageKey | None, list[Document]] = {}
    for chunk in store.get(filter=_any(clauses)) if clauses else []:
        chunks.setdefault(_page_key(chunk), []).append(chunk)
    pairs: dict[str, _Pairs] = {}

    def union(page: _PageKey, index: int | None, radius: int) -> _Pairs:
        inside = [c for c in chunks.get(page, []) if index is None or abs((_index(c) or 0) - index) <= radius]
        for chunk in inside:
            if chunk.id not in pairs:
                pairs[chunk.id] = _shingles(chunk.text)
        return frozenset().union(*(pairs[chunk.id] for chunk in inside))

    windows: list[_Window] = []
    for hit, page, index in spots:
        if page is None:
            windows.append((_shingles(hit.text), _shingles(hit.text)))
        else:
            windows.append((union(page, index, _RADIUS), union(page, index, _RADIUS + 1)))
    return windows


class NearDuplicateFilter:
    """Drops a document that repeats one kept before it, from the same page or from a copy of its page.

    Texts are compared as sets of consecutive word pairs, ignoring case, punctuation and spacing; two
    chunks whose Jaccard similarity is at least `threshold` are near-identical (1.0: only the same words
    in the same order). A near-identical chunk is dropped (the better-ranked one stays) when both come
    from one page (`source`, `root` and `doc_id` alike; a document without `source` is a page of its
    own) or when their pages are copies (a README copied into a docs folder, an `all.html` that repeats
    every page). Different pages that share a paragraph are not copies, and without a `store` chunks
    of different pages are always kept.

    Copies are told apart by the text around the two chunks, read from `store`. A chunk's window is
    the chunks of its page within 4 of its `chunk_index` (the whole page for a chunk without one), its
    wide window those within 5; the pages are copies when one chunk's window has at least `threshold`
    of its word pairs (its chunks' together) in the other's wide window. A page of at most 5 chunks is
    its own window, so for such pages this is whole-page containment, exactly. A longer page is judged
    by the 9 chunks around the hit, which estimates whole-page containment when the copy is one run
    of text (an `all.html`; the extra chunk absorbs chunk boundaries that fall elsewhere in the copy):
    two long pages that share a run of 9 chunks around the hit count as copies though the rest
    differs, and a copy whose sections are reordered may be missed.

    Cost: O(n^2) set comparisons for n documents, plus one `store.get` of at most 11 chunks around
    each document that has a near-identical one in another page, and their word pairs: bounded by
    the number of hits, whatever the length of the pages (every ingested chunk has a `chunk_index`).

    Example:
        >>> from rag import Document
        >>> docs = [Document("a", "The beacon is lit at dusk."), Document("b", "the beacon is lit at dusk")]
        >>> [d.id for d in NearDuplicateFilter(threshold=1.0).process(Query("beacon"), docs)]
        ['a']
        >>> shared = [Document(i, "Set the API key first.", {"source": s}) for i, s in (("c", "chat.md"),
        ...           ("e", "embed.md"))]
        >>> [d.id for d in NearDuplicateFilter().process(Query("key"), shared)]  # two pages, one paragraph
        ['c', 'e']
    """

    def __init__(self, threshold: float = 0.9, *, store: VectorStore | None = None) -> None:
        self.threshold = _unit("threshold", threshold)
        self.store = store

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        shingles = [_shingles(document.text) for document in documents]
        keys = [_page_key(document) for document in documents]
        near = {
            (i, j) for j in range(len(documents)) for i in range(j) if self._similar(shingles[i], shingles[j])
        }
        # Only a pair from two pages needs the text around it, and only when a store can tell.
        between = sorted({k for pair in near if keys[pair[0]] != keys[pair[1]] for k in pair})
        around: dict[int, _Window] = {}
        if self.store is not None and between:
            windows = _windows(self.store, [documents[k] for k in between])
            around = dict(zip(between, windows, strict=True))
        kept: list[int] = []
        for j in range(len(documents)):
            if not any((i, j) in near and self._copies(i, j, keys, around) for i in kept):
                kept.append(j)
        return [documents[j] for j in kept]

    def _similar(self, a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
        if not a or not b:
            return a == b  # two texts without words are the same (empty) text
        return len(a & b) / len(a | b) >= self.threshold

    def _copies(self, i: int, j: int, keys: list[_PageKey | None], around: dict[int, _Window]) -> bool:
        """Whether near-identical documents `i` and `j` come from one page or from copies around them."""
        if keys[i] == keys[j]:  # one page, or two documents without a source compared by their text
            return True
        if i not in around or j not in around:
            return False
        (a, wider_a), (b, wider_b) = around[i], around[j]
        if not a or not b:
            return a == b
        return len(a & wider_b) >= self.threshold * len(a) or len(b & wider_a) >= self.threshold * len(b)


class MaxPerSource:
    """Keeps at most `limit` documents from each source (metadata `key`, "source" by default).

    The first ones, in the order given, are kept. A document without the key is its own source.

    Example:
        >>> from rag import Document
        >>> docs = [Document(str(i), "x", {"source": "a.md" if i < 3 else "b.md"}) for i in range(5)]
        >>> [d.id for d in MaxPerSource(2).process(Query("x"), docs)]
        ['0', '1', '3', '4']
    """

    def __init__(self, limit: int, *, key: str = "source") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidRequestError(f"limit must be an integer >= 1, got {limit!r}")
        self.limit = limit
        self.key = key

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        counts: dict[str, int] = {}
        kept: list[Document] = []
        for document in documents:
            value = document.metadata.get(self.key)
            # repr keeps 1 and "1" apart; the id stands in for a missing source.
            source = repr(value) if value is not None else f"id:{document.id}"
            counts[source] = counts.get(source, 0) + 1
            if counts[source] <= self.limit:
                kept.append(document)
        return kept


class MaximalMarginalRelevance:
    """Reorders (and optionally cuts) the documents by maximal marginal relevance.

    Relevance is the documents' order as given: their scores when all have one, else their ranks.
    Similarity between documents is the cosine of their vectors: their `Document.embedding` when
    every one has one (of one size), otherwise their texts embedded with `embedding`. `diversity` 0
    keeps the order, 1 picks by novelty alone after the first (see `rag.retrieval.mmr`). `top_k`
    None keeps every document.

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> docs = [Document("a", "beacon lamp lit"), Document("a2", "beacon lamp lit"),
        ...         Document("b", "tides flood the causeway")]
        >>> mmr_ = MaximalMarginalRelevance(HashingEmbedding(), diversity=0.8, top_k=2)
        >>> [d.id for d in mmr_.process(Query("beacon"), docs)]
        ['a', 'b']
    """

    def __init__(
        self, embedding: EmbeddingModel, diversity: float = 0.5, *, top_k: int | None = None
    ) -> None:
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
            raise InvalidRequestError(f"top_k must be an integer >= 0 or None, got {top_k!r}")
        self.embedding = embedding
        self.diversity = _unit("diversity", diversity)
        self.top_k = top_k

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        count = len(documents) if self.top_k is None else min(self.top_k, len(documents))
        if count == 0:
            return []
        scores = [document.score for document in documents]
        relevance = (
            [float(s) for s in scores if s is not None]
            if all(s is not None for s in scores)
            else [float(len(documents) - i) for i in range(len(documents))]
        )
        picked = mmr(None, self._vectors(documents), relevance, count, self.diversity)
        return [documents[index] for index in picked]

    def _vectors(self, documents: Sequence[Document]) -> npt.NDArray[np.float64]:
        stored = [document.embedding for document in documents]
        if all(v is not None for v in stored) and len({v.shape for v in stored if v is not None}) == 1:
            return np.stack([np.asarray(v, dtype=np.float64) for v in stored if v is not None])
        # Some lack a vector (or they come from different stores): embed every text with one model.
        return np.asarray(self.embedding.embed([d.text for d in documents]), dtype=np.float64)
