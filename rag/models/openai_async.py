"""Native async for `OpenAIChatModel`: `acall` and `astream` on `httpx.AsyncClient`.

`AsyncOpenAIChat` is a mixin of `OpenAIChatModel`: it reuses the model's request building
(`request_body`), settings (URL, key, timeout, retry policy) and the wire parsing of
`rag.models.openai_wire`, and sends through `rag.http_async.asend_with_retries`, so the retries and the
error messages are those of the sync path. Cancelling the task that awaits `acall` or reads `astream`
closes the HTTP response, and with it the upstream connection.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from rag.chat.messages import ChatResponse, Prompt
from rag.errors import ModelError
from rag.http_async import LoopBoundClient, asend_with_retries
from rag.models.openai_wire import StreamAccumulator, parse_completion
from rag.models.sse import ServerSentEvent, SSEDecoder

if TYPE_CHECKING:
    from rag.http import RetryPolicy, Secret

__all__ = ["AsyncOpenAIChat", "StreamEvents"]


class StreamEvents:
    """Turns the server-sent events of a streamed completion into `ChatResponse` chunks.

    `feed(bytes)` returns the chunks those bytes complete; `done` is set at `[DONE]`; `end()` checks a
    stream that stopped without `[DONE]` and returns the closing chunk.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._decoder = SSEDecoder()
        self._accumulator = StreamAccumulator()
        self.done = False

    def feed(self, raw: bytes) -> list[ChatResponse]:
        pieces: list[ChatResponse] = []
        for event in self._decoder.feed(raw):
            if self.done:
                break
            piece = self._event(event)
            if piece is not None:
                pieces.append(piece)
        return pieces

    def _event(self, event: ServerSentEvent) -> ChatResponse | None:
        if event.data == "[DONE]":
            self.done = True
            return self._accumulator.finish()
        if event.event == "error":
            raise ModelError(f"{self._what} sent an error event: {event.data[:300]!r}")
        try:
            payload = json.loads(event.data)
        except ValueError as exc:
            shown = event.data[:200]
            raise ModelError(f"{self._what} sent an event whose data is not JSON: {shown!r}") from exc
        return self._accumulator.add(payload)

    def end(self) -> ChatResponse:
        self._decoder.close()
        if self._accumulator.finish_reason is None:
            raise ModelError(f"{self._what}: the stream ended before the reply finished (no [DONE])")
        return self._accumulator.finish()


class AsyncOpenAIChat:
    """`acall`, `astream` and `aclose` for `OpenAIChatModel` (see the module docstring).

    The async client is created in the running event loop on first use; `use_async_client(client)`
    injects one instead (tests pass a transport or point it at a loopback server).

    Example:
        >>> from rag.models import OpenAIChatModel
        >>> model = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
        >>> # text = (await model.acall(Prompt("Hi"))).text; async for c in model.astream(Prompt("Hi")): ...
        >>> callable(model.acall), callable(model.astream)
        (True, True)
    """

    # Provided by OpenAIChatModel.
    _url: str
    _api_key: Secret | None
    _timeout: httpx.Timeout
    _retry: RetryPolicy
    _async: LoopBoundClient | None = None

    def request_body(self, prompt: Prompt, *, stream: bool = False) -> dict[str, Any]:
        raise NotImplementedError  # pragma: no cover - OpenAIChatModel defines it

    def _what(self) -> str:
        raise NotImplementedError  # pragma: no cover - OpenAIChatModel defines it

    def use_async_client(self, client: httpx.AsyncClient) -> None:
        """Send async requests through `client` (not closed by `aclose()`)."""
        self._async = LoopBoundClient(client)

    def _async_client(self) -> httpx.AsyncClient:
        if self._async is None:
            self._async = LoopBoundClient()
        return self._async.get()

    async def aclose(self) -> None:
        """Close the async HTTP client this model created (call it from the loop that used it)."""
        if self._async is not None:
            await self._async.aclose()

    async def acall(self, prompt: Prompt) -> ChatResponse:
        """The whole reply, awaited. Raises `ModelError` as `call` does."""
        body = self.request_body(prompt)
        response = await self._asend(body, stream=False)
        try:
            payload = response.json()
        except ValueError as exc:
            shown = response.text[:200]
            raise ModelError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc
        return parse_completion(payload)

    def astream(self, prompt: Prompt) -> AsyncGenerator[ChatResponse, None]:
        """Chunks as they arrive, as `stream` yields them; the body is built now, sent on first iteration."""
        body = self.request_body(prompt, stream=True)
        return self._astream(body)

    async def _astream(self, body: dict[str, Any]) -> AsyncGenerator[ChatResponse, None]:
        response = await self._asend(body, stream=True)
        try:
            if response.headers.get("content-type", "").startswith("application/json"):
                yield parse_completion(json.loads(await response.aread()))  # the server ignored "stream"
                return
            async for piece in self._aevents(response):
                yield piece
        except httpx.TimeoutException as exc:
            raise ModelError(f"{self._what()} timed out while streaming ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
            raise ModelError(f"{self._what()}: the connection broke while streaming ({kind}: {exc})") from exc
        except ValueError as exc:
            raise ModelError(f"{self._what()} streamed a body that is not JSON") from exc
        finally:
            await response.aclose()  # also on cancellation: an unfinished body closes the connection

    async def _aevents(self, response: httpx.Response) -> AsyncIterator[ChatResponse]:
        events = StreamEvents(self._what())
        async for raw in response.aiter_bytes():
            for piece in events.feed(raw):
                yield piece
            if events.done:
                return
        yield events.end()

    async def _asend(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        client = self._async_client()
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"

        async def send() -> httpx.Response:
            request = client.build_request(
                "POST", self._url, json=body, headers=headers, timeout=self._timeout
            )
            return await client.send(request, stream=stream)

        secrets = [self._api_key.reveal()] if self._api_key is not None else []
        return await asend_with_retries(
            send, policy=self._retry, what=self._what(), error=ModelError, secrets=secrets
        )
