"""The lexical (BM25) index on its own: SciFact quality, a k1/b grid, build time and query latency.

SciFact (BEIR): the 5,183 abstracts are indexed as title and text joined, one document each (no
splitting, as the published figures count), and the 300 judged test queries are searched. Printed:
nDCG@10 (linear gain, trec_eval style) and recall@100 beside the published Lucene/Anserini BM25
(0.679 / 0.925), for the default settings and a small k1/b grid; build time and query latency. Then a
synthetic index of 100k documents of ~200 Zipf-distributed words: build time, query latency with and
without an `allowed` set or a row mask, and the cost of small upserts and deletes into it.

Usage:
    python benchmarks/lexical.py [--data PATH] [--docs 100000] [--skip-synthetic]

`--data` defaults to ../shared/data/scifact next to the repository.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag.eval.metrics import score_ranking  # noqa: E402
from stores.lexical import LexicalIndex, LexicalSettings  # noqa: E402

DEFAULT_DATA = _HERE.parents[1] / "shared" / "data" / "scifact"
PUBLISHED = {"ndcg@10": 0.679, "recall@100": 0.925}  # BEIR paper, Lucene BM25 (Anserini), title+text
GRID_K1 = (0.6, 0.9, 1.2, 1.5)
GRID_B = (0.3, 0.4, 0.55, 0.75)


def _load_scifact(folder: Path) -> tuple[list[str], list[str], dict[str, str], dict[str, dict[str, int]]]:
    ids, texts = [], []
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            ids.append(str(record["_id"]))
            texts.append(f"{record.get('title', '')} {record.get('text', '')}".strip())
    queries = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            queries[str(record["_id"])] = record["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return ids, texts, queries, qrels


def _quality(
    index: LexicalIndex, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> tuple[float, float, list[float]]:
    ndcg = recall = 0.0
    seconds = []
    for qid, judged in qrels.items():
        started = time.perf_counter()
        hits = index.search(queries[qid], top_k=100)
        seconds.append(time.perf_counter() - started)
        ranking = [doc_id for doc_id, _ in hits]
        ndcg += score_ranking(ranking, judged, 10)["ndcg"]
        recall += score_ranking(ranking, judged, 100)["recall"]
    return ndcg / len(qrels), recall / len(qrels), seconds


def _ms(seconds: list[float]) -> str:
    values = np.asarray(seconds) * 1000
    return f"p50 {np.percentile(values, 50):.2f} ms, p95 {np.percentile(values, 95):.2f} ms"


def scifact(folder: Path) -> None:
    """Quality and speed on SciFact, with a k1/b grid."""
    ids, texts, queries, qrels = _load_scifact(folder)
    started = time.perf_counter()
    index = LexicalIndex()
    index.add(ids, texts)
    build = time.perf_counter() - started
    ndcg, recall, seconds = _quality(index, queries, qrels)
    print(f"SciFact: {len(ids)} abstracts indexed in {build:.2f} s; {len(qrels)} test queries, top 100")
    print(f"query latency: {_ms(seconds)}\n")
    print(f"{'settings':<22} {'nDCG@10':>8} {'recall@100':>11}")
    print(f"{'published BM25':<22} {PUBLISHED['ndcg@10']:>8.3f} {PUBLISHED['recall@100']:>11.3f}")
    name = f"default k1={index.settings.k1} b={index.settings.b}"
    print(f"{name:<22} {ndcg:>8.3f} {recall:>11.3f}")
    with tempfile.TemporaryDirectory() as saved:
        index.save(saved)
        for k1 in GRID_K1:
            for b in GRID_B:
                variant = LexicalIndex.load(saved, LexicalSettings(k1, b))
                ndcg, recall, _ = _quality(variant, queries, qrels)
                print(f"{f'k1={k1} b={b}':<22} {ndcg:>8.3f} {recall:>11.3f}")


def _synthetic_texts(count: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """Words drawn from a Zipf law over 200k made-up words, ~200 per document."""
    letters = np.array(list("bcdfghklmnprstvz"))
    syllables = [a + v for a in letters for v in "aeiou"]
    vocabulary = [
        syllables[i % 80] + syllables[(i // 80) % 80] + syllables[(i // 6400) % 80] + "x"
        for i in range(200_000)
    ]
    ranks = np.minimum(rng.zipf(1.1, size=count * 200), len(vocabulary)) - 1
    lengths = rng.integers(150, 250, size=count)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    words = [vocabulary[r] for r in ranks[: bounds[-1]].tolist()]
    texts = [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(count)]
    queries = [" ".join(vocabulary[r] for r in rng.integers(10, 20_000, size=4)) for _ in range(200)]
    # Worst case: two of the ten most frequent words (each in most documents) among four.
    common = [
        " ".join(vocabulary[r] for r in (*rng.integers(0, 10, 2), *rng.integers(10, 20_000, 2)))
        for _ in range(200)
    ]
    return texts, queries + common


def _timed(run: Callable[[str], object], queries: list[str]) -> list[float]:
    seconds = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        seconds.append(time.perf_counter() - started)
    return seconds


def synthetic(count: int) -> None:
    """Build time, query latency and update cost at `count` documents."""
    rng = np.random.default_rng(7)
    texts, queries = _synthetic_texts(count, rng)
    ids = [f"doc-{i:07d}" for i in range(count)]
    index = LexicalIndex()
    started = time.perf_counter()
    for begin in range(0, count, 5_000):
        index.add(ids[begin : begin + 5_000], texts[begin : begin + 5_000])
    build = time.perf_counter() - started
    postings = sum(len(set(t.split())) for t in texts[:1000]) / 1000
    print(
        f"\nsynthetic: {count} docs (~{postings:.0f} distinct words each), built in batches of 5,000 in "
        f"{build:.2f} s, {index.segment_count} segments"
    )
    half = set(ids[::2])
    mask = np.zeros(index.row_count, dtype=np.bool_)
    mask[index.rows_of(ids[::2])] = True
    rare = set(ids[::1000])
    common = queries[200:]
    queries = queries[:200]
    print(f"  {'top 10, 2 frequent words':<26} {_ms(_timed(lambda q: index.search(q, 10), common))}")
    for label, run in (
        ("search top 10", lambda q: index.search(q, 10)),
        ("search top 100", lambda q: index.search(q, 100)),
        ("allowed = half the ids", lambda q: index.search(q, 10, allowed=half)),
        ("allowed = 0.1% of ids", lambda q: index.search(q, 10, allowed=rare)),
        ("row mask = half the rows", lambda q: index.search(q, 10, row_mask=mask)),
        ("scores_for 100 ids", lambda q: index.scores_for(q, ids[:100])),
    ):
        print(f"  {label:<26} {_ms(_timed(run, queries))}")
    upserts = []
    for i in range(50):
        started = time.perf_counter()
        index.add(ids[i * 10 : i * 10 + 10], texts[-10 - i * 10 : len(texts) - i * 10])
        upserts.append(time.perf_counter() - started)
    print(f"  upsert 10 docs             {_ms(upserts)}  (mean {statistics.mean(upserts) * 1000:.2f} ms)")
    started = time.perf_counter()
    index.delete(ids[: count // 10])
    print(f"  delete 10% of the docs     {(time.perf_counter() - started) * 1000:.1f} ms")
    print(f"  search top 10 after that   {_ms(_timed(lambda q: index.search(q, 10), queries))}")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        index.save(folder)
        saved = time.perf_counter() - started
        started = time.perf_counter()
        LexicalIndex.load(folder)
        print(f"  save {saved:.2f} s, load {time.perf_counter() - started:.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument("--docs", type=int, default=100_000, help="synthetic index size")
    parser.add_argument("--skip-synthetic", action="store_true", help="only the SciFact part")
    args = parser.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(
            f"error: no SciFact data in {str(args.data)!r} (corpus.jsonl missing); pass --data",
            file=sys.stderr,
        )
        return 2
    scifact(args.data)
    if not args.skip_synthetic:
        synthetic(args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
