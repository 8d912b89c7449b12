"""`rag serve` throughput and latency over the sample docs, with the offline extractive answerer.

The script ingests `data/docs` into a temporary home (numpy store by default, `--store chroma` for the
CLI's default), starts the real `rag serve` command on a free loopback port (rate limit off), and drives
it with 1, 8 and 32 concurrent clients (`httpx.AsyncClient`), each sending requests back to back for
`--seconds`. It prints requests/s and p50/p95 latency for `POST /v1/chat/completions` (non-streamed) and
`POST /v1/search`. The questions cycle through `data/questions.jsonl`.

Run: python benchmarks/serve.py [--seconds 5] [--store numpy|chroma]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import quantiles
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CONCURRENCY = (1, 8, 32)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _questions() -> list[str]:
    lines = (ROOT / "data" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def _start(home: Path, store: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), RAG_HOME=str(home), RAG_STORE=store)
    cli = [sys.executable, "-c", "from rag.cli import main; main()"]
    subprocess.run([*cli, "ingest", str(ROOT / "data" / "docs")], env=env, check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen([*cli, "serve", "--port", str(port), "--rate-limit", "0"], env=env)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/health").status_code == 200:
                return server, base
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("rag serve did not start")


def _body(kind: str, question: str) -> dict[str, Any]:
    if kind == "chat":
        return {"model": "rag", "messages": [{"role": "user", "content": question}]}
    return {"query": question, "top_k": 4}


async def _run(base: str, kind: str, clients: int, seconds: float, questions: list[str]) -> list[float]:
    path = "/v1/chat/completions" if kind == "chat" else "/v1/search"
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:

        async def worker(offset: int) -> None:
            i = offset
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                response = await client.post(path, json=_body(kind, questions[i % len(questions)]))
                response.raise_for_status()
                latencies.append(time.perf_counter() - start)
                i += clients

        await asyncio.gather(*(worker(n) for n in range(clients)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="Duration of each measurement.")
    parser.add_argument("--store", choices=("numpy", "chroma"), default="numpy")
    args = parser.parse_args()
    questions = _questions()
    with tempfile.TemporaryDirectory() as folder:
        server, base = _start(Path(folder) / "home", args.store)
        try:
            what = f"{args.store} store, extractive answerer"
            print(f"rag serve over data/docs ({what}), {args.seconds:g} s per row")
            print(f"{'endpoint':<22}{'clients':>8}{'requests':>10}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}")
            for kind in ("chat", "search"):
                asyncio.run(_run(base, kind, 1, 1.0, questions))  # warm up: store loaded, caches filled
                for clients in CONCURRENCY:
                    latencies = asyncio.run(_run(base, kind, clients, args.seconds, questions))
                    cuts = quantiles(latencies, n=100)
                    name = "/v1/chat/completions" if kind == "chat" else "/v1/search"
                    rate = len(latencies) / args.seconds
                    print(
                        f"{name:<22}{clients:>8}{len(latencies):>10}{rate:>9.1f}"
                        f"{cuts[49] * 1000:>9.1f}{cuts[94] * 1000:>9.1f}"
                    )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
