"""The numpy store beside bare numpy, its hybrid beside its vector query, and its resident memory.

Three numpy figures, each measured side by side in one process (queries timed in
alternation, medians), on the documents of `benchmarks/search.py` (random unit vectors, d=384; texts
of 30-50 Zipf-distributed made-up words; metadata `bucket`):

- unfiltered top-10: `NumpyVectorStore.similarity_search` (returning Documents) against bare numpy on
  the same matrix, `matrix @ q` + `argpartition` + a sort of the ten (target: store <= 1.10x bare).
  The store is given the query vectors through a lookup "embedding", so neither side embeds;
- hybrid (BM25 + vector, RRF) against the store's own vector query, top 10 (target <= 1.5x);
- resident memory of a store of 100k x 384, in a fresh process: the RSS it adds (after `malloc_trim`,
  as `benchmarks/search.py`) and what tracemalloc sees allocated, each over the raw float32 bytes
  (target <= 1.3x), beside the floor: the vectors plus the texts' UTF-8 bytes, which any store that
  returns the texts must hold.

    python benchmarks/numpy_speed.py                        # N = 10k, 100k; memory at 100k
    python benchmarks/numpy_speed.py --sizes 10000 --repeats 200 --memory-size 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from search import documents, query_text, resident_kib, texts

from rag import SearchRequest
from stores.numpy.store import NumpyVectorStore

DIMENSIONS = 384


class Lookup:
    """An embedding model for timing: query text `"q <i>"` maps to prepared vector `i`."""

    def __init__(self, queries: npt.NDArray[np.float32]) -> None:
        self.queries = queries
        self.dimensions = queries.shape[1]
        self.name = f"bench-lookup-{self.dimensions}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.queries[[int(text.rsplit(" ", 1)[-1]) for text in texts]]


def paired(runs: dict[str, Callable[[int], Any]], repeats: int) -> dict[str, float]:
    """Seconds of each run, timed in alternation after a warm-up call each: the median under its name,
    and the 5th percentile under `<name> p5` (near the best: a view less exposed to machine load)."""
    for run in runs.values():
        run(0)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(1, repeats + 1):
        for name, run in runs.items():
            start = time.perf_counter()
            run(i)
            times[name].append(time.perf_counter() - start)
    figures = {name: statistics.median(values) for name, values in times.items()}
    figures.update({f"{name} p5": sorted(values)[len(values) // 20] for name, values in times.items()})
    return figures


def build(count: int, queries: npt.NDArray[np.float32]) -> NumpyVectorStore:
    store = NumpyVectorStore(Lookup(queries))
    for batch in documents(count, DIMENSIONS):
        store.add(batch)
    return store


def speed_row(count: int, repeats: int) -> dict[str, float]:
    """Store vs bare numpy, and hybrid vs vector, for one size."""
    rng = np.random.default_rng(7)
    queries = rng.standard_normal((repeats + 1, DIMENSIONS), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    store = build(count, queries)
    matrix = store._matrix[: len(store)]  # the very rows the store scans

    def bare(i: int) -> Any:
        scores = matrix @ queries[i]
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])]

    # The words make the BM25 side find something; the last token picks the query vector.
    words = [f"{query_text(i)} {i}" for i in range(repeats + 1)]

    def search(**options: Any) -> Callable[[int], Any]:
        return lambda i: store.similarity_search(SearchRequest(words[i], top_k=10, **options))

    figures = paired({"store": search(), "bare": bare}, repeats)
    figures.update(paired({"vector": search(), "hybrid": search(mode="hybrid")}, repeats))
    return figures


def memory_child(count: int, traced: bool) -> None:
    """In a fresh process: what a store of `count` documents adds, by RSS or by tracemalloc, as JSON.

    The two are measured in separate processes: tracemalloc's own bookkeeping would swell the RSS.
    """
    import ctypes
    import gc
    import tracemalloc

    text_bytes = sum(len(t.encode("utf-8")) for t in texts(count, 0))
    queries = np.zeros((1, DIMENSIONS), np.float32)
    gc.collect()
    if traced:
        tracemalloc.start()
    before = resident_kib()
    store = build(count, queries)
    gc.collect()
    if traced:
        added = tracemalloc.get_traced_memory()[0]
    else:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed input documents back to the system
        added = (resident_kib() - before) * 1024
    print(json.dumps({"count": len(store), "added": added, "texts": text_bytes}))


def memory_figures(count: int) -> dict[str, float]:
    found = {}
    for mode in ("rss", "traced"):
        child = [sys.executable, __file__, "--memory-child", f"{count},{mode}"]
        found[mode] = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)
    raw = count * DIMENSIONS * 4
    text_bytes = found["rss"]["texts"]
    return {
        "raw": raw,
        "rss": found["rss"]["added"] / raw,
        "traced": found["traced"]["added"] / raw,
        "floor": (raw + text_bytes) / raw,
        "texts_mb": text_bytes / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated N values")
    parser.add_argument("--repeats", type=int, default=100, help="paired queries per figure")
    parser.add_argument("--memory-size", type=int, default=100_000, help="N for the memory check (0 skips)")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        count, mode = args.memory_child.split(",")
        memory_child(int(count), mode == "traced")
        return
    print("\nNumpy store, top 10, d=384 (medians of paired queries, ms; x = ratio of medians, p5 x = ratio")
    print("of 5th percentiles, less exposed to machine load)")
    header = (
        f"{'N':>9} {'bare':>7} {'store':>7} {'x bare':>7} {'p5 x':>6} "
        f"{'vector':>7} {'hybrid':>7} {'x vec':>6} {'p5 x':>6}"
    )
    print(header)
    print("-" * len(header))
    for count in (int(s) for s in args.sizes.split(",")):
        f = speed_row(count, args.repeats)
        ms = {name: value * 1e3 for name, value in f.items()}
        print(
            f"{count:>9,} {ms['bare']:>7.3f} {ms['store']:>7.3f} {f['store'] / f['bare']:>7.2f} "
            f"{f['store p5'] / f['bare p5']:>6.2f} {ms['vector']:>7.3f} {ms['hybrid']:>7.3f} "
            f"{f['hybrid'] / f['vector']:>6.2f} {f['hybrid p5'] / f['vector p5']:>6.2f}",
            flush=True,
        )
    if args.memory_size:
        m = memory_figures(args.memory_size)
        print(
            f"\nResident memory, {args.memory_size:,} x {DIMENSIONS} ({m['raw'] / 1e6:.1f} MB of float32): "
            f"RSS {m['rss']:.2f}x, tracemalloc {m['traced']:.2f}x; floor (vectors + {m['texts_mb']:.1f} MB "
            f"of UTF-8 texts) {m['floor']:.2f}x, so RSS is {m['rss'] / m['floor']:.2f}x the floor"
        )


if __name__ == "__main__":
    main()
