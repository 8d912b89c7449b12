"""Search under threads: throughput with readers beside a writer, and what the locking costs one search.

For the numpy store and the embedded Chroma store holding N chunks (random unit vectors, d=384, short
texts), prints two tables:

1. Single-thread top-10 search latency (median over interleaved rounds) of today's stores and of the
   stores at commit 73db109 (before the readers-writer lock), both in this process: the old `stores`
   package is extracted with `git archive` into a temporary folder and imported under its own module
   objects. The old Chroma store opens the same folder; the old numpy store loads the same save.
   The cost of one uncontended lock and unlock is printed beside it, being free of the noise
   that other processes on the machine add to the latencies.
2. Vector-search throughput (searches/s, all readers together) with 1, 2 and 4 reader threads, alone
   and while one thread keeps upserting batches of 10 documents (and how many writes got through).

    python benchmarks/concurrency.py                     # N = 100k, both stores
    python benchmarks/concurrency.py --n 20000 --seconds 2 --stores numpy
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore, NumpyVectorStore
from stores.locking import ReadWriteLock

WORDS = [f"w{i}" for i in range(2000)]
ROOT = Path(__file__).resolve().parents[1]


def documents(count: int, dim: int, seed: int, prefix: str = "d") -> list[Document]:
    """`count` documents with random unit vectors and six-word texts."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = rng.integers(0, len(WORDS), (count, 6))
    return [
        Document(f"{prefix}{i}", " ".join(WORDS[w] for w in row), {"n": i}, embedding=vectors[i])
        for i, row in enumerate(words.tolist())
    ]


def old_store_classes(commit: str) -> tuple[type[Any], type[Any]]:
    """`NumpyVectorStore` and `ChromaVectorStore` as they were at `commit`, beside today's."""
    tree = tempfile.mkdtemp(prefix="stores-old-")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "stores"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
    current = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "stores"}
    for name in current:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        old_numpy = importlib.import_module("stores.numpy.store").NumpyVectorStore
        old_chroma = importlib.import_module("stores.chroma").ChromaVectorStore
    finally:
        sys.path.remove(tree)
        for name in [name for name in sys.modules if name.split(".")[0] == "stores"]:
            del sys.modules[name]
        sys.modules.update(current)
    return old_numpy, old_chroma


def latency(search: Callable[[SearchRequest], object], requests: list[SearchRequest]) -> float:
    """Median seconds per search over `requests`."""
    times = []
    for request in requests:
        start = time.perf_counter()
        search(request)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compare_latency(new: Any, old: Any, rounds: int, per_round: int) -> tuple[float, float]:
    """Median latency (ms) of the new and the old store, measured in alternating rounds."""
    rng = np.random.default_rng(3)
    requests = [
        SearchRequest(" ".join(WORDS[w] for w in rng.integers(0, len(WORDS), 3)), top_k=10)
        for _ in range(per_round)
    ]
    for store in (new, old):
        latency(store.similarity_search, requests[:5])  # warm caches and thread pools
    news, olds = [], []
    for _ in range(rounds):
        news.append(latency(new.similarity_search, requests))
        olds.append(latency(old.similarity_search, requests))
    return 1000 * statistics.median(news), 1000 * statistics.median(olds)


def lock_cost(repeats: int = 200_000) -> float:
    """Microseconds for one uncontended read acquire and release of the store lock."""
    lock = ReadWriteLock()
    start = time.perf_counter()
    for _ in range(repeats):
        lock.acquire_read()
        lock.release_read()
    return (time.perf_counter() - start) / repeats * 1e6


def throughput(store: Any, readers: int, seconds: float, dim: int, writing: bool) -> tuple[float, float]:
    """(searches/s over all readers, writes/s), with one thread upserting batches of 10 if `writing`."""
    stop = threading.Event()
    counts = [0] * (readers + 1)
    fresh = documents(20_000, dim, seed=99 + readers, prefix=f"x{readers}-")

    def write() -> None:
        batch = 0
        while not stop.is_set():
            start = (batch * 10) % len(fresh)
            store.add(fresh[start : start + 10])
            batch += 1
            counts[readers] = batch

    def read(number: int) -> None:
        rng = np.random.default_rng(number)
        while not stop.is_set():
            query = " ".join(WORDS[w] for w in rng.integers(0, len(WORDS), 3))
            store.similarity_search(SearchRequest(query, top_k=10))
            counts[number] += 1

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    if writing:
        threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts[:readers]) / seconds, counts[readers] / seconds


def build(kind: str, docs: list[Document], model: HashingEmbedding, folder: Path) -> Any:
    if kind == "numpy":
        store = NumpyVectorStore(model, path=folder / "numpy")
        store.add(docs)
        store.save()
        return store
    chroma = ChromaVectorStore(model, collection="bench", path=folder / "chroma")
    for start in range(0, len(docs), 5000):
        chroma.add(docs[start : start + 5000])
    chroma.flush()
    return chroma


def open_old(kind: str, classes: tuple[type[Any], type[Any]], model: HashingEmbedding, folder: Path) -> Any:
    old_numpy, old_chroma = classes
    if kind == "numpy":
        return old_numpy.load(folder / "numpy", model)
    return old_chroma(model, collection="bench", path=folder / "chroma")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="chunks per store (default 100000)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput measurement")
    parser.add_argument("--rounds", type=int, default=7, help="alternating latency rounds")
    parser.add_argument("--per-round", type=int, default=40, help="searches per latency round")
    parser.add_argument("--stores", default="numpy,chroma")
    parser.add_argument("--old-commit", default="73db109", help="the stores before the locking")
    args = parser.parse_args()
    model = HashingEmbedding(dimensions=args.dim)
    classes = old_store_classes(args.old_commit)
    docs = documents(args.n, args.dim, seed=1)
    latencies, rates = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for kind in args.stores.split(","):
            started = time.perf_counter()
            store = build(kind, docs, model, Path(scratch))
            print(
                f"built {kind} with {args.n} chunks in {time.perf_counter() - started:.1f} s", file=sys.stderr
            )
            old = open_old(kind, classes, model, Path(scratch))
            new_ms, old_ms = compare_latency(store, old, args.rounds, args.per_round)
            latencies.append((kind, old_ms, new_ms))
            if kind == "chroma":
                old.close()
            for readers in (1, 2, 4):
                alone, _ = throughput(store, readers, args.seconds, args.dim, writing=False)
                searches, writes = throughput(store, readers, args.seconds, args.dim, writing=True)
                rates.append((kind, readers, alone, searches, writes))
            if kind == "chroma":
                store.close()
    print(f"\nSingle-thread top-10 latency, N={args.n}, d={args.dim} (median of {args.rounds} rounds)")
    print(f"{'store':8} {'before (73db109)':>17} {'after (locked)':>15} {'after/before':>13}")
    for kind, old_ms, new_ms in latencies:
        print(f"{kind:8} {old_ms:>14.3f} ms {new_ms:>12.3f} ms {new_ms / old_ms:>13.3f}")
    print(f"(one uncontended read lock and unlock costs {lock_cost():.2f} us)")
    print(f"\nVector-search throughput, one writer upserting 10 documents at a time, {args.seconds:g} s each")
    print(f"{'store':8} {'readers':>7} {'searches/s alone':>17} {'beside the writer':>18} {'writes/s':>9}")
    for kind, readers, alone, searches, writes in rates:
        print(f"{kind:8} {readers:>7} {alone:>17.1f} {searches:>18.1f} {writes:>9.1f}")


if __name__ == "__main__":
    main()
