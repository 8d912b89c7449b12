"""Retrieval quality on BEIR SciFact: nDCG@10 and recall@100 over the 300 judged test queries.

The corpus is ingested with the CLI's default settings (the embedder `rag ingest` would pick, its
default splitter, title and text joined) into a numpy store in a temporary folder, then searched once
per query. Two views are printed:

- per document, as BEIR and the published figures count: chunks are grouped by abstract (each ranked by
  its best chunk) and the top 10 / 100 abstracts are scored;
- per chunk count, as `rag eval` reports it: the top 10 / 100 chunks, with several chunks of one
  abstract counting once (an abstract split in two leaves fewer than k abstracts in k chunks).

Usage:
    python benchmarks/quality.py [--data PATH] [--embedder SPEC] [--split test]

`--data` defaults to ../shared/data/scifact next to the repository. The same measurement from the
command line: `rag ingest corpus.jsonl --id-field _id --text-field title,text --store numpy`, then
`rag eval FOLDER --store numpy --top-k 10,100 --filter none`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from ingest.pipeline import IngestPipeline  # noqa: E402
from ingest.readers import ReaderOptions  # noqa: E402
from rag.cli._common import DEFAULT_EMBEDDER, build_embedder  # noqa: E402
from rag.cli.ingest import make_splitter  # noqa: E402
from rag.documents import SearchRequest  # noqa: E402
from rag.eval import QuestionSet, evaluate, load_beir, score_ranking  # noqa: E402
from rag.eval.metrics import units_of  # noqa: E402
from rag.vectorstore import VectorStore  # noqa: E402
from stores import InMemoryVectorStore  # noqa: E402

DEFAULT_DATA = _HERE.parents[1] / "shared" / "data" / "scifact"
BM25 = {"ndcg@10": 0.679, "recall@100": 0.925}  # Lucene/Anserini BM25, title+text in one field
DEPTH = 400  # chunks searched per query for the per-document view: >= 100 distinct abstracts in practice


def _ingest(store: VectorStore, corpus: Path) -> tuple[float, int]:
    splitter = make_splitter(store.embedding, None, None)
    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline = IngestPipeline(store, splitter, reader_options=options)
    started = time.perf_counter()
    report = pipeline.run([corpus])
    pipeline.manifest.close()
    if not report.ok:
        raise SystemExit(f"ingesting {corpus} failed:\n{report.summary()}")
    return time.perf_counter() - started, report.chunks_written


def _per_document(store: VectorStore, questions: QuestionSet) -> tuple[dict[str, float], int]:
    """Mean nDCG@10 and recall@100 of abstracts ranked by their best chunk, and the fewest abstracts seen."""
    totals = {"ndcg@10": 0.0, "recall@100": 0.0}
    fewest = DEPTH
    for question in questions:
        qrels = question.qrels()
        hits = store.similarity_search(SearchRequest(question.text, top_k=DEPTH))
        units = units_of(hits, qrels, questions.unit_field)
        fewest = min(fewest, len(units))
        totals["ndcg@10"] += score_ranking(units, qrels, 10)["ndcg"]
        totals["recall@100"] += score_ranking(units, qrels, 100)["recall"]
    return {name: value / len(questions) for name, value in totals.items()}, fewest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument(
        "--embedder", default=DEFAULT_EMBEDDER, help="embedder spec, as `rag ingest --embedder`"
    )
    parser.add_argument("--split", default="test", help="qrels split (qrels/SPLIT.tsv)")
    args = parser.parse_args(argv)
    corpus = args.data / "corpus.jsonl"
    if not corpus.is_file() or not (args.data / "qrels" / f"{args.split}.tsv").is_file():
        print(
            f"error: no BEIR SciFact data at {str(args.data)!r} (need corpus.jsonl, queries.jsonl and "
            f"qrels/{args.split}.tsv); pass --data PATH",
            file=sys.stderr,
        )
        return 2
    questions = load_beir(args.data, args.split)
    model = build_embedder(args.embedder)
    with tempfile.TemporaryDirectory(prefix="rag-quality-") as folder:
        store = InMemoryVectorStore(model, path=folder)
        ingest_s, chunks = _ingest(store, corpus)
        started = time.perf_counter()
        per_doc, fewest = _per_document(store, questions)
        per_doc_s = time.perf_counter() - started
        started = time.perf_counter()
        rows = evaluate(store, questions, top_k=[10, 100]).rows
        chunk_view = {"ndcg@10": rows[0].metrics["ndcg"], "recall@100": rows[1].metrics["recall"]}
        eval_s = time.perf_counter() - started
    print(f"SciFact {args.split}: {len(questions)} judged queries; embedder {args.embedder!r} ({model.name})")
    print(
        f"ingest: {chunks} chunks in {ingest_s:.1f} s; per-document search+score {per_doc_s:.1f} s; "
        f"rag eval sweep {eval_s:.1f} s"
    )
    print()
    print(f"{'metric':<12}{'per document':>14}{'per k chunks':>14}{'BM25 (published)':>18}")
    for name in ("ndcg@10", "recall@100"):
        print(f"{name:<12}{per_doc[name]:>14.3f}{chunk_view[name]:>14.3f}{BM25[name]:>18.3f}")
    if fewest < 100:
        print(f"\nnote: one query's top {DEPTH} chunks held only {fewest} abstracts; recall@100 may be low")
    return 0


if __name__ == "__main__":
    sys.exit(main())
