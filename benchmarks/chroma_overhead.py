"""The Chroma store's own time per unfiltered top-10 search: everything but Chroma's `query` call.

A store search and a raw chromadb query (for another vector) alternate, so Python's caches are as
cold as in real use; the time inside the store's `collection.query` is subtracted from each search.
The benchmark's embedder (a dict lookup and a copy) and building the `SearchRequest` are included.

    python benchmarks/chroma_overhead.py --size 10000 --queries 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # last, for chroma_speed's helpers only

from chroma_speed import Lookup, corpus, documents  # noqa: E402

from rag import SearchRequest  # noqa: E402


class _Timed:
    """The store's collection, timing each `query` (every other call goes straight through)."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.spent = 0.0

    def query(self, **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.collection.query(**options)
        finally:
            self.spent += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)


def measure(size: int, queries: int) -> dict[str, float]:
    """Median µs of the store's own time, the store's whole search and raw chromadb's query."""
    from stores import ChromaVectorStore

    vectors = corpus(2 * queries + 1, seed=99)
    with tempfile.TemporaryDirectory() as folder:
        store = ChromaVectorStore(Lookup(vectors), collection="bench", path=folder, exact_copy=False)  # type: ignore[arg-type]
        for batch in documents(corpus(size)):
            store.add(batch)
        raw = store.chroma_collection
        fields: Any = ["metadatas", "documents", "distances"]
        store.similarity_search(SearchRequest("q 0", top_k=10))  # the collection's size is known now
        timed = _Timed(store._nearest.collection)
        store._nearest.collection = timed
        own, whole, direct = [], [], []
        for i in range(1, queries + 1):
            timed.spent = 0.0
            started = time.perf_counter()
            store.similarity_search(SearchRequest(f"q {i}", top_k=10))
            middle = time.perf_counter()
            raw.query(query_embeddings=[vectors[queries + i]], n_results=10, include=fields)
            direct.append(time.perf_counter() - middle)
            whole.append(middle - started)
            own.append(whole[-1] - timed.spent)
        store.close()
    return {
        name: statistics.median(values) * 1e6
        for name, values in (("own", own), ("store", whole), ("raw", direct))
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    figures = measure(args.size, args.queries)
    print(
        f"N={args.size:,}: store's own time {figures['own']:.0f} us a search (median); whole search "
        f"{figures['store']:.0f} us, raw chromadb query {figures['raw']:.0f} us"
    )


if __name__ == "__main__":
    main()
