"""What reading through `DocumentsView` costs: a store's own search beside the commands' view of it.

`rag query`, `ask`, `chat`, `eval` and `rag serve` search through `rag.retrieval.DocumentsView`, which
ANDs `NOT ('rag:kind' == 'chat_memory')` into every filter (chat memory is never a document) and, by
default, searches three times deeper to drop near-duplicate texts. This times a top-10 search on the
store itself, through the view without deduplication, and through the default view, for the vector
and hybrid modes (medians over the last 20 queries), on embedded Chroma and the numpy store holding
N random unit vectors and no memory turns.

    python benchmarks/documents_view.py [--size 20000] [--queries 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np

from rag import Document, HashingEmbedding, SearchRequest
from rag.retrieval import DocumentsView
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore


def _fill(store: VectorStore, size: int) -> None:
    rng = np.random.default_rng(0)
    for start in range(0, size, 5000):
        block = rng.standard_normal((min(size, start + 5000) - start, 384)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        store.add(
            Document(
                f"d{start + i:07d}", f"text {start + i}", {"source": f"s{i % 100}.md"}, embedding=row.tolist()
            )
            for i, row in enumerate(block)
        )


def _row(kind: str, store: VectorStore, queries: int) -> list[str]:
    readers: dict[str, Callable[[SearchRequest], list[Document]]] = {
        "store": store.similarity_search,
        "view": DocumentsView(store, distinct=False).similarity_search,
        "view+distinct": DocumentsView(store).similarity_search,
    }
    cells = []
    for mode in ("vector", "hybrid"):
        times: dict[str, list[float]] = {name: [] for name in readers}
        for n in range(queries):  # interleaved, so a busy moment costs every reader alike
            request = SearchRequest(f"query {n} about the beacon lamp", top_k=10, mode=mode)
            for name, search in readers.items():
                started = time.perf_counter()
                search(request)
                times[name].append(time.perf_counter() - started)
        median = {name: 1000 * statistics.median(values[-20:]) for name, values in times.items()}
        cells += [f"{median[name]:.1f}" for name in readers]
        cells.append(f"{median['view'] / median['store']:.2f}x")
    return [kind, *cells]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    header = ["store"] + [
        f"{mode} {what}"
        for mode in ("vector", "hybrid")
        for what in ("store ms", "view ms", "view+distinct ms", "view/store")
    ]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for kind, store in (
            ("chroma", ChromaVectorStore(HashingEmbedding(), collection="bench", path=folder)),
            ("numpy", NumpyVectorStore(HashingEmbedding())),
        ):
            _fill(store, args.size)
            rows.append(_row(kind, store, args.queries))
    print(f"top-10 search at {args.size:,} records, no memory turns stored")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
