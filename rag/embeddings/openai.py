"""`OpenAIEmbedding`: any OpenAI-compatible `/embeddings` endpoint over httpx."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.embeddings.openai_async import AsyncOpenAIEmbedding
from rag.errors import EmbeddingError, InvalidRequestError
from rag.http import Endpoint, RetryPolicy, send_within
from rag.observability.steps import traced_embedding
from rag.redaction import masked_errors

__all__ = ["OpenAIEmbedding"]


class OpenAIEmbedding(AsyncOpenAIEmbedding):
    """Embeddings from an OpenAI-compatible API (OpenAI, Ollama, vLLM, LM Studio, DashScope...).

    Texts are sent `batch_size` at a time; rows come back in input order (by each item's `index`) and
    L2-normalised. Empty or blank texts are not sent: their rows are zeros.

    `dimensions`, when given, is sent with each request (text-embedding-3 models shorten their vectors to
    it) and every response is checked against it; it then also appears in `name`, since it changes the
    vectors. `known_dimensions` is the length the model is known to return (a home records it), sent
    nowhere and not part of `name`: reading `dimensions` then costs no request, and every response is
    checked against it. When neither is given, the length is learnt from the first response; reading
    `dimensions` before any call makes one small probe request. Base URL and key default to
    `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
    In async code, `await model.aembed(texts)` sends the batches concurrently on an `httpx.AsyncClient`.

    `timeout` (seconds) bounds each request (one batch), retries and their waits included, however slowly
    the server sends its bytes. The key and credentials in the base URL (`user:pw@`, `?api-key=`) never
    appear in errors, logs or the repr, nor do near-copies that a server echoes back.

    Example:
        >>> model = OpenAIEmbedding("nomic-embed-text", base_url="http://localhost:11434/v1", dimensions=768)
        >>> model.name, model.dimensions
        ('openai:nomic-embed-text@768', 768)
        >>> # model.embed(["first text", "second text"]).shape == (2, 768)
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        known_dimensions: int | None = None,
        client: httpx.Client | None = None,
        batch_size: int = 128,
        max_retries: int = 3,
        timeout: float = 60.0,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        for label, size in (("dimensions", dimensions), ("known_dimensions", known_dimensions)):
            if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
                raise InvalidRequestError(f"{label} must be a positive integer or None, got {size!r}")
        if dimensions is not None and known_dimensions is not None and dimensions != known_dimensions:
            raise InvalidRequestError(
                f"dimensions={dimensions!r} and known_dimensions={known_dimensions!r} disagree"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidRequestError(f"batch_size must be a positive integer, got {batch_size!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidRequestError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._model = model
        self._endpoint = Endpoint(base_url, api_key)
        self._url = self._endpoint.url("embeddings")
        self._requested_dimensions = dimensions
        self._dimensions = dimensions if dimensions is not None else known_dimensions
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()
        self._timeout = float(timeout)
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        suffix = f"@{self._requested_dimensions}" if self._requested_dimensions is not None else ""
        return f"openai:{self._model}{suffix}"

    @property
    def dimensions(self) -> int:
        """The vector length: as given or known, else learnt from the first response (probing once if
        needed)."""
        if self._dimensions is None:
            self._embed_batch(["dimension probe"])
        assert self._dimensions is not None  # set by every successful batch
        return self._dimensions

    @traced_embedding
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Float32 rows of unit length, one per text. Raises `EmbeddingError` when the server fails."""
        if isinstance(texts, str):
            raise InvalidRequestError(
                f"embed() takes a sequence of texts, got the single string {texts!r:.80}"
            )
        items = list(texts)
        wanted = [i for i, text in enumerate(items) if text.strip()]
        rows: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(wanted), self._batch_size):
            rows.append(self._embed_batch([items[i] for i in wanted[start : start + self._batch_size]]))
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        if rows:
            out[wanted] = np.concatenate(rows)
        return out

    def _embed_batch(self, batch: list[str]) -> npt.NDArray[np.float32]:
        body: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._requested_dimensions is not None:
            body["dimensions"] = self._requested_dimensions
        with masked_errors(self._endpoint.redactor):
            payload = self._post(body)
            vectors = self._vectors(payload, len(batch))
        width = vectors.shape[1]
        if self._dimensions is not None and width != self._dimensions:
            raise EmbeddingError(
                f"embedding model {self.name!r} returned vectors of length {width}, "
                f"expected {self._dimensions}"
            )
        self._dimensions = width
        return normalize_rows(vectors, model=self.name)

    def _vectors(self, payload: Any, expected: int) -> npt.NDArray[np.float64]:
        try:
            data = sorted(payload["data"], key=lambda item: int(item["index"]))
            indexes = [int(item["index"]) for item in data]
            matrix = np.array([item["embedding"] for item in data], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding model {self.name!r} sent an unexpected reply: {payload!r:.300}"
            ) from exc
        if indexes != list(range(expected)) or matrix.ndim != 2:
            raise EmbeddingError(
                f"embedding model {self.name!r} returned {len(indexes)} vectors with indexes "
                f"{indexes[:10]!r} for {expected} inputs"
            )
        return matrix

    def _post(self, body: dict[str, Any]) -> Any:
        with masked_errors(self._endpoint.redactor):
            if self._client.is_closed:
                raise EmbeddingError(f"{self._what()}: the HTTP client is closed")
            headers = self._endpoint.headers()
            response = send_within(
                self._client,
                lambda: self._client.build_request("POST", self._url, json=body, headers=headers),
                timeout=self._timeout,
                policy=self._retry,
                what=self._what(),
                error=EmbeddingError,
                redactor=self._endpoint.redactor,
            )
            try:
                return json.loads(response.content)
            except ValueError as exc:
                shown = self._endpoint.redactor(response.text[:400])[:200]
                raise EmbeddingError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc

    def _what(self) -> str:
        return f"embedding model {self._model!r} at {self._endpoint.show('embeddings')!r}"

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIEmbedding:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        dims = self._dimensions
        shown = self._endpoint.shown
        return f"OpenAIEmbedding(model={self._model!r}, base_url={shown!r}, dimensions={dims!r})"
