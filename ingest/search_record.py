"""The search settings a home records for a store: mode and vector weight, and where they came from.

`rag ingest` records the vector weight that suits the store's embedder when it creates the store
(`default_vector_weight`), and after each run the weight for the language most of the store's chunks
are in (`for_collection`: an English-only embedder gets a smaller share over French or German text);
`rag eval --tune` replaces it with the mode and weight that ranked the user's
labelled questions best. `rag query`, `ask`, `chat` and `serve` search with the record unless
`--mode` / `--vector-weight` or `RAG_SEARCH_MODE` / `RAG_VECTOR_WEIGHT` say otherwise. A home written
before stores recorded this has no record: the embedder's default applies.

Example:
    >>> record = SearchRecord(0.2)
    >>> resolve_search(Settings(), "st:all-MiniLM-L6-v2", None).search_request().vector_weight
    0.7
    >>> resolve_search(Settings(), "hashing", record).search_request().mode
    'hybrid'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ingest.language import LANGUAGES
from rag.config import DEFAULT_SEARCH_MODE, Settings, default_vector_weight, embedder_family, english_only
from rag.documents import SEARCH_MODES
from rag.errors import ConfigError
from rag.filters import key
from rag.vectorstore import VectorStore

__all__ = ["SearchRecord", "collection_language", "for_collection", "resolve_search", "search_origin"]


@dataclass(frozen=True)
class SearchRecord:
    """A store's recorded search settings, kept under `search` in its `RAG_HOME/stores.json` entry.

    `mode` None means the default mode. The `tuned_*` fields, `top_k` and `ndcg` are set by
    `rag eval --tune` (the questions file, the UTC time, the cutoff and the nDCG it reached); without
    them the weight is the embedder's default, for the collection's `language` when one is recorded.

    Example:
        >>> SearchRecord.from_dict({"vector_weight": 0.5, "mode": "hybrid"}).mode
        'hybrid'
    """

    vector_weight: float
    mode: str | None = None
    tuned_on: str | None = None
    tuned_at: str | None = None
    top_k: int | None = None
    ndcg: float | None = None
    language: str | None = None

    @classmethod
    def from_dict(cls, raw: Any, *, where: str = "stores.json") -> SearchRecord:
        """A record from its JSON form, checked: a hand-edited file gets an error naming the value.

        Raises:
            ConfigError: not an object, an unknown field, or a mode or weight out of range.
        """
        if not isinstance(raw, dict):
            raise ConfigError(f"search record in {where!r} must be an object, got {raw!r}")
        unknown = sorted(set(raw) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"search record in {where!r} has unknown field(s) {', '.join(unknown)}")
        weight, mode = raw.get("vector_weight"), raw.get("mode")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0:
            raise ConfigError(
                f"search record in {where!r}: vector_weight must be within [0, 1], got {weight!r}"
            )
        if mode is not None and mode not in SEARCH_MODES:
            choices = ", ".join(SEARCH_MODES)
            raise ConfigError(f"search record in {where!r}: mode must be one of {choices}, got {mode!r}")
        return cls(**{**raw, "vector_weight": float(weight)})

    @property
    def tuned(self) -> bool:
        """Whether `rag eval --tune` chose these settings; else they are the embedder's defaults."""
        return self.tuned_on is not None or self.mode is not None

    def weight_for(self, embedder: str | None) -> float:
        """The vector weight in effect: a tuned weight as recorded; else the default of `embedder` for
        the recorded language, as this release chooses it, so improved defaults reach older homes.

        Example:
            >>> SearchRecord(0.05).weight_for("st:all-MiniLM-L6-v2")
            0.7
            >>> SearchRecord(0.2, "hybrid").weight_for("st:all-MiniLM-L6-v2")
            0.2
        """
        return self.vector_weight if self.tuned else default_vector_weight(embedder, self.language)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, without the fields that are not set."""
        return {name: value for name, value in asdict(self).items() if value is not None}


def resolve_search(settings: Settings, embedder: str | None, record: SearchRecord | None) -> Settings:
    """`settings` with the search mode, vector weight and embedder in effect filled in.

    An option or `RAG_*` variable wins (the field is already set); then the record; then the default
    mode and the default weight for `embedder` (the spec the store was built with, or the one asked for).
    The embedder also decides how the weighted fusion treats cosines (`Settings.search_request`).
    """
    mode = settings.search_mode or (record.mode if record else None) or DEFAULT_SEARCH_MODE
    if settings.vector_weight is not None:
        weight = settings.vector_weight
    elif record is not None:
        weight = record.weight_for(settings.embedder or embedder)
    else:
        weight = default_vector_weight(settings.embedder or embedder)
    return settings.replace(search_mode=mode, vector_weight=weight, embedder=settings.embedder or embedder)


def collection_language(store: VectorStore) -> str | None:
    """The language most of the store's chunks are in, by their `lang` metadata (the codes ingest
    detects, `ingest.language.LANGUAGES`), or None when no chunk has one of them.

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document(str(n), text, {"lang": lang}) for n, (text, lang) in enumerate(
        ...     [("Bonjour", "fr"), ("Hello", "en"), ("Salut", "fr")])])
        >>> collection_language(store)
        'fr'
    """
    counts = {code: store.count(key("lang") == code) for code in LANGUAGES}
    language, most = max(counts.items(), key=lambda item: item[1])
    return language if most else None


def for_collection(record: SearchRecord, embedder: str, store: VectorStore) -> SearchRecord:
    """`record` with the default weight for the language of the store's chunks (`default_vector_weight`),
    when it holds the embedder's default; a tuned record is returned as it is. The store is read only
    for an embedder that knows one language (`english_only`); another gets its default weight.

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("a", "Die Häuser stehen am See.", {"lang": "de"})])
        >>> fitted = for_collection(SearchRecord(0.5), "st:all-MiniLM-L6-v2", store)
        >>> fitted.vector_weight, fitted.language
        (0.55, 'de')
    """
    if record.tuned:
        return record
    if not english_only(embedder):
        return replace(record, vector_weight=default_vector_weight(embedder))
    language = collection_language(store)
    weight = default_vector_weight(embedder, language)
    return replace(record, vector_weight=weight, language=language)


def search_origin(embedder: str, record: SearchRecord | None) -> str:
    """Where a store's search settings came from, in words, for `rag info`.

    Example:
        >>> search_origin("st:/m", SearchRecord(0.5))
        'default for embedder st'
        >>> search_origin("hashing", SearchRecord(0.1, "hybrid", "q.jsonl", "2026-01-02T03:04Z", 10, 0.5))
        'tuned on q.jsonl at 2026-01-02T03:04Z, nDCG@10 0.500'
    """
    family = embedder_family(embedder)
    if record is None:
        return f"default for embedder {family}; not recorded: the home predates search records"
    if record.tuned_on is None:
        text = f", text mostly in {record.language!r}" if record.language else ""
        return f"default for embedder {family}{text}"
    reached = ""
    if record.top_k is not None and record.ndcg is not None and math.isfinite(record.ndcg):
        reached = f", nDCG@{record.top_k} {record.ndcg:.3f}"
    return f"tuned on {record.tuned_on} at {record.tuned_at}{reached}"
