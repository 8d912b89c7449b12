"""A real HTTP server on loopback that speaks the OpenAI chat-completions and embeddings protocols.

Each test scripts the replies: a queue of `Reply` values (or functions of the request returning one), with
status codes, headers such as `Retry-After`, delays, bodies streamed as chunks cut at any byte, and
connections dropped before or in the middle of a reply. Every request is recorded (method, path, headers,
JSON body). The `openai_server` fixture in conftest.py gives each test a fresh queue.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias


@dataclass
class Reply:
    """One scripted answer.

    `chunks` streams the body with chunked transfer encoding, one chunk per piece; `drop_after` closes the
    socket after that many pieces without ending the body; `drop` closes it without answering at all.
    """

    status: int = 200
    json: Any = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: Sequence[bytes] | None = None
    chunk_delay: float = 0.0
    drop_after: int | None = None
    drop: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    json: Any


Script: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


def completion(
    text: str | None = "Hello!",
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    finish_reason: str = "stop",
    usage: tuple[int, int] = (5, 2),
    model: str = "test-model",
) -> dict[str, Any]:
    """A non-streamed chat completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def chunk(
    content: str | None = None,
    *,
    tool_calls: Sequence[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = None,
    model: str = "test-model",
) -> dict[str, Any]:
    """One `chat.completion.chunk`. With `usage` it is the usage-only chunk (no choices)."""
    base: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model}
    if usage is not None:
        return {
            **base,
            "choices": [],
            "usage": dict(zip(("prompt_tokens", "completion_tokens"), usage, strict=True)),
        }
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = list(tool_calls)
    return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def sse(events: Iterable[dict[str, Any] | str], *, done: bool = True) -> bytes:
    """An event-stream body: each event as a `data:` line (dicts as JSON), then `data: [DONE]`."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode("utf-8")


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`data` cut at the given byte offsets (empty pieces dropped, since an empty chunk ends a body)."""
    bounds = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def stream_reply(body: bytes, cuts: Iterable[int] = (), **options: Any) -> Reply:
    """A 200 `text/event-stream` reply sent in pieces cut at `cuts`."""
    headers = {"Content-Type": "text/event-stream"}
    return Reply(chunks=split_at(body, cuts), headers=headers, **options)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        recorded = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self._answer(self.server.owner.next_reply(recorded))

    do_GET = do_POST

    def _answer(self, reply: Reply) -> None:
        if reply.delay and self.server.owner.stopping.wait(reply.delay):
            return
        if reply.drop:
            self._drop()
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.chunks is None:
            payload = json.dumps(reply.json).encode() if reply.json is not None else reply.body
            if reply.json is not None and "Content-Type" not in reply.headers:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for count, piece in enumerate(reply.chunks):
            if reply.drop_after is not None and count >= reply.drop_after:
                self._drop()
                return
            if reply.chunk_delay and self.server.owner.stopping.wait(reply.chunk_delay):
                return
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # async tests open dozens of connections at once; a backlog of 5 drops SYNs
    owner: OpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out or hang up on purpose make writes fail; that is expected here


class OpenAIServer:
    """The server: `enqueue` replies, point a client at `base_url`, read `requests` afterwards."""

    def __init__(self) -> None:
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.default: Script | None = None
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def enqueue(self, *replies: Script) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            script = self._queue.popleft() if self._queue else self.default
        if script is None:
            return Reply(status=400, json={"error": {"message": "openai_server: no reply scripted"}})
        return script(request) if callable(script) else script

    @property
    def pending(self) -> int:
        return len(self._queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.default = None

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
