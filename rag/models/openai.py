"""`OpenAIChatModel`: any OpenAI-compatible `/chat/completions` endpoint over httpx, plain or streamed."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from typing import Any

import httpx

from rag.chat.messages import ChatOptions, ChatResponse, Prompt
from rag.deadline import Cutter, Deadline
from rag.errors import InvalidRequestError, ModelError
from rag.http import Endpoint, RetryPolicy, send_with_retries, send_within, timed_send
from rag.models.openai_async import AsyncOpenAIChat
from rag.models.openai_wire import StreamAccumulator, build_body, parse_completion
from rag.models.sse import SSEDecoder
from rag.models.stream_pump import PumpTimeout, StreamPump
from rag.redaction import masked_errors

__all__ = ["DEFAULT_CHAT_MODEL", "OpenAIChatModel"]

DEFAULT_CHAT_MODEL = "gpt-4o-mini"
"""The model asked for when neither `model=` nor `RAG_CHAT_MODEL` names one."""


class OpenAIChatModel(AsyncOpenAIChat):
    """A chat model behind an OpenAI-compatible API (OpenAI, Ollama, vLLM, llama.cpp, DashScope...).

    Settings come from the arguments, else `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
    `OPENAI_API_KEY` and `RAG_CHAT_MODEL` (default `gpt-4o-mini`). Requests that fail with 408/429/5xx, a
    connection error or a timeout are retried `max_retries` times with backoff (`retry_policy` gives full
    control and wins over `max_retries`). An injected `client` is used as is and not closed by `close()`.

    Deadlines (seconds), however slowly the server sends its bytes:

    - `call()` ends within `timeout`, retries and their waits included.
    - `stream()` waits at most `timeout` for each *data* event (the first one included, with the opening
      of the stream and its retries); keep-alive comments and partial events do not count. With
      `stream_timeout`, the whole stream also ends within that many seconds.

    The key and any credential in the base URL (`https://user:pw@host/v1`, `?api-key=...`) never appear in
    errors, logs or this model's repr, nor do near-copies of them that a server echoes back.

    In async code, `await model.acall(prompt)` and `async for chunk in model.astream(prompt)` use an
    `httpx.AsyncClient` with the same retries, deadlines and masking (see `rag.models.openai_async`).

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
        stream_timeout: float | None = None,
    ) -> None:
        _check_seconds("timeout", timeout)
        if stream_timeout is not None:
            _check_seconds("stream_timeout", stream_timeout)
        self._endpoint = Endpoint(base_url, api_key)
        self._model = model or os.environ.get("RAG_CHAT_MODEL") or DEFAULT_CHAT_MODEL
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()
        self._timeout = float(timeout)
        self._stream_timeout = stream_timeout
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)
        self._default_options = default_options or ChatOptions()
        self._url = self._endpoint.url("chat/completions")

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        """The base URL with any credentials in it masked (`***`)."""
        return self._endpoint.shown

    @property
    def default_options(self) -> ChatOptions:
        return self._default_options

    def request_body(self, prompt: Prompt, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body this model sends for `prompt` (options: the prompt's over the model's defaults)."""
        options = (prompt.options or ChatOptions()).merge(self._default_options)
        return build_body(prompt, options, self._model, stream=stream)

    def call(self, prompt: Prompt) -> ChatResponse:
        """The whole reply, within `timeout` seconds. Raises `ModelError` on HTTP errors, timeouts and
        unreadable replies."""
        body = self.request_body(prompt)
        with masked_errors(self._endpoint.redactor):
            self._check_open()
            response = send_within(
                self._client,
                functools.partial(self._build, body, stream=False),
                timeout=self._timeout,
                policy=self._retry,
                what=self._what(),
                error=ModelError,
                redactor=self._endpoint.redactor,
            )
            try:
                payload = json.loads(response.content)
            except ValueError as exc:
                shown = self._endpoint.redactor(response.text[:400])[:200]
                raise ModelError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc
            return parse_completion(payload)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """Chunks of new text as they arrive, then one closing chunk (tool calls, finish reason, usage).

        The request body is built now (bad options raise here); the request is sent on first iteration.
        Opening the stream is retried like `call`; once data has arrived a failure raises `ModelError`.
        Raises `ModelError` when no data event comes for `timeout` seconds, or the stream outlasts
        `stream_timeout`.
        """
        body = self.request_body(prompt, stream=True)
        return self._stream(body)

    def _stream(self, body: dict[str, Any]) -> Iterator[ChatResponse]:
        with masked_errors(self._endpoint.redactor):
            self._check_open()
            pump = StreamPump(
                lambda cutter, deadline: self._open(body, cutter, deadline),
                idle=self._timeout,
                total=self._stream_timeout,
            )
            try:
                yield from self._read(pump)
            finally:
                pump.close()

    def _read(self, pump: StreamPump) -> Iterator[ChatResponse]:
        content_type = str(self._take(pump))
        if content_type.startswith("application/json"):
            # The server ignored "stream": it sent one whole completion instead.
            data = b"".join(iter(lambda: self._take(pump), None))
            try:
                yield parse_completion(json.loads(data))
            except ValueError as exc:
                raise ModelError(f"{self._what()} streamed a body that is not JSON") from exc
            return
        yield from self._events(pump)

    def _take(self, pump: StreamPump) -> Any:
        """The next item's value (content type or bytes; None at the end), errors and limits raised."""
        try:
            kind, value = pump.next()
        except PumpTimeout as timeout:
            if timeout.which == "total":
                raise ModelError(
                    f"{self._what()} did not finish within its {self._stream_timeout:g} s stream_timeout"
                ) from None
            raise ModelError(
                f"{self._what()} timed out while streaming: no data for {self._timeout:g} s (timeout)"
            ) from None
        if kind == "error":
            self._raise_from(value)
        return value

    def _raise_from(self, exc: BaseException) -> None:
        if isinstance(exc, httpx.TimeoutException):
            kind = type(exc).__name__
            raise ModelError(
                f"{self._what()} timed out while streaming: no data for {self._timeout:g} s (timeout, {kind})"
            ) from exc
        if isinstance(exc, httpx.HTTPError):
            kind = type(exc).__name__
            raise ModelError(f"{self._what()}: the connection broke while streaming ({kind}: {exc})") from exc
        raise exc

    def _events(self, pump: StreamPump) -> Iterator[ChatResponse]:
        decoder = SSEDecoder()
        accumulator = StreamAccumulator()
        mask = self._endpoint.redactor
        while (raw := self._take(pump)) is not None:
            for event in decoder.feed(raw):
                pump.touch()
                if event.data == "[DONE]":
                    yield accumulator.finish()
                    return
                if event.event == "error":
                    shown = mask(event.data[:600])[:300]
                    raise ModelError(f"{self._what()} sent an error event: {shown!r}")
                try:
                    payload = json.loads(event.data)
                except ValueError as exc:
                    shown = mask(event.data[:400])[:200]
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

    def _build(self, body: dict[str, Any], *, stream: bool) -> httpx.Request:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        headers.update(self._endpoint.headers())
        return self._client.build_request("POST", self._url, json=body, headers=headers)

    def _open(self, body: dict[str, Any], cutter: Cutter, deadline: Deadline) -> httpx.Response:
        """Open the stream (retries included) before `deadline`; each read then waits up to `timeout`."""
        build = functools.partial(self._build, body, stream=True)
        return send_with_retries(
            timed_send(self._client, build, deadline, cutter, read=self._timeout),
            policy=self._retry,
            what=self._what(),
            error=ModelError,
            deadline=deadline,
            redactor=self._endpoint.redactor,
        )

    def _check_open(self) -> None:
        if self._client.is_closed:
            raise ModelError(f"{self._what()}: the HTTP client is closed")

    def _what(self) -> str:
        return f"chat model {self._model!r} at {self._endpoint.show('chat/completions')!r}"

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r}, base_url={self.base_url!r})"


def _check_seconds(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidRequestError(f"{name} must be a positive number of seconds, got {value!r}")
