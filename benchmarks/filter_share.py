"""Filtered vector search on the Chroma store by the share of records the filter matches.

N random unit vectors of 384 dimensions with metadata `bucket` = row % 100 are written to an embedded
Chroma store. For filters `bucket < S` (S% of the records) it times a top-10 search (medians, timed in
turns): the store (its filter columns choose the ids, stores/chroma/columns.py), raw chromadb with the
`where` clause, raw chromadb restricted to the matching ids (`ids=`), and raw chromadb without a
filter. With `--recall` it also prints recall@10 of the store, of the raw `ids=` search and of the raw
`where` search (what a server store that holds no filter columns sends) against an exact numpy store
(a filter of 90% or more is one unrestricted query filtered after: see stores/chroma/nearest.py).

    python benchmarks/filter_share.py [--size 100000] [--shares 10,50,95] [--repeats 15] [--recall]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag import SearchRequest  # noqa: E402
from stores import ChromaVectorStore, NumpyVectorStore  # noqa: E402

sys.path.insert(0, str(_HERE))
import chroma_speed as speed  # noqa: E402

_FIELDS = ["documents", "metadatas", "distances"]


def _medians(actions: dict[str, Callable[[int], object]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in actions}
    for action in actions.values():
        action(0)  # warm up
    for i in range(1, repeats + 1):
        for name, action in actions.items():
            started = time.perf_counter()
            action(i)
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(spent) for name, spent in times.items()}


def _recall(
    store: Any, exact: Any, collection: Any, queries: Any, text: str, ids: list[str], where: Any
) -> str:
    found = raw = raw_where = wanted = 0
    for i in range(1, 51):
        request = SearchRequest(f"q {i}", top_k=10, filter=text)
        truth = {d.id for d in exact.similarity_search(request)}
        found += len(truth & {d.id for d in store.similarity_search(request)})
        result = collection.query(query_embeddings=[queries[i]], n_results=10, ids=ids, include=[])
        raw += len(truth & set(result["ids"][0]))
        result = collection.query(query_embeddings=[queries[i]], n_results=10, where=where, include=[])
        raw_where += len(truth & set(result["ids"][0]))
        wanted += len(truth)
    return f"{found / wanted:>8.3f}{raw / wanted:>9.3f}{raw_where / wanted:>9.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shares", default="10,50,95", help="percentages of the records matched")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--recall", action="store_true", help="also recall@10 against exact search")
    args = parser.parse_args()
    vectors = speed.corpus(args.size)
    queries = speed.unit(
        np.random.default_rng(1).standard_normal((max(args.repeats, 50) + 1, 384), np.float32)
    )
    model = speed.Lookup(queries)
    exact = NumpyVectorStore(model) if args.recall else None  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="rag-share-") as folder:
        store = ChromaVectorStore(model, path=folder, exact_copy=False)  # type: ignore[arg-type]
        started = time.perf_counter()
        for block in speed.documents(vectors):
            store.add(block)
            if exact is not None:
                exact.add(block)
        print(f"{args.size:,} vectors written in {time.perf_counter() - started:.0f} s")
        collection = store.chroma_collection
        head = f"{'filter':<14}{'store':>8}{'where':>8}{'ids=':>8}{'none':>8}"
        print(head + (f"{'recall':>8}{'ids=':>9}{'where':>9}" if exact is not None else ""))
        for share in (int(s) for s in args.shares.split(",")):
            text = f"bucket < {share}"
            ids = store._matching_ids(store._compile(text))
            where = {"bucket": {"$lt": float(share)}}  # the store keeps numbers as floats

            def raw(**options: Any) -> Callable[[int], object]:
                return lambda i: collection.query(
                    query_embeddings=[queries[i]], n_results=10, include=_FIELDS, **options
                )

            actions = {
                "store": lambda i, t=text: store.similarity_search(
                    SearchRequest(f"q {i}", top_k=10, filter=t)
                ),
                "where": raw(where=where),
                "ids": raw(ids=ids),
                "none": raw(),
            }
            ms = _medians(actions, args.repeats)
            line = f"{text:<14}" + "".join(f"{ms[name]:>8.1f}" for name in actions)
            if exact is not None:
                line += _recall(store, exact, collection, queries, text, ids, where)
            print(line, flush=True)
        store.close()
    print("(milliseconds, medians of searches timed in turns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
