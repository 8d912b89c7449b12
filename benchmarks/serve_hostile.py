"""`rag serve` under hostile bodies: how long each takes to answer, and the slowest `/health` meanwhile.

The app serves a one-document numpy store under a real uvicorn on a free loopback port (rate limit off).
A thread asks `/health` every 20 ms while each body below is posted to `/v1/search`: filters past the
size limits (refused at once), the largest filters within them (answered), and a body nested 100,000
deep. A request that blocked the event loop would show as a slow `/health`.

Run: python benchmarks/serve_hostile.py
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.filters import MAX_COMPARISONS, MAX_LIST_VALUES
from rag.models import ExtractiveChatModel
from rag.serve import RagService, ServeConfig, create_app
from stores import NumpyVectorStore


def _bodies() -> list[tuple[str, bytes]]:
    def search(flt: str) -> bytes:
        return json.dumps({"query": "beacon", "filter": flt}).encode()

    within_list = "n IN [" + ",".join(str(i) for i in range(MAX_LIST_VALUES)) + "]"
    return [
        ("90k AND clauses (990 KB)", search(" AND ".join(["n == 1"] * 90_000))),
        ("150k IN values (939 KB)", search("n IN [" + ",".join(str(i) for i in range(150_000)) + "]")),
        (
            f"{MAX_COMPARISONS} clauses (limit)",
            search(" OR ".join(["n == 2"] * (MAX_COMPARISONS - 1) + ["n == 1"])),
        ),
        (f"{MAX_LIST_VALUES} IN values (limit)", search(within_list)),
        ("JSON nested 100k deep", b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ]


def main() -> None:
    store = NumpyVectorStore(HashingEmbedding(dimensions=64))
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md", "n": 1})])
    app = create_app(
        RagService(store, ExtractiveChatModel(), SearchRequest("defaults")), ServeConfig(rate_limit=0)
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    while not server.started:
        time.sleep(0.05)
    print(f"{'body':<28} {'status':>6} {'answered (s)':>13} {'worst /health (s)':>18}")
    for name, body in _bodies():
        worst = [0.0]
        stop = threading.Event()

        def probe(worst: list[float] = worst, stop: threading.Event = stop) -> None:
            with httpx.Client(base_url=base, timeout=120) as client:
                while not stop.is_set():
                    started = time.monotonic()
                    client.get("/health")
                    worst[0] = max(worst[0], time.monotonic() - started)
                    stop.wait(0.02)

        prober = threading.Thread(target=probe)
        prober.start()
        started = time.monotonic()
        reply = httpx.post(f"{base}/v1/search", content=body, timeout=300)
        took = time.monotonic() - started
        stop.set()
        prober.join()
        print(f"{name:<28} {reply.status_code:>6} {took:>13.2f} {worst[0]:>18.3f}")
    server.should_exit = True
    thread.join(timeout=20)


if __name__ == "__main__":
    main()
