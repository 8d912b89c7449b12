"""A broad filter (95% of the records) on a Chroma server store that holds its filter columns.

N random unit vectors of 384 dimensions (metadata `bucket` = row % 100, as benchmarks/chroma_speed.py
writes them) go to a `chroma run` server on a loopback port. After a hybrid search has built the
store's sidecar (filter columns and kept records), top-10 searches under `bucket < 95` are timed in
turns (medians, ms; x = median of the ratios within pairs) against raw chromadb's `query(where=...)`
and against the store's own unfiltered search, and the HTTP requests of one such search are listed.

    python benchmarks/chroma_broad.py [--size 10000] [--repeats 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import httpx  # noqa: E402

import stores.chroma.reading as reading  # noqa: E402
from rag import SearchRequest  # noqa: E402
from rag.filters import key  # noqa: E402
from stores import ChromaVectorStore  # noqa: E402

sys.path.insert(0, str(_HERE))
import chroma_speed as speed  # noqa: E402

_FIELDS: Any = ["documents", "metadatas", "distances"]


def _requests(store: ChromaVectorStore, request: SearchRequest) -> list[str]:
    """The HTTP requests one search sends (`METHOD last-path-segment`)."""
    sent: list[str] = []
    session: httpx.Client = store.chroma_client._server._session

    def hook(request: httpx.Request) -> None:
        sent.append(f"{request.method} {request.url.path.rsplit('/', 1)[-1]}")

    session.event_hooks["request"].append(hook)
    try:
        store.similarity_search(request)
    finally:
        session.event_hooks["request"].remove(hook)
    return sent


def _serve(folder: str) -> tuple[subprocess.Popen[bytes], int]:
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if chroma is None:
        raise SystemExit("no `chroma` command")
    port = speed._free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    command = [chroma, "run", "--path", folder, "--port", str(port), "--host", "127.0.0.1"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    return server, port


def main() -> None:
    import chromadb

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    queries = speed.corpus(args.repeats + 1, seed=99)
    reading.COLUMNS_SECONDS_PER_RECORD = float("inf")  # columns only from the hybrid search below
    with tempfile.TemporaryDirectory() as folder:
        server, port = _serve(folder)
        try:
            url = f"http://127.0.0.1:{port}"
            store = ChromaVectorStore(speed.Lookup(queries), collection="bench", url=url, exact_copy=False)  # type: ignore[arg-type]
            for batch in speed.documents(speed.corpus(args.size)):
                store.add(batch)
            fresh = ChromaVectorStore(speed.Lookup(queries), collection="bench", url=url, exact_copy=False)  # type: ignore[arg-type]
            first = _requests(fresh, SearchRequest("q 0", top_k=10))
            fresh.close()
            store.similarity_search(SearchRequest("q 0", top_k=10, mode="hybrid"))  # builds the sidecar
            raw = chromadb.HttpClient(host="127.0.0.1", port=port).get_collection("bench")
            broad = key("bucket") < 95

            def search(**options: Any) -> Any:
                return lambda i: store.similarity_search(SearchRequest(f"q {i}", top_k=10, **options))

            def raw_where(i: int) -> Any:
                clause: Any = {"bucket": {"$lt": 95.0}}
                return raw.query(query_embeddings=[queries[i]], n_results=10, where=clause, include=_FIELDS)

            against_raw = speed.paired({"store": search(filter=broad), "raw": raw_where}, args.repeats)
            against_own = speed.paired({"store": search(filter=broad), "plain": search()}, args.repeats)
            sent = _requests(store, SearchRequest("q 1", top_k=10, filter=broad))
            store.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"\n{args.size:,} records over HTTP, top-10 under `bucket < 95` (columns held), medians in ms")
    for label, pair, other in (
        (("raw where", against_raw, "raw")),
        ("store unfiltered", against_own, "plain"),
    ):
        store_ms, other_ms = pair["store"] * 1e3, pair[other] * 1e3
        print(f"store {store_ms:.2f}  {label} {other_ms:.2f}  x {pair['ratio']:.2f}")
    print(f"requests of one broad search: {', '.join(sent)}")
    print(f"requests of a fresh store's first plain search: {', '.join(first)}")


if __name__ == "__main__":
    main()
