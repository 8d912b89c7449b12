"""The Chroma store beside raw chromadb: writes, folder size, query time, and HNSW recall.

Synthetic records (unit vectors, d=384, drawn around 200 cluster centres so neighbours are meaningful;
a sentence of text; metadata `source`, `page`, `lang`), written in batches of 5,000:

- add: `ChromaVectorStore.add` of documents that carry their vectors (then `close()`, which saves
  the BM25 index) vs raw `collection.upsert(ids, embeddings, documents, metadatas)` of the same
  records into a fresh embedded folder, its collection configured as the store configures its own
  (inner product, `ef_search` 400, `ef_construction` 200), one batch each in alternation so both see
  the same machine; and the two folders' sizes on disk;
- unfiltered top-10: `similarity_search` (a lookup embedder hands back the query's vector, so no
  embedding is timed, only the store's normalisation of it; and again with the vector given as
  `SearchRequest.query_vector`, as the retrieval layer passes it) vs raw
  `collection.query(n_results=10)` with its default fields, timed in rotating order, median of the
  per-query ratios; and, as a control, the same raw query on the store's own collection: two
  collections of the same records answer at speeds that differ from run to run, and the control
  shows how much of a ratio is Chroma's and how much the adapter's;
- recall@10 of the store's vector search (Chroma's HNSW, `ef_search` 400) against the exact top 10
  (numpy, brute force) over 200 fresh points drawn like the data, at each of `--recall-sizes`;
  `--noise 10` makes the vectors nearly uniform on the sphere (no clusters: HNSW's hardest case).

    python benchmarks/chroma_speed.py --size 20000 --recall-sizes 10000,50000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag import Document, SearchRequest
from stores import ChromaVectorStore

DIM = 384
BATCH = 5000
WORDS = ["tide", "river", "granite", "harbour", "lamp", "valve", "probe", "signal", "copper", "meadow"]


class Lookup:
    """An embedder that returns vectors it was given (by text): no embedding cost in the timings."""

    name = "lookup-384"
    dimensions = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vectors[text] for text in texts])


def _data(
    n: int, seed: int = 1, noise: float = 0.6
) -> tuple[npt.NDArray[np.float32], list[str], list[dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 200, n)] + noise * rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [" ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 12)) + f" {i}" for i in range(n)]
    metas = [
        {"source": f"doc{i // 20}.md", "page": i % 20, "lang": "en" if i % 3 else "nl"} for i in range(n)
    ]
    return vectors, texts, metas


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _raw_client(folder: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))


def _add_times(
    raw_folder: Path,
    store_folder: Path,
    vectors: npt.NDArray[np.float32],
    texts: list[str],
    metas: list[dict[str, Any]],
) -> tuple[float, float]:
    """Seconds to write the records raw and through the store, batch by batch in alternation."""
    ids = [f"id{i}" for i in range(len(texts))]
    docs = [Document(ids[i], texts[i], metas[i], embedding=vectors[i]) for i in range(len(texts))]
    client = _raw_client(raw_folder)
    start = time.perf_counter()
    collection = client.create_collection(
        "rag",
        embedding_function=None,
        configuration={"hnsw": {"space": "ip", "ef_search": 400, "ef_construction": 200}},
    )
    raw_s = time.perf_counter() - start
    start = time.perf_counter()
    store = ChromaVectorStore(Lookup(), path=store_folder)  # type: ignore[arg-type]
    store_s = time.perf_counter() - start
    for n, at in enumerate(range(0, len(ids), BATCH)):
        end = at + BATCH
        for which in (0, 1) if n % 2 else (1, 0):
            start = time.perf_counter()
            if which == 0:
                store.add(docs[at:end])
                store_s += time.perf_counter() - start
            else:
                collection.upsert(
                    ids=ids[at:end],
                    embeddings=vectors[at:end],
                    documents=texts[at:end],
                    metadatas=metas[at:end],
                )
                raw_s += time.perf_counter() - start
    start = time.perf_counter()
    store.close()  # saves the BM25 index
    store_s += time.perf_counter() - start
    client.close()
    return store_s, raw_s


def _queries(vectors: npt.NDArray[np.float32], count: int, seed: int = 2) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    picked = vectors[rng.integers(0, len(vectors), count)] + 0.3 * rng.standard_normal((count, DIM)).astype(
        np.float32
    ) / np.sqrt(DIM)
    return (picked / np.linalg.norm(picked, axis=1, keepdims=True)).astype(np.float32)


def _query_times(
    store_folder: Path, raw_folder: Path, queries: npt.NDArray[np.float32]
) -> dict[str, tuple[float, float]]:
    """Median time and median ratio to raw `query` of each way to ask, timed in rotating order."""
    lookup = Lookup()
    store = ChromaVectorStore(lookup, path=store_folder)  # type: ignore[arg-type]
    raw_client = _raw_client(raw_folder)
    raw = raw_client.get_collection("rag")
    own = store.chroma_collection  # the store's collection asked raw: Chroma's share of the store's time
    times: dict[str, list[float]] = {"raw": [], "embedded": [], "given": [], "own": []}
    for q in queries[:20]:  # untimed: both open their indexes
        raw.query(query_embeddings=q[None, :], n_results=10)
        store.similarity_search(SearchRequest("warm-up", top_k=10, query_vector=q))
    for i, q in enumerate(queries):
        lookup.vectors[f"q{i}"] = q
        embedded = SearchRequest(f"q{i}", top_k=10)
        given = SearchRequest(f"q{i}", top_k=10, query_vector=q)
        for name in list(times)[i % 4 :] + list(times)[: i % 4]:
            start = time.perf_counter()
            if name in ("raw", "own"):
                (raw if name == "raw" else own).query(query_embeddings=q[None, :], n_results=10)
            else:
                store.similarity_search(embedded if name == "embedded" else given)
            times[name].append(time.perf_counter() - start)
    store.close()
    raw_client.close()
    return {
        name: (
            statistics.median(taken),
            statistics.median(a / b for a, b in zip(taken, times["raw"], strict=True)),
        )
        for name, taken in times.items()
    }


def _recall(n: int, queries: int, noise: float) -> float:
    every, texts, metas = _data(n + queries, seed=3, noise=noise)
    vectors, qs = every[:n], every[n:]  # queries: fresh points of the same distribution, not stored ones
    with tempfile.TemporaryDirectory() as tmp:
        lookup = Lookup()
        store = ChromaVectorStore(lookup, path=Path(tmp))  # type: ignore[arg-type]
        docs = [Document(f"id{i}", texts[i], metas[i], embedding=vectors[i]) for i in range(n)]
        for at in range(0, n, BATCH):
            store.add(docs[at : at + BATCH])
        found = 0
        for i, q in enumerate(qs):
            lookup.vectors[f"r{i}"] = q
            truth = {f"id{j}" for j in np.argsort(-(vectors @ q))[:10]}
            got = {d.id for d in store.similarity_search(SearchRequest(f"r{i}", top_k=10))}
            found += len(truth & got)
        store.close()
    return found / (10 * queries)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--recall-sizes", default="10000,50000")
    parser.add_argument("--recall-queries", type=int, default=200)
    parser.add_argument("--noise", type=float, default=0.6, help="spread around the centres (large: uniform)")
    args = parser.parse_args()

    vectors, texts, metas = _data(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        raw_folder, store_folder = Path(tmp) / "raw", Path(tmp) / "store"
        store_s, raw_s = _add_times(raw_folder, store_folder, vectors, texts, metas)
        raw_mb, store_mb = _size(raw_folder) / 1e6, _size(store_folder) / 1e6
        queried = _query_times(store_folder, raw_folder, _queries(vectors, args.queries))
    print(f"{args.size} records, d={DIM}, batches of {BATCH}")
    print("| what | store | raw chromadb | ratio |")
    print("|---|---|---|---|")
    print(f"| add (upsert) | {store_s:.1f} s | {raw_s:.1f} s | {store_s / raw_s:.2f}x |")
    print(f"| folder size | {store_mb:.0f} MB | {raw_mb:.0f} MB | {store_mb / raw_mb:.2f}x |")
    raw_q = queried["raw"][0]
    rows = (
        ("embedded", "the store embeds the text"),
        ("given", "`query_vector` given"),
        ("own", "raw `query` on the store's collection (control)"),
    )
    for name, what in rows:
        store_q, ratio = queried[name]
        print(
            f"| unfiltered top-10 query, {what} (median) | {store_q * 1e3:.2f} ms | {raw_q * 1e3:.2f} ms "
            f"| {ratio:.2f}x |"
        )
    print()
    print(f"| records | HNSW recall@10 vs exact (noise {args.noise}) |")
    print("|---|---|")
    for n in (int(x) for x in args.recall_sizes.split(",") if x):
        print(f"| {n} | {_recall(n, args.recall_queries, args.noise):.3f} |")


if __name__ == "__main__":
    main()
