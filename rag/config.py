"""`Settings`: every knob of the toolkit, read once from documented environment variables.

| Variable            | Meaning                                                        | Default      |
|---------------------|----------------------------------------------------------------|--------------|
| `RAG_HOME`          | folder holding the embedded store, manifests and records       | `./.rag`     |
| `RAG_STORE`         | `chroma` (embedded, or a server with `RAG_CHROMA_URL`), `numpy` | the home's,  |
|                     | or `pgvector` (PostgreSQL at `RAG_DATABASE_URL`)                | else chroma  |
| `RAG_CHROMA_URL`    | a Chroma server (`http://127.0.0.1:8000`) instead of embedded   | unset        |
| `RAG_DATABASE_URL`  | PostgreSQL for `RAG_STORE=pgvector`: vectors, manifest, chat    | unset        |
| `RAG_COLLECTION`    | collection name (3-512 of `A-Za-z0-9._-`, alphanumeric ends)    | `rag`        |
| `RAG_EMBEDDER`      | `hashing`, `hashing:2048`, `st:all-MiniLM-L6-v2`, `st:/path`,   | the store's, |
|                     | `openai:text-embedding-3-small`                                 | else hashing |
| `RAG_CHUNK_SIZE`    | chunk size in the model's tokens (words without a tokenizer)   | splitter's   |
| `RAG_CHUNK_OVERLAP` | overlap between neighbouring chunks, same unit                 | splitter's   |
| `RAG_CHAT_MODEL`    | chat model name for an OpenAI-compatible endpoint              | unset        |
| `RAG_SEARCH_MODE`   | `vector`, `lexical` (BM25) or `hybrid` (both, fused)            | recorded,    |
|                     |                                                                 | else hybrid  |
| `RAG_FUSION`        | how hybrid fuses the rankings: `weighted` or `rrf`              | `weighted`   |
| `RAG_VECTOR_WEIGHT` | the vector ranking's share in either fusion, in [0, 1]          | recorded,    |
|                     |                                                                 | else per     |
|                     |                                                                 | embedder     |
| `RAG_DIVERSITY`     | MMR diversity in [0, 1]; 0 ranks by relevance only              | `0`          |
| `OPENAI_API_KEY`, `OPENAI_BASE_URL` | the OpenAI-compatible endpoint                 | unset        |

Nothing reads a `.env` file: the environment is what the process was given.

The search mode and vector weight left unset (None) are decided later: the CLI uses what the home recorded
for the store (`rag ingest` records the embedder's default weight, `rag eval --tune` the measured best),
else `search_request()` uses the default mode and `default_vector_weight(embedder)`.

Example:
    >>> s = Settings.from_env({"RAG_STORE": "numpy", "RAG_CHUNK_SIZE": "200"})
    >>> s.store, s.chunk_size, s.collection
    ('numpy', 200, 'rag')
    >>> s.replace(collection="papers", chunk_size=None).collection  # None keeps the current value
    'papers'
    >>> s.search_request("beacon", top_k=2).mode == DEFAULT_SEARCH_MODE
    True
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rag.documents import FUSIONS, SEARCH_MODES, SearchRequest
from rag.errors import ConfigError

__all__ = [
    "DEFAULT_FUSION",
    "DEFAULT_SEARCH_MODE",
    "DEFAULT_STORE",
    "DEFAULT_VECTOR_WEIGHT",
    "OTHER_LANGUAGE_VECTOR_WEIGHT",
    "STORE_KINDS",
    "VECTOR_WEIGHT_BY_EMBEDDER",
    "Settings",
    "default_vector_weight",
    "embedder_family",
    "english_only",
]

STORE_KINDS = ("chroma", "numpy", "pgvector")
DEFAULT_STORE = "chroma"
"""The store kind of a new home when neither `--store` nor `RAG_STORE` names one."""
# The weights below were chosen on six query sets at once (docs/retrieval.md, "One weight for every
# set"): SciFact's training queries, the Python FAQ set and four docs trees in three languages; each set's
# figure is reported held out, with the weight chosen on the other sets. A stronger embedder deserves a
# larger RAG_VECTOR_WEIGHT: measure it on your own questions with `rag eval --tune`.
DEFAULT_SEARCH_MODE = "hybrid"
"""The search mode of the CLI and `Settings` when `RAG_SEARCH_MODE` is unset (chosen by measurement)."""
DEFAULT_FUSION = "weighted"
"""How hybrid search fuses its rankings when `RAG_FUSION` is unset."""
DEFAULT_VECTOR_WEIGHT = 0.15
"""The vector ranking's share in hybrid fusion for the default (hashing) embedder, or an unknown one."""
VECTOR_WEIGHT_BY_EMBEDDER: Mapping[str, float] = MappingProxyType(
    {
        # Hashing's vectors only echo the words, so BM25 leads: 0.15 is within 0.01 of each set's best.
        "hashing": DEFAULT_VECTOR_WEIGHT,
        # all-MiniLM-L6-v2, its cosines measured from their 40th best (`SearchRequest.vector_floor`):
        # 0.7 is each English set's best or within 0.004 of it.
        "st": 0.7,
        # A guess, not measured: OpenAI's embedders are at least as strong as MiniLM.
        "openai": 0.7,
    }
)
"""The vector share in hybrid fusion by embedder family (the part of the spec before `:`)."""
OTHER_LANGUAGE_VECTOR_WEIGHT = 0.55
"""The vector share for an English-only embedder (`english_only`) over text mostly in another language.

Chosen on the German and French docs-tree sets with all-MiniLM-L6-v2, within 0.004 of each set's best
weight, held out (docs/retrieval.md): an English model reads other languages less well; BM25 stems
each language."""
# Sentence-transformers models trained on many languages say so in their names.
_MULTILINGUAL = ("multilingual", "labse", "bge-m3", "xlm", "-m3")
_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")


def embedder_family(spec: str | None) -> str:
    """The family of an embedder spec: `hashing`, `st` (also for `sentence-transformers:`) or `openai`.

    None (no embedder chosen) is the default embedder's family, `hashing`.

    Example:
        >>> embedder_family("st:all-MiniLM-L6-v2"), embedder_family("hashing:2048"), embedder_family(None)
        ('st', 'hashing', 'hashing')
    """
    kind = (spec or "hashing").strip().partition(":")[0].lower()
    return "st" if kind == "sentence-transformers" else kind


def english_only(spec: str | None) -> bool:
    """Whether an embedder spec names a model that knows English only: a sentence-transformers model
    whose name does not say it is multilingual ("paraphrase-multilingual-...", "LaBSE", "bge-m3").
    The hashing embedder reads every language alike; OpenAI's models are multilingual.

    Example:
        >>> english_only("st:all-MiniLM-L6-v2"), english_only("st:paraphrase-multilingual-MiniLM-L12-v2")
        (True, False)
    """
    name = (spec or "").partition(":")[2].lower()
    return embedder_family(spec) == "st" and not any(mark in name for mark in _MULTILINGUAL)


def default_vector_weight(spec: str | None, language: str | None = None) -> float:
    """The vector share that suits an embedder spec (`VECTOR_WEIGHT_BY_EMBEDDER`; unknown: 0.15) and
    the language most of the collection is in (an ISO 639-1 code; None or "und": not known).

    An English-only embedder (`english_only`) over text mostly in another language gets at most
    `OTHER_LANGUAGE_VECTOR_WEIGHT`: BM25 analyses that language, the model does not.

    Example:
        >>> default_vector_weight("hashing"), default_vector_weight("st:/models/minilm")
        (0.15, 0.7)
        >>> default_vector_weight("st:/models/minilm", "fr"), default_vector_weight("hashing", "fr")
        (0.55, 0.15)
    """
    weight = VECTOR_WEIGHT_BY_EMBEDDER.get(embedder_family(spec), DEFAULT_VECTOR_WEIGHT)
    if language not in (None, "en", "und") and english_only(spec):
        return min(weight, OTHER_LANGUAGE_VECTOR_WEIGHT)
    return weight


def _int(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def _float(environ: Mapping[str, str], name: str) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def _text(environ: Mapping[str, str], name: str) -> str | None:
    raw = environ.get(name, "").strip()
    return raw or None


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(frozen=True)
class Settings:
    """The toolkit's configuration: store location and kind, embedder, chunking, chat endpoint, search.

    `store` is None when not set: opening the home then uses the kind it holds the collection in, else
    `DEFAULT_STORE`. `embedder`, `chunk_size` and `chunk_overlap` are None when not set: the CLI then uses
    what the store was built with, or the defaults. So are `search_mode` and `vector_weight`: the CLI
    then uses what the home recorded for the store, and `search_request()` the defaults for the
    embedder. Construct with `from_env()`, then apply options with `replace()`.

    Example:
        >>> s = Settings(home=Path("/tmp/rag-home"), store="numpy")
        >>> s.replace(embedder="hashing:2048").embedder
        'hashing:2048'
    """

    home: Path = Path(".rag")
    store: str | None = None
    chroma_url: str | None = None
    database_url: str | None = dataclasses.field(default=None, repr=False)  # may hold a password
    collection: str = "rag"
    embedder: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    chat_model: str | None = None
    openai_api_key: str | None = dataclasses.field(default=None, repr=False)
    # The base URL may carry credentials (`user:key@host`, `?api-key=`): like the key, kept out of the repr.
    openai_base_url: str | None = dataclasses.field(default=None, repr=False)
    search_mode: str | None = None
    fusion: str = DEFAULT_FUSION
    vector_weight: float | None = None
    diversity: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home))
        if self.store is not None and self.store not in STORE_KINDS:
            raise ConfigError(f"store must be one of {', '.join(STORE_KINDS)}; got {self.store!r}")
        if not _COLLECTION.fullmatch(self.collection):
            raise ConfigError(
                f"collection name {self.collection!r} must be 3-512 characters of letters, digits, '.', '_' "
                "or '-', starting and ending with a letter or digit"
            )
        if self.embedder is not None and not self.embedder.strip():
            raise ConfigError(f"embedder spec must not be blank, got {self.embedder!r}")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ConfigError(f"chunk size must be >= 1, got {self.chunk_size!r}")
        if self.chunk_overlap is not None and self.chunk_overlap < 0:
            raise ConfigError(f"chunk overlap must be >= 0, got {self.chunk_overlap!r}")
        self._check_search()
        if (
            self.chunk_size is not None
            and self.chunk_overlap is not None
            and self.chunk_overlap >= self.chunk_size
        ):
            raise ConfigError(
                f"chunk overlap ({self.chunk_overlap!r}) must be smaller than "
                f"the chunk size ({self.chunk_size!r})"
            )

    def _check_search(self) -> None:
        for name, variable, value, choices in (
            ("search mode", "RAG_SEARCH_MODE", self.search_mode, SEARCH_MODES),
            ("fusion", "RAG_FUSION", self.fusion, FUSIONS),
        ):
            if value is not None and value not in choices:
                raise ConfigError(f"{name} ({variable}) must be one of {', '.join(choices)}; got {value!r}")
        for name, variable, number in (
            ("vector weight", "RAG_VECTOR_WEIGHT", self.vector_weight),
            ("diversity", "RAG_DIVERSITY", self.diversity),
        ):
            if number is None:
                continue
            if isinstance(number, bool) or not isinstance(number, int | float) or not 0.0 <= number <= 1.0:
                raise ConfigError(f"{name} ({variable}) must be within [0, 1], got {number!r}")

    def search_request(self, query: str = "defaults", **changes: Any) -> SearchRequest:
        """A `SearchRequest` with these settings' mode, fusion, vector weight and diversity.

        An unset mode is `DEFAULT_SEARCH_MODE`; an unset vector weight the embedder's default
        (`default_vector_weight`). The weighted fusion measures cosines from their 40th best
        (`vector_floor`) for every embedder but hashing, whose cosines only count shared words.
        `changes` set other fields (`top_k`, `similarity_threshold`,
        `filter`, ...); None values are skipped, so unset command options keep the request's defaults.

        Example:
            >>> Settings(search_mode="lexical").search_request("E-214", top_k=None).top_k
            4
        """
        values: dict[str, Any] = {
            "mode": self.search_mode or DEFAULT_SEARCH_MODE,
            "fusion": self.fusion,
            "vector_weight": (
                default_vector_weight(self.embedder) if self.vector_weight is None else self.vector_weight
            ),
            "vector_floor": embedder_family(self.embedder) != "hashing",
            "diversity": self.diversity,
        }
        values.update((name, value) for name, value in changes.items() if value is not None)
        return SearchRequest(query, **values)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from `RAG_*` and `OPENAI_*` variables (`os.environ` unless `environ` is given)."""
        env = os.environ if environ is None else environ
        return cls(
            home=Path(_text(env, "RAG_HOME") or ".rag"),
            store=(_text(env, "RAG_STORE") or "").lower() or None,
            chroma_url=_text(env, "RAG_CHROMA_URL"),
            database_url=_text(env, "RAG_DATABASE_URL"),
            collection=_text(env, "RAG_COLLECTION") or "rag",
            embedder=_text(env, "RAG_EMBEDDER"),
            chunk_size=_int(env, "RAG_CHUNK_SIZE"),
            chunk_overlap=_int(env, "RAG_CHUNK_OVERLAP"),
            chat_model=_text(env, "RAG_CHAT_MODEL"),
            openai_api_key=_text(env, "OPENAI_API_KEY"),
            openai_base_url=_text(env, "OPENAI_BASE_URL"),
            search_mode=(_text(env, "RAG_SEARCH_MODE") or "").lower() or None,
            fusion=(_text(env, "RAG_FUSION") or DEFAULT_FUSION).lower(),
            vector_weight=_float(env, "RAG_VECTOR_WEIGHT"),
            diversity=_or(_float(env, "RAG_DIVERSITY"), 0.0),
        )

    def replace(self, **changes: Any) -> Settings:
        """A copy with the given fields changed; None values leave a field as it is (unset options)."""
        given = {name: value for name, value in changes.items() if value is not None}
        return dataclasses.replace(self, **given)
