"""Filter cost on real texts: counting and searching under a filter, numpy store against embedded Chroma.

SciFact abstracts (repeated to reach N) get metadata `n` (the row number) and `date` (an ISO date
string), and are written to both stores with the hashing embedder. Then, for a few filters, it times
`count(filter)` and a top-10 vector search under the filter (medians), on:

- the numpy store;
- the Chroma store (embedded, `exact_copy=False`): its filter columns (stores/chroma/columns.py)
  decide the filter and Chroma ranks only the eligible ids (`query(..., ids=...)`);
- raw chromadb with the `where` clause the store compiles for the filter (`get(where=...)` to count,
  `query(where=...)` to search): what the store did before the columns, and still does on a server
  store without current columns;
- a Chroma store that keeps the exact copy (`exact_copy=True`: vectors and metadata in numpy, see
  stores/chroma/mirror.py).

The filters cover a plain comparison (`n < 2000`), a key test (`date IS NOT NULL`, the reserved key
flags of stores/chroma/records.py) and a string ordering (the integer order codes in `where`). It also
prints what the filter columns cost: memory (tracemalloc, while they are built from the metadata) and
disk (their file in the sidecar folder after `flush()`).

    python benchmarks/filters.py [--size 20000] [--repeats 15] [--data PATH/corpus.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.columns import FILE, FilterColumns
from stores.chroma.lexical import FOLDER

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"
FILTERS = ["n < 2000", "date IS NOT NULL AND n < 2000", "date >= '2023-01-01'"]


def _documents(corpus: Path, size: int) -> list[Document]:
    with corpus.open(encoding="utf-8") as lines:
        texts = [(r["title"] + "\n\n" + r["text"]) for r in map(json.loads, lines)]
    return [
        Document(f"d{n:07d}", texts[n % len(texts)], {"n": n, "date": f"20{10 + n % 15}-{1 + n % 12:02d}-01"})
        for n in range(size)
    ]


def _medians_ms(actions: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median time of each action, timed in turns (a, b, c, a, b, c, ...) so the machine's load hits
    every column alike."""
    for action in actions:
        action()  # warm up
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(repeats):
        for action, spent in zip(actions, times, strict=True):
            started = time.perf_counter()
            action()
            spent.append((time.perf_counter() - started) * 1000)
    return [statistics.median(spent) for spent in times]


def _columns_cost(docs: list[Document], folder: Path) -> str:
    """Memory of the filter columns built from these documents' metadata, and their saved file's size."""
    ids, metadatas = [d.id for d in docs], [d.metadata for d in docs]
    tracemalloc.start()
    columns = FilterColumns()
    columns.write(ids, metadatas)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del columns
    disk = sum(path.stat().st_size for path in (folder / FOLDER).rglob(FILE))
    return (
        f"filter columns: {memory / 2**20:.1f} MiB in memory ({memory / len(docs):.0f} B a record), "
        f"{disk / 2**20:.1f} MiB on disk ({disk / len(docs):.0f} B a record)"
    )


def _raw_where(store: ChromaVectorStore, text: str) -> tuple[Callable[[], object], Callable[[], object]]:
    """Counting and searching with raw chromadb and the store's compiled `where` (no Python part here:
    these filters compile exactly)."""
    compiled = store._compile(text)
    assert compiled.exact, text
    collection = store.chroma_collection
    query = store._embed(["cell growth in tumours"])
    count = partial(collection.get, where=compiled.where, include=[])
    fields = ["metadatas", "documents", "distances"]
    search = partial(
        collection.query, query_embeddings=query, n_results=10, where=compiled.where, include=fields
    )
    return count, search


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=20_000, help="documents (default 20,000)")
    parser.add_argument("--repeats", type=int, default=15, help="timed calls per figure")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact corpus.jsonl")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"error: SciFact corpus not found at {str(args.data)!r}; pass --data", file=sys.stderr)
        return 2
    docs = _documents(args.data, args.size)
    model = HashingEmbedding()
    with tempfile.TemporaryDirectory(prefix="rag-filters-") as folder:
        numpy_store = NumpyVectorStore(model)
        chroma = ChromaVectorStore(model, path=folder, exact_copy=False)
        started = time.perf_counter()
        chroma.add(docs)
        write_s = time.perf_counter() - started
        numpy_store.add(docs)
        rate = len(docs) / write_s
        print(f"{len(docs):,} documents written to embedded Chroma in {write_s:.1f} s ({rate:.0f}/s)")
        chroma.flush()
        print(_columns_cost(docs, Path(folder)))
        # What a new process pays at its first filter: the saved sidecar (BM25 index and columns) loads.
        reopened = ChromaVectorStore(model, path=folder, exact_copy=False)
        started = time.perf_counter()
        reopened.count(FILTERS[-1])
        loaded = "loaded" if reopened._lexical.rebuilds == 0 else "rebuilt"
        print(f"first filter of a reopened store: {time.perf_counter() - started:.2f} s (sidecar {loaded})")
        reopened.close()
        copied = ChromaVectorStore(model, path=folder, exact_copy=True)
        started = time.perf_counter()
        copied.similarity_search(SearchRequest("x", top_k=1, exact=True))
        print(f"exact copy built in {time.perf_counter() - started:.2f} s")
        names = ("numpy", "chroma", "where", "copy")
        head = f"{'filter':<32}{'matches':>8}" + "".join(
            f"{what + ' ' + name:>{len(what + name) + 3}}" for what in ("count", "search") for name in names
        )
        print(head)
        print("-" * len(head))
        for text in FILTERS:
            request = SearchRequest("cell growth in tumours", top_k=10, filter=text)
            raw_count, raw_search = _raw_where(chroma, text)
            counts = [partial(store.count, text) for store in (numpy_store, chroma)]
            searches = [partial(store.similarity_search, request) for store in (numpy_store, chroma)]
            actions = [*counts, raw_count, partial(copied.count, text)]
            actions += [*searches, raw_search, partial(copied.similarity_search, request)]
            row = _medians_ms(actions, args.repeats)
            widths = [len(what + name) + 3 for what in ("count", "search") for name in names]
            print(
                f"{text:<32}{chroma.count(text):>8}"
                + "".join(f"{ms:>{w}.1f}" for ms, w in zip(row, widths, strict=True))
            )
        copied.close()
        chroma.close()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"(milliseconds, medians; `where`: raw chromadb with the store's compiled clause; load {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
