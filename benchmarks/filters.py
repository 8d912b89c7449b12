"""Filter cost on real texts: counting and searching under a filter, numpy store against embedded Chroma.

SciFact abstracts (repeated to reach N) get metadata `n` (the row number) and `date` (an ISO date
string), and are written to both stores with the hashing embedder. Then, for a few filters, it times
`count(filter)` and a top-10 vector search under the filter (medians), on the numpy store and on two
stores over the same Chroma folder: one that never keeps the exact copy (`exact_copy=False`: Chroma
evaluates every `where`) and one that keeps it (`exact_copy=True`: filters run on numpy columns, see
stores/chroma/mirror.py; the default store switches to it once filtering has cost as much as building
it). The filters cover a plain comparison (`n < 2000`), a key test (`date IS NOT NULL`, the reserved
key flags of stores/chroma/records.py) and a string ordering, which compiles to the integer order codes.

    python benchmarks/filters.py [--size 20000] [--repeats 5] [--data PATH/corpus.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rag import Document, HashingEmbedding, SearchRequest
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"
FILTERS = ["n < 2000", "date IS NOT NULL AND n < 2000", "date >= '2023-01-01'"]


def _documents(corpus: Path, size: int) -> list[Document]:
    with corpus.open(encoding="utf-8") as lines:
        texts = [(r["title"] + "\n\n" + r["text"]) for r in map(json.loads, lines)]
    return [
        Document(f"d{n:07d}", texts[n % len(texts)], {"n": n, "date": f"20{10 + n % 15}-{1 + n % 12:02d}-01"})
        for n in range(size)
    ]


def _median_ms(action: Callable[[], object], repeats: int) -> float:
    action()  # warm up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=20_000, help="documents (default 20,000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per figure")
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
        copied = ChromaVectorStore(model, path=folder, exact_copy=True)
        started = time.perf_counter()
        copied.count("n < 0")
        print(f"exact copy built in {time.perf_counter() - started:.2f} s")
        stores: list[VectorStore] = [numpy_store, chroma, copied]
        head = f"{'filter':<32}{'matches':>9}" + "".join(
            f"{what + ' ' + name:>{width}}"
            for what in ("count", "search")
            for name, width in (("numpy", 13), ("chroma", 14), ("copy", 12))
        )
        print(head)
        print("-" * len(head))
        for text in FILTERS:
            request = SearchRequest("cell growth in tumours", top_k=10, filter=text)
            row = [_median_ms(partial(store.count, text), args.repeats) for store in stores]
            row += [_median_ms(partial(store.similarity_search, request), args.repeats) for store in stores]
            widths = (13, 14, 12, 13, 14, 12)
            print(
                f"{text:<32}{chroma.count(text):>9}"
                + "".join(f"{ms:>{w}.1f}" for ms, w in zip(row, widths, strict=True))
            )
        copied.close()
        chroma.close()
    print("(milliseconds, medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
