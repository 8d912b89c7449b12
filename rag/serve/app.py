"""The ASGI app of `rag serve` (Starlette): the OpenAI chat-completions API and a search endpoint.

Routes: `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions` (plain or `stream`: SSE
`chat.completion.chunk` events, then `data: [DONE]`), `POST /v1/search`, and, without a token, `GET /health`
and the page at `/` (`rag.serve.page`), which asks the API with the token its user gives.
Every error has OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with its status.
A client that disconnects cancels its request, down to the upstream model request.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from rag.advisors.request import USAGE
from rag.chat.messages import ChatResponse
from rag.client.aspecs import AsyncStreamResponseSpec
from rag.errors import RagError
from rag.hits import hit_record
from rag.serve.body import decode_body
from rag.serve.config import FAILED_AUTH_LIMIT, ServeConfig
from rag.serve.conversation import CONVERSATION_HEADER, conversation_id_of
from rag.serve.limits import BodyTooLarge, RateLimiter, read_capped
from rag.serve.page import page_routes
from rag.serve.service import RagService
from rag.serve.wire import (
    ApiError,
    ChatRequest,
    citations_text,
    completion_body,
    completion_chunk,
    error_body,
    new_completion_id,
    parse_chat_request,
    source_rows,
    sse_event,
    status_of,
)

__all__ = ["CONVERSATION_HEADER", "create_app"]

logger = logging.getLogger("rag.serve")

T = TypeVar("T")
Endpoint = Callable[[Request], Awaitable[Response]]


class _ClientGone(Exception):
    """The client disconnected before the answer was ready."""


def _too_many(message: str, wait: float) -> ApiError:
    error = ApiError(message, status=429, type="rate_limit_error", code="rate_limit_exceeded")
    error.retry_after = wait  # type: ignore[attr-defined]
    return error


def _error_response(error: ApiError) -> JSONResponse:
    headers = {}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, round(retry_after)))
    return JSONResponse(error_body(error), status_code=error.status, headers=headers)


class _Server:
    """The endpoints, with what they share: the service, the settings and the rate limiter."""

    def __init__(self, service: RagService, config: ServeConfig) -> None:
        self.service = service
        self.config = config
        self.limiter = RateLimiter(config.rate_limit)
        self.failures = RateLimiter(FAILED_AUTH_LIMIT)
        self.created = int(time.time())

    # -- guards --------------------------------------------------------------------------------------

    def _client(self, request: Request) -> str:
        return request.client.host if request.client is not None else "unknown"

    def _check_token(self, request: Request) -> None:
        token = self.config.token
        if token is None:
            return
        client = self._client(request)
        wait = self.failures.wait(client)
        if wait is not None:
            # Too many wrong tokens from this address: no answer says whether the next one is right.
            raise _too_many(f"too many failed token checks; retry in {wait:.1f} s", wait)
        given = b""
        for name, value in request.headers.raw:
            if name.lower() == b"authorization":
                given = value
                break
        scheme, _, sent = given.partition(b" ")
        # compare_digest: the time taken does not reveal how much of the token was right.
        matches = hmac.compare_digest(sent.strip(), token.reveal().encode())
        if scheme.lower() != b"bearer" or not matches:
            self.failures.acquire(client)
            raise ApiError(
                "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                status=401,
                code="invalid_api_key",
            )

    def _check_rate(self, request: Request) -> None:
        wait = self.limiter.acquire(self._client(request))
        if wait is not None:
            limit = self.config.rate_limit
            raise _too_many(f"rate limit of {limit} requests per minute reached; retry in {wait:.1f} s", wait)

    async def _json(self, request: Request) -> Any:
        limit = self.config.max_body_bytes
        too_large = ApiError(
            f"the request body is larger than {limit} bytes", status=413, code="request_too_large"
        )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large
        try:
            raw = await read_capped(request.stream(), limit)
        except BodyTooLarge:
            raise too_large from None
        # Decoding and checking a large body takes time: off the event loop, so /health never waits.
        return await asyncio.to_thread(decode_body, raw)

    def guarded(self, endpoint: Endpoint) -> Endpoint:
        """`endpoint` behind the token and rate checks, its errors in OpenAI's shape."""

        async def run(request: Request) -> Response:
            try:
                self._check_rate(request)  # first: failed token checks count too
                self._check_token(request)
                return await endpoint(request)
            except RagError as exc:
                return _error_response(status_of(exc))
            except _ClientGone:
                return Response(status_code=499)

        return run

    # -- endpoints -----------------------------------------------------------------------------------

    def _model(self) -> dict[str, Any]:
        model = {"id": self.config.model_name, "object": "model", "created": self.created, "owned_by": "rag"}
        if self.config.home_name:
            model["home"] = self.config.home_name  # what the page names as the documents it asks
        return model

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [self._model()]})

    async def model(self, request: Request) -> Response:
        self._check_model(request.path_params["model"])
        return JSONResponse(self._model())

    def _check_model(self, name: str) -> None:
        if name != self.config.model_name:
            raise ApiError(
                f"the model {name!r} does not exist; this server offers {self.config.model_name!r}",
                status=404,
                param="model",
                code="model_not_found",
            )

    async def search(self, request: Request) -> Response:
        body = await self._json(request)
        search = await asyncio.to_thread(self.service.search_request, body)  # a filter parses here
        documents = await _until_disconnected(request, self.service.run_search(search))
        hits = [{**hit_record(rank, d), "metadata": dict(d.metadata)} for rank, d in enumerate(documents, 1)]
        return JSONResponse({"object": "list", "query": body["query"], "data": hits})

    async def chat(self, request: Request) -> Response:
        body = await self._json(request)
        chat = await asyncio.to_thread(parse_chat_request, body)  # a filter parses here
        self._check_model(chat.model)
        conversation_id = conversation_id_of(request.headers.raw) or chat.user
        if chat.stream:
            return await self._chat_stream(request, chat, conversation_id)
        response = await _until_disconnected(request, self.service.answer(chat, conversation_id))
        rows = source_rows(response.documents)
        body = completion_body(
            completion_id=new_completion_id(),
            model=self.config.model_name,
            text=response.text + citations_text(response.documents, response.text),
            finish_reason=response.chat_response.finish_reason,
            usage=response.context.get(USAGE) or response.chat_response.usage,
            sources=rows,
            conversation_id=conversation_id,
        )
        return JSONResponse(body)

    async def _chat_stream(
        self, request: Request, chat: ChatRequest, conversation_id: str | None
    ) -> Response:
        spec = self.service.stream(chat, conversation_id)
        chunks = spec.chat_response()
        # The first chunk is awaited here, so retrieval and model errors still get their status code.
        try:
            first = await _until_disconnected(request, anext(chunks, None))
        except BaseException:
            await chunks.aclose()
            raise
        events = _events(spec, chunks, first, chat, conversation_id, self.config.model_name)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events, media_type="text/event-stream", headers=headers)


async def _events(
    spec: AsyncStreamResponseSpec,
    chunks: AsyncIterator[ChatResponse],
    first: ChatResponse | None,
    chat: ChatRequest,
    conversation_id: str | None,
    model: str,
) -> AsyncIterator[bytes]:
    """The SSE body: a role chunk, the text chunks, the citations, a closing chunk, usage, `[DONE]`."""
    completion_id = new_completion_id()
    finish: str | None = None
    try:
        yield completion_chunk(completion_id, model, {"role": "assistant", "content": ""})
        item, pieces = first, list[str]()
        while item is not None:
            if item.text:
                pieces.append(item.text)
                yield completion_chunk(completion_id, model, {"content": item.text})
            finish = item.finish_reason or finish
            item = await anext(chunks, None)
        rows = source_rows(spec.documents)
        if rows:
            text = citations_text(spec.documents, "".join(pieces))
            yield completion_chunk(completion_id, model, {"content": text})
        extra = {"sources": rows, "conversation_id": conversation_id}
        yield completion_chunk(completion_id, model, {}, finish_reason=finish or "stop", extra=extra)
        if chat.include_usage:
            yield completion_chunk(completion_id, model, None, usage=spec.context.get(USAGE))
        yield sse_event("[DONE]")
    except RagError as exc:
        # Headers are sent: the error travels as an event, as OpenAI does mid-stream; no [DONE] follows.
        logger.warning("stream failed: %s", exc)
        yield sse_event(error_body(status_of(exc)))
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """The result of `work`, or `_ClientGone` once the client hangs up (and `work` is cancelled)."""
    task = asyncio.ensure_future(work)

    async def disconnected() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            watcher.cancel()
            raise _ClientGone()
        watcher.cancel()
    return task.result()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _error_response(ApiError(message, status=exc.status_code, code=code))


async def _server_error(request: Request, exc: Exception) -> Response:
    logger.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    error = ApiError(
        f"the server failed ({type(exc).__name__}); see its log", status=500, type="server_error"
    )
    return _error_response(error)


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(service: RagService, config: ServeConfig | None = None) -> Starlette:
    """The Starlette app serving `service` under `config` (see the module docstring).

    Example:
        >>> from rag import HashingEmbedding, SearchRequest
        >>> from rag.models import ExtractiveChatModel
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> service = RagService(store, ExtractiveChatModel(), SearchRequest("x"))
        >>> app = create_app(service)  # then: uvicorn.run(app, host="127.0.0.1", port=8000)
        >>> sorted(route.path for route in app.routes)[:2]
        ['/health', '/v1/chat/completions']
    """
    server = _Server(service, config or ServeConfig())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        aclose = getattr(service.model, "aclose", None)
        if callable(aclose):
            await aclose()  # the model's async HTTP client belongs to this loop

    routes = [
        Route("/health", _health, methods=["GET"]),
        Route("/v1/models", server.guarded(server.models), methods=["GET"]),
        Route("/v1/models/{model:path}", server.guarded(server.model), methods=["GET"]),
        Route("/v1/chat/completions", server.guarded(server.chat), methods=["POST"]),
        Route("/v1/search", server.guarded(server.search), methods=["POST"]),
        *page_routes(),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: _http_error,
        Exception: _server_error,
    }
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
