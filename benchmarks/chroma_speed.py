"""The Chroma store beside raw chromadb, and how approximate its HNSW answers are (issue 17's table).

For each size (random unit vectors, d=384, metadata `bucket` = row % 100), one embedded collection is
read by the store and by a raw `chromadb` client on the same folder; every figure is a median over
queries timed in alternation (store, raw; raw, store; ...), so machine load and warm caches favour
neither, and each ratio the median of the ratios within pairs (see `paired`):

- unfiltered top-10: store vs raw `query` returning the same fields (documents, metadatas, distances);
- a 10% filter (`bucket < 10`): store (`exact_copy=False`) vs raw `query(where=...)`, twice: first
  before a server store holds filter columns (it sends the `where` alone; the columns' rent-or-buy is
  held off for that, see stores/chroma/reading.py), then after the hybrid searches built them ("10%
  cols": a state-token check and a query restricted to the matching ids); an embedded store uses
  its columns both times. Also a store that keeps the exact copy (`exact_copy=True`,
  stores/chroma/mirror.py);
- hybrid vs the store's own vector query;
- `exact=True`: the first request (which builds the exact copy: one full read) and the next ones;
- recall@10 of the default search against the exact answer (a numpy store over the same documents,
  which the test suite holds identical to `exact=True`; scanning with `exact=True` for every query
  would take minutes at 100k).

Then the same at 10k over HTTP (`chroma run` on a loopback port), and recall@10 on BEIR SciFact chunks
embedded by the default embedder (`--scifact`, default ../shared/data/scifact; skipped when missing).

    python benchmarks/chroma_speed.py --sizes 10000,100000 --repeats 30
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag import Document, SearchRequest  # noqa: E402
from rag.filters import key  # noqa: E402
from stores.chroma import reading  # noqa: E402

DEFAULT_SCIFACT = _HERE.parents[1] / "shared" / "data" / "scifact"
DIMENSIONS = 384


class Lookup:
    """An embedding model for timing: query texts map to prepared vectors (documents bring their own).

    It stands in for a real model, whose time is not the store's: one dict lookup and a copy of one
    row per text (fancy indexing cost some 40 us a query, charged to the store beside raw chromadb).
    """

    def __init__(self, queries: npt.NDArray[np.float32]) -> None:
        self.queries = queries
        self.dimensions = queries.shape[1]
        self.name = f"bench-lookup-{self.dimensions}"
        self._rows: dict[str, npt.NDArray[np.float32]] = {
            f"q {i}": queries[i : i + 1] for i in range(len(queries))
        }

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if len(texts) == 1:
            return self._rows[texts[0]].copy()  # a copy: the store normalises what it gets in place
        chosen: npt.NDArray[np.float32] = self.queries[[int(text.split()[-1]) for text in texts]]
        return chosen


def unit(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    units: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return units


def corpus(count: int, seed: int = 0) -> npt.NDArray[np.float32]:
    return unit(np.random.default_rng(seed).standard_normal((count, DIMENSIONS), dtype=np.float32))


def documents(vectors: npt.NDArray[np.float32]) -> Iterator[list[Document]]:
    for start in range(0, len(vectors), 5000):
        block = vectors[start : start + 5000]
        yield [
            Document(f"doc-{start + i:07d}", f"text {start + i}", {"bucket": (start + i) % 100}, embedding=v)
            for i, v in enumerate(block)
        ]


def paired(runs: dict[str, Callable[[int], Any]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, timed in alternation after one warm-up call each.

    With two runs, also "ratio": the median over pairs of the first's time over the second's. Load
    from other jobs drifts between pairs far more than within one, and moves the two medians apart
    (a 10k query went from 2 to 3 ms between runs here); the ratio within pairs it moves much less.

    The runs take turns going first (A B, B A, ...): both search for the same query `i`, and the
    second finds Chroma's graph nodes for it in the CPU caches. Always second, raw chromadb gained
    20-130 us a query at 10k over the store (measured by timing raw against itself), a bias about
    as large as the store's own work.
    """
    for run in runs.values():
        run(0)
    times: dict[str, list[float]] = {name: [] for name in runs}
    turns = list(runs.items())
    for i in range(1, repeats + 1):
        for name, run in turns if i % 2 else turns[::-1]:
            start = time.perf_counter()
            run(i)
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    if len(times) == 2:
        first, second = times.values()
        medians["ratio"] = statistics.median(a / b for a, b in zip(first, second, strict=True))
    return medians


def recall(store: Any, exact: Any, requests: list[SearchRequest]) -> float:
    """Mean share of the exact top-k (from `exact`, a numpy store over the same documents, which the
    tests hold equal to `exact=True`) that the store's default search finds."""
    found = 0
    wanted = 0
    for request in requests:
        truth = {d.id for d in exact.similarity_search(request)}
        found += len(truth & {d.id for d in store.similarity_search(request)})
        wanted += len(truth)
    return found / max(wanted, 1)


def measure(
    store: Any, copied: Any, exact: Any, collection: Any, queries: npt.NDArray[np.float32], repeats: int
) -> dict[str, float]:
    """Every figure of one row of the table, store against raw `collection`; `copied` keeps the copy."""
    fields: Any = ["documents", "metadatas", "distances"]
    where: Any = {"bucket": {"$lt": 10.0}}  # the store keeps numbers as floats

    def search(**options: Any) -> Callable[[int], Any]:
        return lambda i: store.similarity_search(SearchRequest(f"q {i}", top_k=10, **options))

    def search_copy(**options: Any) -> Callable[[int], Any]:
        return lambda i: copied.similarity_search(SearchRequest(f"q {i}", top_k=10, **options))

    def raw(clause: Any) -> Callable[[int], Any]:
        return lambda i: collection.query(
            query_embeddings=[queries[i]], n_results=10, where=clause, include=fields
        )

    figures = paired({"store": search(), "raw": raw(None)}, repeats)
    price: float = getattr(reading, "COLUMNS_SECONDS_PER_RECORD", 0.0)  # (absent before issue 17)
    reading.COLUMNS_SECONDS_PER_RECORD = float("inf")  # the `where` path
    try:
        filtered = paired({"store": search(filter=key("bucket") < 10), "raw": raw(where)}, repeats)
    finally:
        reading.COLUMNS_SECONDS_PER_RECORD = price
    figures.update({"store 10%": filtered["store"], "raw 10%": filtered["raw"], "x 10%": filtered["ratio"]})
    modes = paired({"hybrid": search(mode="hybrid"), "vector": search()}, repeats)
    figures.update({"vector": modes["vector"], "hybrid": modes["hybrid"], "x hybrid": modes["ratio"]})
    held = paired({"store": search(filter=key("bucket") < 10), "raw": raw(where)}, repeats)
    figures.update({"cols 10%": held["store"], "x cols": held["ratio"]})
    started = time.perf_counter()
    search_copy(exact=True)(0)
    figures["exact first"] = time.perf_counter() - started
    figures["exact"] = paired({"exact": search_copy(exact=True)}, repeats)["exact"]
    figures["copy 10%"] = paired({"copy": search_copy(filter=key("bucket") < 10)}, repeats)["copy"]
    requests = [SearchRequest(f"q {i}", top_k=10) for i in range(1, repeats + 1)]
    figures["recall"] = recall(store, exact, requests)
    return figures


def embedded_row(count: int, repeats: int, ef_search: int = 400) -> dict[str, float]:
    import chromadb
    from chromadb.config import Settings

    from stores import ChromaVectorStore, NumpyVectorStore

    queries = corpus(repeats + 1, seed=99)
    with tempfile.TemporaryDirectory() as folder:
        store = ChromaVectorStore(
            Lookup(queries),  # type: ignore[arg-type]
            collection="bench",
            path=folder,
            ef_search=ef_search,
            exact_copy=False,
        )
        exact = NumpyVectorStore(Lookup(queries))  # type: ignore[arg-type]
        started = time.perf_counter()
        for batch in documents(corpus(count)):
            store.add(batch)
            exact.add(batch)
        print(f"N={count:,}: chroma store built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        raw = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
        copied = ChromaVectorStore(Lookup(queries), collection="bench", path=folder, exact_copy=True)  # type: ignore[arg-type]
        figures = measure(store, copied, exact, raw.get_collection("bench"), queries, repeats)
        copied.close()
        store.close()
    return figures


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_row(count: int, repeats: int) -> dict[str, float] | str:
    import chromadb
    import httpx

    from stores import ChromaVectorStore, NumpyVectorStore

    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if chroma is None:
        return "no `chroma` command"
    queries = corpus(repeats + 1, seed=99)
    with tempfile.TemporaryDirectory() as folder:
        port = _free_port()
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        command = [chroma, "run", "--path", folder, "--port", str(port), "--host", "127.0.0.1"]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            store = ChromaVectorStore(Lookup(queries), collection="bench", url=url, exact_copy=False)  # type: ignore[arg-type]
            copied = ChromaVectorStore(Lookup(queries), collection="bench", url=url, exact_copy=True)  # type: ignore[arg-type]
            exact = NumpyVectorStore(Lookup(queries))  # type: ignore[arg-type]
            for batch in documents(corpus(count)):
                store.add(batch)
                exact.add(batch)
            raw = chromadb.HttpClient(host="127.0.0.1", port=port)
            figures = measure(store, copied, exact, raw.get_collection("bench"), queries, repeats)
            copied.close()
            store.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return figures


def scifact_recall(data: Path, queries: int) -> tuple[int, float, float, dict[str, float]] | str:
    """(chunks, recall@10, recall@100, paired ms of vector and hybrid top-10) of the default search on
    SciFact chunks, against the exact answer."""
    if not (data / "corpus.jsonl").is_file():
        return f"no SciFact data at {str(data)!r}"
    from ingest.pipeline import IngestPipeline
    from ingest.readers import ReaderOptions
    from rag.cli._common import DEFAULT_EMBEDDER, build_embedder
    from rag.cli.ingest import make_splitter
    from rag.eval import load_beir
    from stores import ChromaVectorStore, NumpyVectorStore

    model = build_embedder(DEFAULT_EMBEDDER)
    exact = NumpyVectorStore(model)
    with tempfile.TemporaryDirectory() as folder, ChromaVectorStore(model, path=folder) as store:
        options = ReaderOptions(text_field="title,text", id_field="_id")
        for target in (store, exact):
            pipeline = IngestPipeline(target, make_splitter(model, None, None), reader_options=options)
            pipeline.run([data / "corpus.jsonl"])
            pipeline.manifest.close()
        texts = [q.text for q in load_beir(data, "test")][:queries]
        at10 = recall(store, exact, [SearchRequest(t, top_k=10) for t in texts])
        at100 = recall(store, exact, [SearchRequest(t, top_k=100) for t in texts])

        def search(mode: str) -> Callable[[int], Any]:
            return lambda i: store.similarity_search(SearchRequest(texts[i], top_k=10, mode=mode))  # type: ignore[arg-type]

        modes = {mode: search(mode) for mode in ("vector", "hybrid")}
        timing = {name: value * 1e3 for name, value in paired(modes, min(len(texts) - 1, 100)).items()}
        return store.count(), at10, at100, timing


def print_rows(rows: list[tuple[str, dict[str, float] | str]]) -> None:
    print(
        "\nChroma store vs raw chromadb, top-10 (medians of paired queries, ms; x = median of the "
        "store / raw ratios within pairs, x vec the same for hybrid / vector)"
    )
    header = (
        f"{'where':>14} {'store':>7} {'raw':>7} {'x':>5} {'10% st':>7} {'10% raw':>8} {'x':>5} "
        f"{'10% cols':>8} {'x':>5} {'10% cp':>7} {'hybrid':>7} {'x vec':>6} "
        f"{'exact 1st':>10} {'exact':>7} {'recall@10':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, f in rows:
        if isinstance(f, str):
            print(f"{label:>14} not measured: {f}")
            continue
        ms = {name: value * 1e3 for name, value in f.items()}
        print(
            f"{label:>14} {ms['store']:>7.2f} {ms['raw']:>7.2f} {f['ratio']:>5.2f} "
            f"{ms['store 10%']:>7.2f} {ms['raw 10%']:>8.2f} {f['x 10%']:>5.2f} "
            f"{ms['cols 10%']:>8.2f} {f['x cols']:>5.2f} {ms['copy 10%']:>7.2f} "
            f"{ms['hybrid']:>7.2f} {f['x hybrid']:>6.2f} "
            f"{ms['exact first']:>10.0f} {ms['exact']:>7.2f} {f['recall']:>10.3f}"
        )


def chroma_section(
    sizes: list[int], repeats: int, http_size: int, scifact: Path | None, ef_search: int = 400
) -> None:
    """Measure and print the whole table (search.py calls this after its own tables)."""
    rows: list[tuple[str, dict[str, float] | str]] = []
    for count in sizes:
        label = f"{count:,} embed" + ("" if ef_search == 400 else f" ef{ef_search}")
        rows.append((label, embedded_row(count, repeats, ef_search)))
    if http_size:
        rows.append((f"{http_size:,} http", http_row(http_size, repeats)))
    print_rows(rows)
    if scifact is not None:
        result = scifact_recall(scifact, 300)
        if isinstance(result, str):
            print(f"SciFact recall not measured: {result}")
        else:
            chunks, at10, at100, timing = result
            print(
                f"SciFact ({chunks:,} chunks, default embedder, 300 test queries): default search finds "
                f"{at10:.3f} of the exact top 10 and {at100:.3f} of the exact top 100; top-10 search "
                f"{timing['vector']:.2f} ms vector, {timing['hybrid']:.2f} ms hybrid "
                f"({timing['hybrid'] / timing['vector']:.2f}x)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--http-size", type=int, default=10_000, help="0 skips the HTTP row")
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument("--ef-search", type=int, default=400, help="HNSW ef_search of the embedded rows")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    chroma_section(sizes, args.repeats, args.http_size, args.scifact, args.ef_search)


if __name__ == "__main__":
    main()
