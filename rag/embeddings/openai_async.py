"""Native async for `OpenAIEmbedding`: `aembed` on `httpx.AsyncClient`, batches sent concurrently.

`AsyncOpenAIEmbedding` is a mixin of `OpenAIEmbedding`: it reuses its settings, endpoint (credentials
and their masking), its reply checking (`_vectors`, dimension checks) and the retry loop of
`rag.http_async`, so errors read as on the sync path, and `timeout` bounds each batch, retries included.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.errors import EmbeddingError, InvalidRequestError
from rag.http_async import LoopBoundClient, asend_with_retries
from rag.redaction import masked_errors

if TYPE_CHECKING:
    from rag.endpoint import Endpoint
    from rag.http import RetryPolicy

__all__ = ["AsyncOpenAIEmbedding"]


class AsyncOpenAIEmbedding:
    """`aembed` and `aclose` for `OpenAIEmbedding`.

    Example:
        >>> from rag.embeddings.openai import OpenAIEmbedding
        >>> callable(OpenAIEmbedding("m", base_url="http://127.0.0.1:9/v1", dimensions=8).aembed)
        True
    """

    # Provided by OpenAIEmbedding.
    _model: str
    _url: httpx.URL
    _endpoint: Endpoint
    _timeout: float
    _retry: RetryPolicy
    _batch_size: int
    _requested_dimensions: int | None
    _dimensions: int | None
    _async: LoopBoundClient | None = None

    @property
    def name(self) -> str:
        raise NotImplementedError  # pragma: no cover - OpenAIEmbedding defines it

    def _vectors(self, payload: Any, expected: int) -> npt.NDArray[np.float64]:
        raise NotImplementedError  # pragma: no cover - OpenAIEmbedding defines it

    def _what(self) -> str:
        raise NotImplementedError  # pragma: no cover - OpenAIEmbedding defines it

    def use_async_client(self, client: httpx.AsyncClient) -> None:
        """Send async requests through `client` (not closed by `aclose()`)."""
        self._async = LoopBoundClient(client)

    async def aclose(self) -> None:
        """Close the async HTTP client this model created (from the loop that used it)."""
        if self._async is not None:
            await self._async.aclose()

    async def aembed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The rows `embed` gives, awaited; the batches go out concurrently."""
        if isinstance(texts, str):
            raise InvalidRequestError(
                f"aembed() takes a sequence of texts, got the single string {texts!r:.80}"
            )
        items = list(texts)
        wanted = [i for i, text in enumerate(items) if text.strip()]
        batches = [
            [items[i] for i in wanted[start : start + self._batch_size]]
            for start in range(0, len(wanted), self._batch_size)
        ]
        rows = await asyncio.gather(*(self._aembed_batch(batch) for batch in batches))
        if self._dimensions is None:
            await self._aembed_batch(["dimension probe"])
        assert self._dimensions is not None  # set by every successful batch
        out = np.zeros((len(items), self._dimensions), dtype=np.float32)
        if rows:
            out[wanted] = np.concatenate(rows)
        return out

    async def _aembed_batch(self, batch: list[str]) -> npt.NDArray[np.float32]:
        body: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._requested_dimensions is not None:
            body["dimensions"] = self._requested_dimensions
        with masked_errors(self._endpoint.redactor):
            try:
                payload = await asyncio.wait_for(self._apost(body), self._timeout)
            except TimeoutError:
                raise EmbeddingError(
                    f"{self._what()} did not answer within its {self._timeout:g} s timeout"
                ) from None
            vectors = self._vectors(payload, len(batch))
        width = vectors.shape[1]
        if self._dimensions is not None and width != self._dimensions:
            raise EmbeddingError(
                f"embedding model {self.name!r} returned vectors of length {width}, "
                f"expected {self._dimensions}"
            )
        self._dimensions = width
        return normalize_rows(vectors, model=self.name)

    async def _apost(self, body: dict[str, Any]) -> Any:
        if self._async is None:
            self._async = LoopBoundClient()
        client = self._async.get()
        headers = self._endpoint.headers()

        async def send() -> httpx.Response:
            request = client.build_request(
                "POST", self._url, json=body, headers=headers, timeout=self._timeout
            )
            return await client.send(request)

        mask = self._endpoint.redactor
        response = await asend_with_retries(
            send, policy=self._retry, what=self._what(), error=EmbeddingError, redactor=mask
        )
        try:
            return json.loads(response.content)
        except ValueError as exc:
            shown = mask(response.text[:400])[:200]
            raise EmbeddingError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc
