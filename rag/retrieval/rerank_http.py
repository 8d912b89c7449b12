"""`HttpReranker`: a reranking service over HTTP (Cohere, Jina, Voyage, vLLM, TEI, llama.cpp, ...).

The wire format is the one these services share:

```
POST {base_url}/rerank   {"model": ..., "query": ..., "documents": [text, ...], "top_n": n}
200                      {"results": [{"index": i, "relevance_score": s}, ...]}
```

`index` points into the documents sent. Retries, backoff and error bodies are those of the chat and
embedding clients (`rag.http`); the API key is kept in a `Secret` and masked in every error message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from rag.documents import Document
from rag.errors import InvalidRequestError, ModelError
from rag.http import RetryPolicy, Secret, send_with_retries
from rag.retrieval.rerankers import check_top_n, reordered
from rag.retrieval.stages import Query

__all__ = ["HttpReranker"]


class HttpReranker:
    """Rescores documents with a `/rerank` endpoint and returns them best first (at most `top_n`).

    Args:
        model: The reranking model's name, sent as `model`.
        base_url: The API root; `/rerank` is appended (e.g. `http://localhost:8080/v1`).
        api_key: Sent as `Authorization: Bearer ...`; never shown in a repr or an error.
        top_n: How many documents to keep (and to ask the server for); None keeps all.
        client: An `httpx.Client` to use (tests pass a transport; a server shares a pool).

    Example:
        >>> reranker = HttpReranker("rerank-v3.5", base_url="http://127.0.0.1:9/v1", api_key="k", top_n=3)
        >>> reranker
        HttpReranker(model='rerank-v3.5', url='http://127.0.0.1:9/v1/rerank', top_n=3)
        >>> # reranker.process(Query("path parameters"), candidates) -> the 3 best, rescored
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        top_n: int | None = None,
        client: httpx.Client | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidRequestError(f"model must be a non-empty name, got {model!r}")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidRequestError(f"base_url must start with http:// or https://, got {base_url!r}")
        self.model = model
        self.url = f"{base_url.rstrip('/')}/rerank"
        self.top_n = check_top_n(top_n)
        self._api_key = Secret(api_key) if api_key else None
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()
        self._timeout = httpx.Timeout(timeout)
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        if not documents:
            return []
        body: dict[str, Any] = {
            "model": self.model,
            "query": query.text,
            "documents": [document.text for document in documents],
        }
        if self.top_n is not None:
            body["top_n"] = self.top_n
        scores = self._scores(self._post(body), len(documents))
        return reordered(documents, scores, self.top_n)

    def _what(self) -> str:
        return f"rerank model {self.model!r} at {self.url}"

    def _post(self, body: dict[str, Any]) -> Any:
        if self._client.is_closed:
            raise ModelError(f"{self._what()}: the HTTP client is closed")
        headers = {"Authorization": f"Bearer {self._api_key.reveal()}"} if self._api_key else {}

        def send() -> httpx.Response:
            request = self._client.build_request(
                "POST", self.url, json=body, headers=headers, timeout=self._timeout
            )
            return self._client.send(request)

        secrets = [self._api_key.reveal()] if self._api_key else []
        response = send_with_retries(
            send, policy=self._retry, what=self._what(), error=ModelError, secrets=secrets
        )
        try:
            return response.json()
        except ValueError as exc:
            raise ModelError(
                f"{self._what()} returned a body that is not JSON: {response.text[:200]!r}"
            ) from exc
        finally:
            response.close()

    def _scores(self, payload: Any, count: int) -> list[tuple[int, float]]:
        """(index, score) pairs from the reply, each index once and within the documents sent."""
        try:
            results = payload["results"]
            pairs = [(item["index"], item["relevance_score"]) for item in results]
        except (KeyError, TypeError) as exc:
            raise ModelError(f"{self._what()} sent an unexpected reply: {payload!r:.300}") from exc
        seen: set[int] = set()
        checked: list[tuple[int, float]] = []
        for index, score in pairs:
            valid_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count
            valid_score = (
                isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
            )
            if not (valid_index and valid_score) or index in seen:
                raise ModelError(
                    f"{self._what()} returned index {index!r} with relevance_score {score!r} "
                    f"for {count} documents (indexes must be unique, 0..{count - 1}; scores finite)"
                )
            seen.add(index)
            checked.append((index, float(score)))
        return checked

    def close(self) -> None:
        """Close the HTTP client if this reranker created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> HttpReranker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpReranker(model={self.model!r}, url={self.url!r}, top_n={self.top_n!r})"
