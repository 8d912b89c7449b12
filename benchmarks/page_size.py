"""Does the page size change the ranking? Hybrid and MMR at top_k=10 against the first 10 at top_k=100.

For each fusion (and MMR), and for the candidate pool as it is (`max(top_k, CANDIDATE_POOL)`, or other
fixed sizes given with `--pools`) and as it was before (`max(4 * top_k, 50)`), it prints over BEIR
SciFact's judged test queries: how many queries' top 10 at `top_k=10` differ from the first 10 at
`top_k=100`, and nDCG@10 (from the `top_k=10` list) and recall@100 (from the `top_k=100` list),
abstracts counted once.

Usage:
    python benchmarks/page_size.py [--data PATH] [--embedder SPEC] [--vector-weight W] [--pools 100,400]
        [--store numpy|chroma]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import rag.retrieval.ranking  # noqa: E402
from ingest.pipeline import IngestPipeline  # noqa: E402
from ingest.readers import ReaderOptions  # noqa: E402
from rag.cli._common import DEFAULT_EMBEDDER, build_embedder  # noqa: E402
from rag.cli.ingest import make_splitter  # noqa: E402
from rag.documents import SearchRequest  # noqa: E402
from rag.eval import QuestionSet, load_beir, score_ranking  # noqa: E402
from rag.eval.metrics import units_of  # noqa: E402
from rag.vectorstore import VectorStore  # noqa: E402
from stores import ChromaVectorStore, NumpyVectorStore  # noqa: E402

DEFAULT_DATA = _HERE.parents[1] / "shared" / "data" / "scifact"


def _fixed(size: int) -> Callable[[int], int]:
    def depth(top_k: int) -> int:
        return max(top_k, size)

    return depth


def _old(top_k: int) -> int:
    return max(4 * top_k, 50)


def _pools(sizes: list[int]) -> dict[str, Callable[[int], int]]:
    """The pool rules compared: fixed pools of the given sizes, then the old rule."""
    pools = {f"fixed max(k, {size})": _fixed(size) for size in sizes}
    pools["old max(4k, 50)"] = _old
    return pools


def _ingest(store: VectorStore, corpus: Path) -> None:
    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline = IngestPipeline(store, make_splitter(store.embedding, None, None), reader_options=options)
    report = pipeline.run([corpus])
    pipeline.manifest.close()
    if not report.ok:
        raise SystemExit(f"ingesting {corpus} failed:\n{report.summary()}")


def _measure(
    store: VectorStore, questions: QuestionSet, base: SearchRequest
) -> tuple[int, float, float, float]:
    """(queries whose top 10 is not the prefix of the top 100, mean nDCG@10, mean recall@100,
    median milliseconds of a top_k=10 search)."""
    differ, ndcg, recall = 0, 0.0, 0.0
    times: list[float] = []
    for question in questions:
        started = time.perf_counter()
        short = store.similarity_search(base.replace(query=question.text, top_k=10))
        times.append(time.perf_counter() - started)
        long = store.similarity_search(base.replace(query=question.text, top_k=100))
        differ += [d.id for d in short] != [d.id for d in long[:10]]
        qrels = question.qrels()
        ndcg += score_ranking(units_of(short, qrels, questions.unit_field), qrels, 10)["ndcg"]
        recall += score_ranking(units_of(long, qrels, questions.unit_field), qrels, 100)["recall"]
    return differ, ndcg / len(questions), recall / len(questions), 1000 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="embedder spec, as `rag ingest`")
    parser.add_argument("--vector-weight", type=float, default=0.2, help="vector share in the fusion")
    parser.add_argument(
        "--pools",
        default=str(rag.retrieval.ranking.CANDIDATE_POOL),
        help="fixed pool sizes to compare, e.g. 100,400",
    )
    parser.add_argument("--store", choices=("numpy", "chroma"), default="numpy", help="store to search")
    args = parser.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"error: no BEIR data at {str(args.data)!r}; pass --data PATH", file=sys.stderr)
        return 2
    questions = load_beir(args.data, "test")
    model = build_embedder(args.embedder)
    settings = {
        "hybrid weighted": SearchRequest(
            "x", mode="hybrid", fusion="weighted", vector_weight=args.vector_weight
        ),
        "hybrid rrf": SearchRequest("x", mode="hybrid", fusion="rrf", vector_weight=args.vector_weight),
        "vector + MMR 0.3": SearchRequest("x", mode="vector", diversity=0.3),
    }
    print(
        f"SciFact test: {len(questions)} queries; embedder {model.name}; vector weight {args.vector_weight:g}"
    )
    print(f"{'search':<18}{'pool':<20}{'top10 != prefix':>16}{'nDCG@10':>10}{'recall@100':>12}{'ms@10':>8}")
    original = rag.retrieval.ranking.candidate_depth
    with tempfile.TemporaryDirectory(prefix="rag-page-size-") as folder:
        store: VectorStore = (
            NumpyVectorStore(model, path=folder)
            if args.store == "numpy"
            else ChromaVectorStore(model, path=Path(folder) / "chroma")
        )
        _ingest(store, args.data / "corpus.jsonl")
        try:
            for name, base in settings.items():
                for pool, depth in _pools([int(size) for size in args.pools.split(",")]).items():
                    rag.retrieval.ranking.candidate_depth = depth  # type: ignore[assignment]  # rank() looks it up here
                    differ, ndcg, recall, ms = _measure(store, questions, base)
                    cells = f"{differ:>10}/{len(questions):<5}{ndcg:>10.3f}{recall:>12.3f}{ms:>8.1f}"
                    print(f"{name:<18}{pool:<20}{cells}")
        finally:
            rag.retrieval.ranking.candidate_depth = original
            if isinstance(store, ChromaVectorStore):
                store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
