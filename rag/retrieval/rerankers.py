"""Rerankers: post-processors that score each (query, document) pair with a model and reorder by it.

A bi-encoder (the embedder) compares a query vector with document vectors computed apart; a
cross-encoder reads the query and the passage together, which ranks better but costs one model pass
per pair, so it reorders the few dozen candidates a retriever found. `CrossEncoderReranker` runs a
sentence-transformers `CrossEncoder` locally; `HttpReranker` (in `rag.retrieval.rerank_http`) calls a
`/rerank` service.

Example:
    >>> reranker = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2", top_n=5)  # doctest: +SKIP
    >>> reranker.process(Query("path parameter"), documents)  # doctest: +SKIP
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag.documents import Document
from rag.errors import ConfigError, InvalidRequestError, ModelError
from rag.retrieval.stages import Query

__all__ = ["CrossEncoderReranker", "reordered"]

_INSTALL_HINT = 'pip install "rag-advisors[st]"'


def check_top_n(top_n: int | None) -> int | None:
    """`top_n` if it is None or an integer >= 1, else an `InvalidRequestError` naming it."""
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
        raise InvalidRequestError(f"top_n must be an integer >= 1 or None, got {top_n!r}")
    return top_n


def reordered(
    documents: Sequence[Document], scores: Sequence[tuple[int, float]], top_n: int | None
) -> list[Document]:
    """The documents at the given indexes with their new scores, best first, cut at `top_n`.

    Equal scores keep the order the documents came in (the retriever's), so results are deterministic.
    """
    ranked = sorted(scores, key=lambda pair: (-pair[1], pair[0]))
    kept = ranked if top_n is None else ranked[:top_n]
    return [documents[index].with_score(score) for index, score in kept]


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~", "\\")) or Path(name).exists()


class CrossEncoderReranker:
    """Rescores documents with a sentence-transformers `CrossEncoder` and returns them best first.

    `model_name_or_path` is a Hugging Face Hub name (downloaded into the cache on first use) or a local
    folder (never touches the network). The model loads on the first `process`, so constructing a
    reranker is cheap and importing `rag` never imports torch. Each document's `score` becomes the
    model's relevance score (raw logits for most rerankers: higher is better, any scale); `top_n` keeps
    only the best n (None keeps all).

    Example:
        >>> reranker = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2", top_n=4)
        >>> reranker.top_n
        4
        >>> # reranker.process(Query("How do I declare a path parameter?"), candidates)
    """

    def __init__(
        self,
        model_name_or_path: str | Path,
        *,
        top_n: int | None = None,
        batch_size: int = 32,
        device: str = "cpu",
        max_length: int | None = None,
    ) -> None:
        source = str(model_name_or_path)
        if not isinstance(model_name_or_path, str | Path) or not source.strip():
            raise InvalidRequestError(
                f"model_name_or_path must be a non-empty name or path, got {model_name_or_path!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidRequestError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if (isinstance(model_name_or_path, Path) or _looks_like_path(source)) and not Path(
            source
        ).expanduser().is_dir():
            raise ConfigError(f"cross-encoder model folder {source!r} does not exist")
        self.model_name_or_path = source
        self.top_n = check_top_n(top_n)
        self.batch_size = batch_size
        self.device = device
        self.max_length = max_length
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:
                    raise ConfigError(
                        f"CrossEncoderReranker needs sentence-transformers: {_INSTALL_HINT}"
                    ) from exc
                source = str(Path(self.model_name_or_path).expanduser())
                if not Path(source).is_dir():
                    source = self.model_name_or_path
                try:
                    self._model = CrossEncoder(source, device=self.device, max_length=self.max_length)
                except Exception as exc:  # hub, file and torch errors all mean "this model cannot load"
                    raise ModelError(
                        f"cross-encoder {self.model_name_or_path!r} could not be loaded: {exc}"
                    ) from exc
            return self._model

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """The model's relevance score for each (query, text) pair, in the order given."""
        if not texts:
            return []
        model = self._loaded()
        pairs = [(query, text) for text in texts]
        try:
            raw = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        except Exception as exc:  # torch and tokenizers raise many types; all mean the same to a caller
            raise ModelError(
                f"cross-encoder {self.model_name_or_path!r} failed to score {len(pairs)} pairs: {exc}"
            ) from exc
        values = [float(value) for value in raw.reshape(len(pairs), -1)[:, 0]]
        if not all(math.isfinite(value) for value in values):
            raise ModelError(f"cross-encoder {self.model_name_or_path!r} returned non-finite scores")
        return values

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        values = self.scores(query.text, [document.text for document in documents])
        return reordered(documents, list(enumerate(values)), self.top_n)

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_name_or_path!r}, top_n={self.top_n!r})"
