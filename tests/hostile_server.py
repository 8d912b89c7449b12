"""A loopback HTTP server that misbehaves on purpose: echoes credentials, drips bytes, never finishes.

The behaviour is chosen by the first path segment, so one server serves every test and a base URL such as
`http://user:key@127.0.0.1:PORT/drip/v1?api-key=key` picks both the behaviour and the credentials:

- `echo-json`: a 200 whose body is not JSON and quotes the request's `Authorization` header, its request
  line and near-copies of the header (URL-encoded, base64, cut short).
- `echo-status`: the same echo in a 401 body.
- `echo-busy`: the same echo in a 503 body with `Retry-After: 0` (retried, so retries get logged).
- `echo-sse-error`: a 200 event stream whose `error` event quotes the echo.
- `echo-sse-data`: a 200 event stream whose `data:` is the echo (not JSON).
- `ok`: a valid completion, streamed completion or embedding (the request line is recorded).
- `drip`: the headers at once, then the body one byte every `DRIP_SECONDS`, forever.
- `drip-headers`: even the status line and headers one byte at a time.
- `keepalive`: a 200 event stream that sends only `: keep-alive` comments, forever.
- `slow-events`: a valid event stream with one text chunk every `SLOW_EVENT_SECONDS`, never `[DONE]`.

Every endless behaviour stops when the client hangs up or the server closes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

DRIP_SECONDS = 0.4
SLOW_EVENT_SECONDS = 0.3


def echo_text(authorization: str, request_line: str) -> str:
    """What an echoing proxy sends back: the header verbatim and in near-copies, and the request line."""
    encoded = base64.b64encode(authorization.encode()).decode()
    return (
        f"proxy error; you sent Authorization: {authorization} | urlencoded {quote(authorization, safe='')} "
        f"| base64 {encoded} | cut {authorization[:-5]}... | request {request_line}"
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.owner.record(self.requestline)
        mode = self.path.lstrip("/").split("/", 1)[0].split("?", 1)[0]
        body = json.loads(raw) if raw else {}
        echo = echo_text(self.headers.get("Authorization", ""), self.requestline)
        with contextlib.suppress(OSError):  # the client hung up on purpose (a deadline)
            self._answer(mode, body, echo)

    def _answer(self, mode: str, body: dict[str, Any], echo: str) -> None:
        stream = bool(body.get("stream"))
        if mode == "echo-json":
            self._whole(200, echo.encode(), "text/html")
        elif mode == "echo-status":
            self._whole(401, echo.encode(), "text/plain")
        elif mode == "echo-busy":
            self._whole(503, echo.encode(), "text/plain", {"Retry-After": "0"})
        elif mode == "echo-sse-error":
            self._events([f"event: error\ndata: {echo}\n\n".encode()])
        elif mode == "echo-sse-data":
            self._events([f"data: {echo}\n\n".encode()])
        elif mode == "ok":
            self._ok(body, stream)
        elif mode == "drip":
            self._drip(stream)
        elif mode == "drip-headers":
            self._drip_raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n")
        elif mode == "keepalive":
            self._endless(b": keep-alive\n\n", 0.1)
        elif mode == "slow-events":
            piece = {"choices": [{"index": 0, "delta": {"content": "la "}, "finish_reason": None}]}
            self._endless(f"data: {json.dumps(piece)}\n\n".encode(), SLOW_EVENT_SECONDS)
        else:
            self._whole(404, f"unknown mode {mode!r}".encode(), "text/plain")

    def _ok(self, body: dict[str, Any], stream: bool) -> None:
        if "input" in body:
            data = [{"index": i, "embedding": [1.0, float(i)]} for i in range(len(body["input"]))]
            self._whole(200, json.dumps({"data": data}).encode(), "application/json")
        elif stream:
            piece = {"choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}]}
            self._events([f"data: {json.dumps(piece)}\n\ndata: [DONE]\n\n".encode()])
        else:
            message = {"role": "assistant", "content": "fine"}
            reply = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            self._whole(200, json.dumps(reply).encode(), "application/json")

    def _whole(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, piece: bytes) -> None:
        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.wfile.flush()

    def _events(self, pieces: list[bytes]) -> None:
        self._start_chunked("text/event-stream")
        for piece in pieces:
            self._chunk(piece)
        self.wfile.write(b"0\r\n\r\n")

    def _drip(self, stream: bool) -> None:
        if stream:
            self._start_chunked("text/event-stream")
            text = b'data: {"choices": [{"index": 0, "delta": {"content": "' + b"z" * 10_000
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.flush()
            text = b'{"choices": [' + b" " * 100_000
        for byte in text:
            if self.server.owner.stopping.wait(DRIP_SECONDS):
                return
            if stream:
                self._chunk(bytes([byte]))
            else:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

    def _drip_raw(self, text: bytes) -> None:
        self.close_connection = True
        for byte in text:
            if self.server.owner.stopping.wait(DRIP_SECONDS):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def _endless(self, piece: bytes, every: float) -> None:
        self._start_chunked("text/event-stream")
        while not self.server.owner.stopping.wait(every):
            self._chunk(piece)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: HostileServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose here


class HostileServer:
    """The server; `url(mode)` is a base URL for that behaviour, `request_lines` what clients sent."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.request_lines: list[str] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def url(self, mode: str, *, userinfo: str = "", query: str = "") -> str:
        at = f"{userinfo}@" if userinfo else ""
        return f"http://{at}{self.address}/{mode}/v1" + (f"?{query}" if query else "")

    def record(self, request_line: str) -> None:
        with self._lock:
            self.request_lines.append(request_line)

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
