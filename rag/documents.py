"""`Document` and `SearchRequest`: the values that travel between stores, advisors and readers.

Example:
    >>> from rag import Document, SearchRequest
    >>> doc = Document("a1", "Chroma keeps vectors on disk.", {"source": "guide.md", "page": 2})
    >>> req = SearchRequest("where are vectors kept?", top_k=3, filter="source == 'guide.md'")
    >>> req.top_k, str(req.filter)
    (3, "source == 'guide.md'")
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter

__all__ = [
    "FUSIONS",
    "SCORE_NAMES",
    "SEARCH_MODES",
    "Document",
    "Fusion",
    "MetadataValue",
    "SearchMode",
    "SearchRequest",
    "check_metadata",
]

MetadataScalar: TypeAlias = str | int | float | bool
MetadataValue: TypeAlias = MetadataScalar | list[MetadataScalar]
SCORE_NAMES: tuple[str, ...] = ("cosine", "bm25", "fused")
"""The names a retrieved document's `scores` may hold (see `Document`)."""


def _check_value(doc_id: str, name: str, value: object) -> MetadataValue | None:
    if value is None:
        return None
    if isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidRequestError(f"metadata {name!r} of document {doc_id!r} is not finite: {value!r}")
        return value
    if isinstance(value, list | tuple):
        items = [_check_value(doc_id, name, v) for v in value]
        if any(v is None or isinstance(v, list) for v in items):
            raise InvalidRequestError(
                f"metadata {name!r} of document {doc_id!r} must be a list of str, int, float or bool: "
                f"{value!r}"
            )
        return items  # type: ignore[return-value]
    raise InvalidRequestError(
        f"metadata {name!r} of document {doc_id!r} has unsupported type {type(value).__name__}: {value!r}"
    )


def _check_scores(doc_id: str, scores: object) -> dict[str, float]:
    if not isinstance(scores, Mapping):
        raise InvalidRequestError(f"scores of document {doc_id!r} must be a mapping, got {scores!r}")
    checked: dict[str, float] = {}
    for name, value in scores.items():
        if name not in SCORE_NAMES:
            raise InvalidRequestError(
                f"score name {name!r} of document {doc_id!r} must be one of "
                f"{', '.join(map(repr, SCORE_NAMES))}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InvalidRequestError(
                f"score {name!r} of document {doc_id!r} must be a finite number: {value!r}"
            )
        checked[name] = float(value)
    return checked


def check_metadata(doc_id: str, metadata: Mapping[str, object]) -> dict[str, MetadataValue]:
    """Validated metadata: str keys; str/int/float/bool values or lists of them; None values dropped."""
    if not isinstance(metadata, Mapping):
        raise InvalidRequestError(f"metadata of document {doc_id!r} must be a mapping, got {metadata!r}")
    checked: dict[str, MetadataValue] = {}
    for name, value in metadata.items():
        if not isinstance(name, str) or not name:
            raise InvalidRequestError(f"metadata key {name!r} of document {doc_id!r} must be a non-empty str")
        checked_value = _check_value(doc_id, name, value)
        if checked_value is not None:
            checked[name] = checked_value
    return checked


@dataclass(frozen=True)
class Document:
    """A piece of text with metadata, as stored and as retrieved.

    `score` is set on retrieved documents (None otherwise): the ranking score of the request's mode, higher
    is better: cosine similarity (vector), BM25 (lexical) or the fused score (hybrid); see `VectorStore`.
    `scores` names the scores a search computed for the hit, so nothing is computed again to show them:
    `cosine` (the similarity `SearchRequest.similarity_threshold` compares), `bm25` and `fused`. A store
    sets what its search knew: `cosine` whenever the query was embedded (every mode but lexical, and
    lexical with a threshold), `bm25` for a lexical hit and for a hybrid hit among the lexical
    candidates, `fused` for a hybrid hit. `scores` takes no part in equality.
    `embedding`, when present, is a read-only float32 vector. Metadata keys whose value is None are
    dropped, as stores drop them.

    Example:
        >>> doc = Document("id-1", "text", {"source": "a.md", "tags": ["x", "y"]})
        >>> doc.with_score(0.8).score
        0.8
        >>> dict(doc.with_scores({"cosine": 0.8}).scores)
        {'cosine': 0.8}
    """

    id: str
    text: str
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    score: float | None = None
    embedding: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)
    scores: Mapping[str, float] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidRequestError(f"document id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.text, str):
            raise InvalidRequestError(
                f"text of document {self.id!r} must be a str, got {type(self.text).__name__}"
            )
        object.__setattr__(self, "metadata", check_metadata(self.id, self.metadata))
        object.__setattr__(self, "scores", _check_scores(self.id, self.scores))
        if self.embedding is not None:
            vector = np.array(self.embedding, dtype=np.float32, copy=True)
            if vector.ndim != 1:
                raise InvalidRequestError(f"embedding of document {self.id!r} must be one-dimensional")
            # setflags, not `flags.writeable = False`: numpy 2 leaves a small object behind every few
            # hundred of those, which keeps the allocator's arenas of dropped documents resident.
            vector.setflags(write=False)
            object.__setattr__(self, "embedding", vector)

    __hash__ = None  # type: ignore[assignment]  # metadata is a dict

    @classmethod
    def _trusted(
        cls,
        id: str,
        text: str,
        metadata: dict[str, MetadataValue],
        score: float | None = None,
        embedding: npt.NDArray[np.float32] | None = None,
        scores: dict[str, float] | None = None,
    ) -> Document:
        """A document from fields a store validated when it wrote them: for stores only, not public API.

        Skips the checks of `Document(...)` (a search builds a document per hit, and the checks were most
        of a store's own time per query), so the caller promises what they would ensure: `id` a non-empty
        str, `text` a str, and `metadata` a fresh dict (the document owns it) of non-empty str keys to
        str, int, float or bool values or lists of them, no None, no non-finite float, as decoded from
        what `check_metadata` returned at write time, and `scores` a fresh dict of names from
        `SCORE_NAMES` to finite floats. The embedding is still copied read-only, because stores pass
        views of their own buffers.
        """
        document = object.__new__(cls)
        if embedding is not None:
            embedding = np.array(embedding, dtype=np.float32, copy=True)
            embedding.setflags(write=False)  # see `__post_init__`
        # One attribute dict instead of five frozen-dataclass `__setattr__` bypasses.
        fields = {
            "id": id,
            "text": text,
            "metadata": metadata,
            "score": score,
            "embedding": embedding,
            "scores": {} if scores is None else scores,
        }
        object.__setattr__(document, "__dict__", fields)
        return document

    def with_score(self, score: float | None) -> Document:
        """A copy with `score` set (the named `scores` kept)."""
        return dataclasses.replace(self, score=score)

    def with_scores(self, scores: Mapping[str, float]) -> Document:
        """A copy with the named `scores` replaced (checked; the other fields, already valid, are shared)."""
        document = object.__new__(type(self))
        fields = dict(self.__dict__)
        fields["scores"] = _check_scores(self.id, scores)
        object.__setattr__(document, "__dict__", fields)
        return document

    def with_embedding(self, embedding: Any) -> Document:
        """A copy with `embedding` set."""
        return dataclasses.replace(self, embedding=embedding)


SearchMode = Literal["vector", "lexical", "hybrid"]
Fusion = Literal["rrf", "weighted"]
SEARCH_MODES: tuple[str, ...] = ("vector", "lexical", "hybrid")
FUSIONS: tuple[str, ...] = ("rrf", "weighted")


def _check_vector(value: npt.ArrayLike) -> npt.NDArray[np.float32]:
    try:
        vector = np.array(value, dtype=np.float32, copy=True)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"query_vector must be a vector of numbers, got {value!r:.80}") from exc
    if vector.ndim != 1 or not len(vector) or not np.isfinite(vector).all():
        raise InvalidRequestError(f"query_vector must be a non-empty finite vector, got {value!r:.80}")
    vector.setflags(write=False)
    return vector


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{name} must be True or False, got {value!r}")
    return value


def _check_unit_interval(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidRequestError(f"{name} must be within [0, 1], got {value!r}")
    return float(value)


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidRequestError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return str(value)


@dataclass(frozen=True, init=False)
class SearchRequest:
    """What to retrieve: Spring AI's defaults (`top_k=4`, `similarity_threshold=0.0` accepts everything).

    `filter` takes filter text (parsed here, so a syntax error surfaces at once) or a filter tree.

    `mode` chooses the ranking: "vector" (cosine similarity), "lexical" (BM25 over the store's lexical
    index) or "hybrid" (both, fused: reciprocal rank fusion with constant `rrf_k`, or with
    `fusion="weighted"` a blend of the two scores, each list scaled by its best). `vector_weight` is the
    vector ranking's share in either fusion (RRF weighs the rankings 2w and 2(1 - w), so 0.5 is plain RRF).
    `vector_floor` has the weighted fusion measure cosines from the vector list's 40th best, as it
    does BM25 scores (`rag.retrieval.weighted_fusion`); `Settings` sets it for every embedder but hashing.
    `filter`, `top_k` and `similarity_threshold` mean the same in every mode: the threshold always applies
    to the cosine similarity of a hit, so a lexical hit whose vector is less similar than the threshold is
    dropped.
    `diversity` turns on maximal marginal relevance over the candidates: 0 ranks by relevance only,
    1 by novelty only (Spring AI and LangChain call 1 - diversity "lambda").
    `exact=True` asks for the exact vector top-k: the exact stores (numpy, pgvector) always answer it, a
    store with an approximate index (Chroma's HNSW, `capabilities.exact` False) refuses it. Filters are
    exact either way (docs/exactness.md).

    The query is embedded at most once per search, and only when the search needs its vector:
    `embeds_query` is False for a lexical request without a threshold (BM25 reads the text alone).
    `query_vector` hands the store the query's vector, already embedded by the store's model (unit
    length, as `EmbeddingModel.embed` returns it), so stages that search and compare with the same
    question share one embedding; it is dropped when `replace` changes the query, and takes no part
    in equality.

    Example:
        >>> from rag.filters import key
        >>> SearchRequest("install", top_k=8, similarity_threshold=0.3, filter=key("lang") == "en").top_k
        8
        >>> SearchRequest("error E-214", mode="hybrid").mode
        'hybrid'
    """

    query: str
    top_k: int = 4
    similarity_threshold: float = 0.0
    filter: Filter | None = None
    mode: SearchMode = "vector"
    fusion: Fusion = "rrf"
    vector_weight: float = 0.5
    rrf_k: int = 60
    vector_floor: bool = False
    diversity: float = 0.0
    exact: bool = False
    query_vector: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        query: str,
        top_k: int = 4,
        similarity_threshold: float = 0.0,
        filter: str | Filter | None = None,
        *,
        mode: SearchMode = "vector",
        fusion: Fusion = "rrf",
        vector_weight: float = 0.5,
        rrf_k: int = 60,
        vector_floor: bool = False,
        diversity: float = 0.0,
        exact: bool = False,
        query_vector: npt.ArrayLike | None = None,
    ) -> None:
        if not isinstance(query, str) or not query.strip():
            raise InvalidRequestError(f"query text must be a non-empty string, got {query!r}")
        if type(top_k) is not int or top_k < 0 or type(rrf_k) is not int or rrf_k < 1:
            for name, count, least in (("top_k", top_k, 0), ("rrf_k", rrf_k, 1)):
                if isinstance(count, bool) or not isinstance(count, int) or count < least:
                    raise InvalidRequestError(f"{name} must be an integer >= {least}, got {count!r}")
        # Each value is checked inline when it is of the plain type (every search builds a request, and
        # the check functions were a tenth of a store's own time per query), else by its check function,
        # which converts it or raises the error that names it.
        values = {
            "query": query,
            "top_k": top_k,
            "similarity_threshold": similarity_threshold
            if type(similarity_threshold) is float and 0.0 <= similarity_threshold <= 1.0
            else _check_unit_interval("similarity_threshold", similarity_threshold),
            "filter": None if filter is None else as_filter(filter),
            "mode": mode
            if type(mode) is str and mode in SEARCH_MODES
            else _check_choice("mode", mode, SEARCH_MODES),
            "fusion": fusion
            if type(fusion) is str and fusion in FUSIONS
            else _check_choice("fusion", fusion, FUSIONS),
            "vector_weight": vector_weight
            if type(vector_weight) is float and 0.0 <= vector_weight <= 1.0
            else _check_unit_interval("vector_weight", vector_weight),
            "rrf_k": rrf_k,
            "vector_floor": vector_floor
            if type(vector_floor) is bool
            else _check_flag("vector_floor", vector_floor),
            "diversity": diversity
            if type(diversity) is float and 0.0 <= diversity <= 1.0
            else _check_unit_interval("diversity", diversity),
            "exact": exact if type(exact) is bool else _check_flag("exact", exact),
            "query_vector": None if query_vector is None else _check_vector(query_vector),
        }
        # One attribute dict instead of ten frozen-dataclass `__setattr__` bypasses.
        object.__setattr__(self, "__dict__", values)

    def replace(self, **changes: Any) -> SearchRequest:
        """A copy with some fields changed (validated again)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if changes.get("query", self.query) != self.query and "query_vector" not in changes:
            values["query_vector"] = None  # the vector of another text
        values.update(changes)
        return SearchRequest(**values)

    @property
    def embeds_query(self) -> bool:
        """Whether answering needs the query's vector: every mode but lexical, and a lexical request
        with a threshold above 0 (the threshold compares the cosine)."""
        return self.mode != "lexical" or self.similarity_threshold > 0.0

    def with_query_vector(self, vector: npt.ArrayLike | None) -> SearchRequest:
        """A copy carrying `vector` as the query's embedding (None: the store embeds the query)."""
        values = dict(self.__dict__)
        values["query_vector"] = None if vector is None else _check_vector(vector)
        copy = object.__new__(SearchRequest)
        object.__setattr__(copy, "__dict__", values)
        return copy

    def accepts(self, score: float) -> bool:
        """Whether a hit with this cosine score passes the threshold (0 accepts every score)."""
        return self.similarity_threshold == 0.0 or score >= self.similarity_threshold
