"""Embedding requests per command with an OpenAI-compatible embedder (target: 1 per `rag ask`, 0 per
lexical `rag query`).

A loopback HTTP server speaks `/v1/embeddings` (deterministic vectors from a hash of each text) and
`/v1/chat/completions` (one fixed answer), and counts the requests each command sends. Every command
is a whole `rag` process of this interpreter over a temporary home built from the project's
`data/docs`, once per store kind.

    python benchmarks/embedding_requests.py [--stores numpy,chroma]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
_RAG = [sys.executable, "-c", "import sys; from rag.cli import main; sys.exit(main())"]
_WIDTH = 32
_COMMANDS: list[tuple[str, list[str]]] = [
    ("rag ask", ["ask", "How do I calibrate a probe?", "--no-stream"]),
    ("rag query (hybrid)", ["query", "calibrate a probe", "--mode", "hybrid"]),
    ("rag query --mode vector", ["query", "calibrate a probe", "--mode", "vector"]),
    ("rag query --mode lexical", ["query", "calibrate a probe", "--mode", "lexical"]),
    (
        "rag query --mode lexical --threshold 0.1",
        ["query", "calibrate", "--mode", "lexical", "--threshold", "0.1"],
    ),
]


def _vector(text: str) -> list[float]:
    seed = hashlib.sha256(text.encode()).digest()
    return [(byte - 127.5) / 127.5 for byte in seed[:_WIDTH]]


class _Handler(BaseHTTPRequestHandler):
    server: _Counting

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.endswith("/embeddings"):
            self.server.embeddings += 1
            data = [
                {"object": "embedding", "index": i, "embedding": _vector(t)}
                for i, t in enumerate(body["input"])
            ]
            reply: dict[str, Any] = {"object": "list", "data": data}
        else:
            message = {"role": "assistant", "content": "Calibrate it against the reference."}
            reply = {
                "id": "1",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Counting(ThreadingHTTPServer):
    daemon_threads = True
    embeddings = 0


def _run(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([*_RAG, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"rag {' '.join(args)} failed: {done.stderr.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stores", default="numpy,chroma")
    options = parser.parse_args()
    server = _Counting(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    rows: list[tuple[str, str, int]] = []
    with tempfile.TemporaryDirectory() as folder:
        for store in options.stores.split(","):
            env = {
                **os.environ,
                "RAG_HOME": str(Path(folder) / store),
                "OPENAI_BASE_URL": f"http://{host!s}:{port}/v1",
                "OPENAI_API_KEY": "sk-benchmark",
                "PYTHONPATH": str(_ROOT),
            }
            _run(
                ["ingest", str(_ROOT / "data" / "docs"), "--store", store, "--embedder", "openai:bench"], env
            )
            for label, args in _COMMANDS:
                before = server.embeddings
                _run(args, env)
                rows.append((store, label, server.embeddings - before))
    server.shutdown()
    print("| store | command | embedding requests |\n|---|---|---|")
    for store, label, count in rows:
        print(f"| {store} | `{label}` | {count} |")


if __name__ == "__main__":
    main()
