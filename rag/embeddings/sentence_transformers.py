"""`SentenceTransformerEmbedding`: semantic embeddings from a sentence-transformers model (CPU by default).

sentence-transformers (and torch) are imported when the model first loads, never when `rag` is imported.
torch keeps its own thread pool (as many threads as cores by default), separate from numpy's BLAS pool;
we leave both at their defaults. When embedding and exact numpy search run at the same time in one
process the pools compete, so a server that does both may call `torch.set_num_threads(1)` (or set
`OMP_NUM_THREADS`) itself.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.errors import EmbeddingError, InvalidRequestError, MissingDependencyError
from rag.observability.steps import traced_embedding

__all__ = ["SentenceTransformerEmbedding"]

_INSTALL_HINT = 'pip install "rag-advisors[st]"'
_LOCAL_HINT = "download it once while online, or use a local folder: --embedder st:/path/to/model"
_HUB = "https://huggingface.co"
_PROBE_SECONDS = 3.0


def _offline_by_setting() -> str | None:
    """The variable that puts the Hugging Face libraries offline, if one is set to a true value."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return name
    return None


def _hub_unreachable(endpoint: str) -> str | None:
    """Why the Hub cannot be reached (one short request, proxies honoured), or None when it answers.

    huggingface_hub retries each file for over 20 s when the network is down; one request with a short
    timeout tells the two cases apart at once.
    """
    import httpx

    try:
        httpx.head(endpoint, timeout=_PROBE_SECONDS)
    except httpx.HTTPError as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    return None


def _looks_like_path(name: str) -> bool:
    """A local folder rather than a Hugging Face Hub id ("all-MiniLM-L6-v2", "org/model")."""
    return name.startswith((".", "/", "~", "\\")) or (len(name) > 1 and name[1] == ":") or Path(name).exists()


class SentenceTransformerEmbedding:
    """Embeddings from a sentence-transformers model given by Hub name or local folder.

    The model loads on first use (`embed`, the tokenizer, and `dimensions` or `max_tokens` unless
    `known_dimensions` or `known_max_tokens` give what a home recorded), so constructing one is cheap. A
    Hub name downloads the model into the Hugging Face cache (or `cache_folder`) the first time; a local
    folder never touches the network. A Hub name already in the cache loads without the network. When it
    is not cached and `HF_HUB_OFFLINE` is set, or the Hub (`HF_ENDPOINT`) does not answer a quick check,
    loading fails at once with an `EmbeddingError` that says how to use a local folder instead.

    Example:
        >>> model = SentenceTransformerEmbedding("all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> model.embed(["Chroma keeps vectors on disk"]).shape  # doctest: +SKIP
        (1, 384)
        >>> model.count_tokens("Chroma keeps vectors"), model.max_tokens  # doctest: +SKIP
        (6, 256)
    """

    def __init__(
        self,
        model_name_or_path: str | Path = "all-MiniLM-L6-v2",
        *,
        device: str = "cpu",
        batch_size: int = 32,
        normalize: bool = True,
        cache_folder: str | Path | None = None,
        known_dimensions: int | None = None,
        known_max_tokens: int | None = None,
    ) -> None:
        if not isinstance(model_name_or_path, str | Path) or not str(model_name_or_path).strip():
            raise InvalidRequestError(
                f"model_name_or_path must be a non-empty name or path, got {model_name_or_path!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidRequestError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if not isinstance(device, str) or not device:
            raise InvalidRequestError(f"device must be a non-empty string such as 'cpu', got {device!r}")
        for label, known in (("known_dimensions", known_dimensions), ("known_max_tokens", known_max_tokens)):
            if known is not None and (isinstance(known, bool) or not isinstance(known, int) or known < 1):
                raise InvalidRequestError(f"{label} must be an integer >= 1, got {known!r}")
        self._known_dimensions = known_dimensions
        self._known_max_tokens = known_max_tokens
        self._source = str(model_name_or_path)
        self._is_path = isinstance(model_name_or_path, Path) or _looks_like_path(self._source)
        if self._is_path and not Path(self._source).expanduser().is_dir():
            raise EmbeddingError(f"sentence-transformers model folder {self._source!r} does not exist")
        self._device = device
        self._batch_size = batch_size
        self._normalize = normalize
        self._cache_folder = None if cache_folder is None else str(cache_folder)
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The Hub name as given, or the folder's name; ``-raw`` is appended when not normalising."""
        base = Path(self._source).expanduser().resolve().name if self._is_path else self._source
        return base if self._normalize else f"{base}-raw"

    @property
    def dimensions(self) -> int:
        if self._known_dimensions is not None:
            return self._known_dimensions
        model = self._loaded()
        size = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        if size is None and hasattr(model, "get_sentence_embedding_dimension"):
            size = model.get_sentence_embedding_dimension()  # sentence-transformers before 6
        if not isinstance(size, int):
            raise EmbeddingError(f"model {self._source!r} does not report its embedding dimension")
        return size

    @property
    def max_tokens(self) -> int | None:
        """The longest input, in the model's tokens, that the model reads; the rest is cut off."""
        if self._known_max_tokens is not None:
            return self._known_max_tokens
        length = self._loaded().max_seq_length
        return int(length) if length is not None else None

    @property
    def tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer."""
        return self._loaded().tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens the model would see for `text`, special tokens included, before truncation."""
        encoded = self.tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)
        return len(encoded["input_ids"])

    @traced_embedding
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """An (n, dimensions) float32 array; rows have unit length unless `normalize=False`."""
        if isinstance(texts, str):
            raise InvalidRequestError(f"embed() takes a list of texts, not a single string: {texts[:40]!r}")
        model = self._loaded()
        if len(texts) == 0:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        try:
            vectors = model.encode(
                list(texts), batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        except Exception as exc:  # torch and tokenizers raise many types; all mean the same to a caller
            raise EmbeddingError(f"model {self._source!r} failed to embed {len(texts)} texts: {exc}") from exc
        if not self._normalize:
            return np.asarray(vectors, dtype=np.float32)
        return normalize_rows(vectors, model=self.name)

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError(
                f"SentenceTransformerEmbedding needs sentence-transformers: {_INSTALL_HINT}",
                package="sentence_transformers",
                extra="st",
            )
        if not self._is_path and not self._maybe_cached():
            self._check_hub()  # before the import of torch (seconds): an uncached model offline fails now
        from sentence_transformers import SentenceTransformer

        if self._is_path:
            return self._construct(SentenceTransformer, str(Path(self._source).expanduser()), local=True)
        try:  # the cache first: a model downloaded once never needs the network again
            return SentenceTransformer(
                self._source, device=self._device, cache_folder=self._cache_folder, local_files_only=True
            )
        except Exception:  # not (completely) in the cache: only then is the Hub needed
            pass
        self._check_hub()
        return self._construct(SentenceTransformer, self._source, local=False)

    def _cache(self) -> str:
        from huggingface_hub import constants  # light; a dependency of sentence-transformers

        return self._cache_folder or constants.HF_HUB_CACHE

    def _maybe_cached(self) -> bool:
        """Whether the Hub cache has a folder for this name (a short name also under its default org)."""
        names = [self._source]
        if "/" not in self._source:
            names.append(f"sentence-transformers/{self._source}")  # sentence-transformers' own default
        folders = (Path(self._cache()) / ("models--" + name.replace("/", "--")) for name in names)
        return any(folder.is_dir() for folder in folders)

    def _construct(self, factory: Any, source: str, *, local: bool) -> Any:
        try:
            return factory(
                source, device=self._device, cache_folder=self._cache_folder, local_files_only=local
            )
        except Exception as exc:  # missing files, bad config, unknown Hub id, no network: one error for all
            raise EmbeddingError(f"cannot load sentence-transformers model {self._source!r}: {exc}") from exc

    def _check_hub(self) -> None:
        """Fail fast, with what to do, when a Hub model must be downloaded but cannot be."""
        where = self._cache_folder or f"the Hugging Face cache ({self._cache()})"
        missing = f"sentence-transformers model {self._source!r} is not in {where}"
        setting = _offline_by_setting()
        if setting is not None:
            raise EmbeddingError(f"{missing} and {setting} is set; {_LOCAL_HINT}")
        endpoint = os.environ.get("HF_ENDPOINT", "").strip() or _HUB
        reason = _hub_unreachable(endpoint)
        if reason is not None:
            raise EmbeddingError(f"{missing} and {endpoint} cannot be reached ({reason}); {_LOCAL_HINT}")

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedding({self._source!r}, device={self._device!r})"
