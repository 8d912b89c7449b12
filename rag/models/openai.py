"""`OpenAIChatModel`: any OpenAI-compatible `/chat/completions` endpoint over httpx, plain or streamed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx

from rag.chat.messages import ChatOptions, ChatResponse, Prompt
from rag.errors import ModelError
from rag.http import RetryPolicy, resolve_openai_endpoint, send_with_retries
from rag.models.openai_async import AsyncOpenAIChat
from rag.models.openai_wire import StreamAccumulator, build_body, parse_completion
from rag.models.sse import SSEDecoder

__all__ = ["DEFAULT_CHAT_MODEL", "OpenAIChatModel"]

DEFAULT_CHAT_MODEL = "gpt-4o-mini"
"""The model asked for when neither `model=` nor `RAG_CHAT_MODEL` names one."""


class OpenAIChatModel(AsyncOpenAIChat):
    """A chat model behind an OpenAI-compatible API (OpenAI, Ollama, vLLM, llama.cpp, DashScope...).

    Settings come from the arguments, else `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
    `OPENAI_API_KEY` and `RAG_CHAT_MODEL` (default `gpt-4o-mini`). `timeout` (seconds) bounds connecting
    and each read, also on an injected client; requests that fail with 408/429/5xx, a connection error or a
    timeout are retried `max_retries` times with backoff (`retry_policy` gives full control and wins over
    `max_retries`). An injected `client` is used as is and not closed by `close()`.
    In async code, `await model.acall(prompt)` and `async for chunk in model.astream(prompt)` use an
    `httpx.AsyncClient` with the same retries and errors (see `rag.models.openai_async`).

    Example:
        >>> model = OpenAIChatModel(base_url="http://localhost:11434/v1", model="llama3.2", api_key="k")
        >>> model
        OpenAIChatModel(model='llama3.2', base_url='http://localhost:11434/v1')
        >>> # model.call(Prompt("Hello")).text; for chunk in model.stream(Prompt("Hi")): print(chunk.text)
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        client: httpx.Client | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        default_options: ChatOptions | None = None,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self._base_url, self._api_key = resolve_openai_endpoint(base_url, api_key)
        self._model = model or os.environ.get("RAG_CHAT_MODEL") or DEFAULT_CHAT_MODEL
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()
        self._timeout = httpx.Timeout(timeout)
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)
        self._default_options = default_options or ChatOptions()
        self._url = f"{self._base_url}/chat/completions"

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def default_options(self) -> ChatOptions:
        return self._default_options

    def request_body(self, prompt: Prompt, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body this model sends for `prompt` (options: the prompt's over the model's defaults)."""
        options = (prompt.options or ChatOptions()).merge(self._default_options)
        return build_body(prompt, options, self._model, stream=stream)

    def call(self, prompt: Prompt) -> ChatResponse:
        """The whole reply. Raises `ModelError` on HTTP errors, timeouts and unreadable replies."""
        body = self.request_body(prompt)
        response = self._send(body, stream=False)
        try:
            payload = response.json()
        except ValueError as exc:
            shown = response.text[:200]
            raise ModelError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc
        finally:
            response.close()
        return parse_completion(payload)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """Chunks of new text as they arrive, then one closing chunk (tool calls, finish reason, usage).

        The request body is built now (bad options raise here); the request is sent on first iteration.
        Opening the stream is retried like `call`; once data has arrived a failure raises `ModelError`.
        """
        body = self.request_body(prompt, stream=True)
        return self._stream(body)

    def _stream(self, body: dict[str, Any]) -> Iterator[ChatResponse]:
        response = self._send(body, stream=True)
        try:
            if response.headers.get("content-type", "").startswith("application/json"):
                # The server ignored "stream": it sent one whole completion instead.
                yield parse_completion(json.loads(response.read()))
                return
            yield from self._events(response)
        except httpx.TimeoutException as exc:
            raise ModelError(f"{self._what()} timed out while streaming ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
            raise ModelError(f"{self._what()}: the connection broke while streaming ({kind}: {exc})") from exc
        except ValueError as exc:
            raise ModelError(f"{self._what()} streamed a body that is not JSON") from exc
        finally:
            response.close()

    def _events(self, response: httpx.Response) -> Iterator[ChatResponse]:
        decoder = SSEDecoder()
        accumulator = StreamAccumulator()
        for raw in response.iter_bytes():
            for event in decoder.feed(raw):
                if event.data == "[DONE]":
                    yield accumulator.finish()
                    return
                if event.event == "error":
                    raise ModelError(f"{self._what()} sent an error event: {event.data[:300]!r}")
                try:
                    payload = json.loads(event.data)
                except ValueError as exc:
                    shown = event.data[:200]
                    raise ModelError(
                        f"{self._what()} sent an event whose data is not JSON: {shown!r}"
                    ) from exc
                piece = accumulator.add(payload)
                if piece is not None:
                    yield piece
        decoder.close()
        if accumulator.finish_reason is None:
            raise ModelError(f"{self._what()}: the stream ended before the reply finished (no [DONE])")
        yield accumulator.finish()

    def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        if self._client.is_closed:
            raise ModelError(f"{self._what()}: the HTTP client is closed")
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"

        def send() -> httpx.Response:
            request = self._client.build_request(
                "POST", self._url, json=body, headers=headers, timeout=self._timeout
            )
            return self._client.send(request, stream=stream)

        secrets = [self._api_key.reveal()] if self._api_key is not None else []
        return send_with_retries(
            send, policy=self._retry, what=self._what(), error=ModelError, secrets=secrets
        )

    def _what(self) -> str:
        return f"chat model {self._model!r} at {self._url!r}"

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r}, base_url={self._base_url!r})"
