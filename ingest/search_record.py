"""The search settings a home records for a store: mode and vector weight, and where they came from.

`rag ingest` records the vector weight that suits the store's embedder when it creates the store
(`default_vector_weight`); `rag eval --tune` replaces it with the mode and weight that ranked the user's
labelled questions best. `rag query`, `ask`, `chat` and `serve` search with the record unless
`--mode` / `--vector-weight` or `RAG_SEARCH_MODE` / `RAG_VECTOR_WEIGHT` say otherwise. A home written
before stores recorded this has no record: the embedder's default applies.

Example:
    >>> record = SearchRecord(0.2)
    >>> resolve_search(Settings(), "st:all-MiniLM-L6-v2", None).search_request().vector_weight
    0.5
    >>> resolve_search(Settings(), "hashing", record).search_request().mode
    'hybrid'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from rag.config import DEFAULT_SEARCH_MODE, Settings, default_vector_weight, embedder_family
from rag.documents import SEARCH_MODES
from rag.errors import ConfigError

__all__ = ["SearchRecord", "resolve_search", "search_origin"]


@dataclass(frozen=True)
class SearchRecord:
    """A store's recorded search settings, kept under `search` in its `RAG_HOME/stores.json` entry.

    `mode` None means the default mode. The `tuned_*` fields, `top_k` and `ndcg` are set by
    `rag eval --tune` (the questions file, the UTC time, the cutoff and the nDCG it reached); without
    them the weight is the embedder's default.

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

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, without the fields that are not set."""
        return {name: value for name, value in asdict(self).items() if value is not None}


def resolve_search(settings: Settings, embedder: str | None, record: SearchRecord | None) -> Settings:
    """`settings` with the search mode and vector weight in effect filled in.

    An option or `RAG_*` variable wins (the field is already set); then the record; then the default
    mode and the default weight for `embedder` (the spec the store was built with, or the one asked for).
    """
    mode = settings.search_mode or (record.mode if record else None) or DEFAULT_SEARCH_MODE
    if settings.vector_weight is not None:
        weight = settings.vector_weight
    else:
        weight = record.vector_weight if record else default_vector_weight(settings.embedder or embedder)
    return settings.replace(search_mode=mode, vector_weight=weight)


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
        return f"default for embedder {family}"
    reached = ""
    if record.top_k is not None and record.ndcg is not None and math.isfinite(record.ndcg):
        reached = f", nDCG@{record.top_k} {record.ndcg:.3f}"
    return f"tuned on {record.tuned_on} at {record.tuned_at}{reached}"
