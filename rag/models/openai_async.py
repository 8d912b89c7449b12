"""Native async for `OpenAIChatModel`: `acall` and `astream` on `httpx.AsyncClient`.

`AsyncOpenAIChat` is a mixin of `OpenAIChatModel`: it reuses the model's request building
(`request_body`), endpoint (URL, credentials, redaction), deadlines, retry policy and the wire parsing of
`rag.models.openai_wire`, and sends through `rag.http_async.asend_with_retries`, so the retries, the
deadlines and the (masked) error messages are those of the sync path. Cancelling the task that awaits
`acall` or reads `astream` closes the HTTP response, and with it the upstream connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from rag.chat.messages import ChatResponse, Prompt
from rag.errors import ModelError
from rag.http_async import LoopBoundClient, asend_with_retries
from rag.models.openai_wire import StreamAccumulator, parse_completion
from rag.models.sse import ServerSentEvent, SSEDecoder
from rag.redaction import Redactor, masked_errors

if TYPE_CHECKING:
    from rag.endpoint import Endpoint
    from rag.http import RetryPolicy

__all__ = ["AsyncOpenAIChat", "StreamEvents"]


class StreamEvents:
    """Turns the server-sent events of a streamed completion into `ChatResponse` chunks.

    `feed(bytes)` returns the chunks those bytes complete; `done` is set at `[DONE]`; `end()` checks a
    stream that stopped without `[DONE]` and returns the closing chunk.
    """

    def __init__(self, what: str, mask: Redactor) -> None:
        self._what = what
        self._mask = mask
        self._decoder = SSEDecoder()
        self._accumulator = StreamAccumulator()
        self.done = False
        self.events = 0  # data events seen: keep-alive comments do not count

    def feed(self, raw: bytes) -> list[ChatResponse]:
        pieces: list[ChatResponse] = []
        for event in self._decoder.feed(raw):
            if self.done:
                break
            self.events += 1
            piece = self._event(event)
            if piece is not None:
                pieces.append(piece)
        return pieces

    def _event(self, event: ServerSentEvent) -> ChatResponse | None:
        if event.data == "[DONE]":
            self.done = True
            return self._accumulator.finish()
        if event.event == "error":
            shown = self._mask(event.data[:600])[:300]
            raise ModelError(f"{self._what} sent an error event: {shown!r}")
        try:
            payload = json.loads(event.data)
        except ValueError as exc:
            shown = self._mask(event.data[:400])[:200]
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
    _endpoint: Endpoint
    _url: httpx.URL
    _timeout: float
    _stream_timeout: float | None
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
        """The whole reply, awaited within `timeout` seconds (retries included). Raises `ModelError` as
        `call` does."""
        body = self.request_body(prompt)
        with masked_errors(self._endpoint.redactor):
            try:
                return await asyncio.wait_for(self._acall(body), self._timeout)
            except TimeoutError:
                raise ModelError(
                    f"{self._what()} did not answer within its {self._timeout:g} s timeout"
                ) from None

    async def _acall(self, body: dict[str, Any]) -> ChatResponse:
        response = await self._asend(body, stream=False)
        try:
            payload = json.loads(response.content)
        except ValueError as exc:
            shown = self._endpoint.redactor(response.text[:400])[:200]
            raise ModelError(f"{self._what()} returned a body that is not JSON: {shown!r}") from exc
        return parse_completion(payload)

    def astream(self, prompt: Prompt) -> AsyncGenerator[ChatResponse, None]:
        """Chunks as they arrive, as `stream` yields them; the body is built now, sent on first iteration.

        The same limits as `stream`: at most `timeout` seconds for each data event (the first one
        includes opening the stream), and the whole stream within `stream_timeout` when it is set.
        """
        body = self.request_body(prompt, stream=True)
        return self._astream(body)

    async def _astream(self, body: dict[str, Any]) -> AsyncGenerator[ChatResponse, None]:
        with masked_errors(self._endpoint.redactor):
            limits = _StreamLimits(self._timeout, self._stream_timeout, self._what())
            response = await limits.within(self._asend(body, stream=True))
            try:
                if response.headers.get("content-type", "").startswith("application/json"):
                    data = await limits.within(response.aread())  # the server ignored "stream"
                    yield parse_completion(json.loads(data))
                    return
                async for piece in self._aevents(response, limits):
                    yield piece
            except httpx.TimeoutException as exc:
                kind = type(exc).__name__
                idle = f"no data for {self._timeout:g} s (timeout, {kind})"
                raise ModelError(f"{self._what()} timed out while streaming: {idle}") from exc
            except httpx.HTTPError as exc:
                kind = type(exc).__name__
                raise ModelError(
                    f"{self._what()}: the connection broke while streaming ({kind}: {exc})"
                ) from exc
            except ValueError as exc:
                raise ModelError(f"{self._what()} streamed a body that is not JSON") from exc
            finally:
                await response.aclose()  # also on cancellation: an unfinished body closes the connection

    async def _aevents(self, response: httpx.Response, limits: _StreamLimits) -> AsyncIterator[ChatResponse]:
        events = StreamEvents(self._what(), self._endpoint.redactor)
        chunks = response.aiter_bytes().__aiter__()
        while True:
            try:
                raw = await limits.within(anext(chunks))
            except StopAsyncIteration:
                break
            seen = events.events
            pieces = events.feed(raw)
            if events.events > seen:
                limits.touch()
            for piece in pieces:
                yield piece
            if events.done:
                return
        yield events.end()

    async def _asend(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        client = self._async_client()
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        headers.update(self._endpoint.headers())

        async def send() -> httpx.Response:
            request = client.build_request(
                "POST", self._url, json=body, headers=headers, timeout=self._timeout
            )
            return await client.send(request, stream=stream)

        return await asend_with_retries(
            send, policy=self._retry, what=self._what(), error=ModelError, redactor=self._endpoint.redactor
        )


class _StreamLimits:
    """The stream deadlines of `OpenAIChatModel`: `idle` seconds for each data event, `total` for it all."""

    def __init__(self, idle: float, total: float | None, what: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle = idle
        self._total = total
        self._what = what
        start = self._loop.time()
        self._idle_end = start + idle
        self._total_end = None if total is None else start + total

    def touch(self) -> None:
        """A data event arrived: the idle wait starts again."""
        self._idle_end = self._loop.time() + self._idle

    async def within(self, step: Any) -> Any:
        """`await step`, cut at the nearer deadline with a `ModelError` that names it."""
        ends = self._idle_end if self._total_end is None else min(self._idle_end, self._total_end)
        try:
            return await asyncio.wait_for(step, max(0.0, ends - self._loop.time()))
        except TimeoutError:
            if self._total_end is not None and self._total_end <= self._idle_end:
                raise ModelError(
                    f"{self._what} did not finish within its {self._total:g} s stream_timeout"
                ) from None
            raise ModelError(
                f"{self._what} timed out while streaming: no data for {self._idle:g} s (timeout)"
            ) from None
