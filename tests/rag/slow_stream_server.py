"""A loopback server that streams chat-completion chunks slowly and notices when its client hangs up.

Between two chunks it watches the socket: end-of-file (or a reset) means the client closed the connection,
which is what cancelling a stream must do to its upstream request. `closed` is set then.
"""

from __future__ import annotations

import json
import select
import socket
import threading


class SlowStreamServer:
    """Streams `chunks` SSE chunks, one every `interval` seconds, after `head_delay` seconds of silence;
    sets `opened` when a request arrived and `closed` when its client hung up."""

    def __init__(self, chunks: int = 400, interval: float = 0.02, head_delay: float = 0.0) -> None:
        self.chunks = chunks
        self.interval = interval
        self.head_delay = head_delay
        self.opened = threading.Event()
        self.closed = threading.Event()
        self.finished = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=16)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            self.opened.set()
            if self.head_delay and self._hung_up(conn, self.head_delay):
                return
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            self.opened.set()
            for i in range(self.chunks):
                event = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "model": "slow",
                    "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
                }
                piece = f"data: {json.dumps(event)}\n\n".encode()
                try:
                    conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    readable, _, _ = select.select([conn], [], [], self.interval)
                    if readable and not conn.recv(1024):
                        self.closed.set()
                        return
                except OSError:
                    self.closed.set()
                    return
            self.finished.set()

    def _hung_up(self, conn: socket.socket, seconds: float) -> bool:
        """Wait up to `seconds` before answering; True (and `closed` set) if the client hung up meanwhile."""
        readable, _, _ = select.select([conn], [], [], seconds)
        if readable and not conn.recv(1024):
            self.closed.set()
            return True
        return False

    def close(self) -> None:
        self._sock.close()
