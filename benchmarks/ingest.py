"""Ingestion speed on SciFact: files/s, chunks/s, peak memory and the unchanged re-run, per store.

The corpus (5,183 abstracts) is ingested twice per store: as the JSON Lines file itself
(`--id-field _id --text-field title,text`) and as one text file per abstract in a temporary folder.
Each case runs in its own process, so its peak memory (max RSS) is its own; "disk MB" is the size of
the store's folder (manifest included) after the first run. The hashing embedder and
the CLI's default splitter are used, opened the same way `rag ingest` opens them.

Usage:
    python benchmarks/ingest.py [--data PATH] [--stores numpy,chroma] [--embedder SPEC] [--limit N]

Then the Chroma store's `add` beside raw chromadb `upsert` of the same records (`add_beside_upsert`).

Targets on 2 cores: >= 1,000 chunks/s into numpy, >= 500 into embedded Chroma, and an unchanged
re-run in <= 5% of the first run's time.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

# This script is named like the `ingest` package; drop its folder from the path so the package is found.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"


def _write_files(corpus: Path, folder: Path, limit: int | None) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and count >= limit:
                break
            record = json.loads(line)
            (folder / f"{record['_id']}.txt").write_text(
                f"{record['title']}\n\n{record['text']}\n", encoding="utf-8"
            )
            count += 1
    return count


def _one_run(store_kind: str, home: Path, source: Path, embedder: str) -> tuple[float, Any]:
    """Open the store as the CLI does and ingest `source`; returns (seconds, report)."""
    from ingest.pipeline import IngestPipeline
    from ingest.readers import ReaderOptions
    from rag.cli._common import open_store
    from rag.cli.ingest import make_splitter
    from rag.config import Settings

    started = time.perf_counter()
    opened = open_store(Settings(home=home, store=store_kind, embedder=embedder), create=True)
    splitter = make_splitter(opened.store.embedding, None, None)
    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline = IngestPipeline(
        opened.store, splitter, manifest=opened.manifest_path, flush=opened.flush, reader_options=options
    )
    try:
        report = pipeline.run([source])
    finally:
        pipeline.manifest.close()
        opened.close()
    return time.perf_counter() - started, report


def run_case(store_kind: str, layout: str, corpus: Path, limit: int | None, embedder: str) -> dict[str, Any]:
    """One case, in this process: first run, then an unchanged re-run."""
    with tempfile.TemporaryDirectory(prefix="rag-bench-") as tmp:
        work = Path(tmp)
        if layout == "files":
            source = work / "docs"
            _write_files(corpus, source, limit)
        elif limit is not None:
            source = work / "corpus.jsonl"
            with corpus.open(encoding="utf-8") as lines:
                source.write_text(
                    "".join(line for _, line in zip(range(limit), lines, strict=False)), encoding="utf-8"
                )
        else:
            source = corpus
        first_s, first = _one_run(store_kind, work / "home", source, embedder)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        disk_mb = sum(f.stat().st_size for f in (work / "home").rglob("*") if f.is_file()) / 2**20
        again_s, again = _one_run(store_kind, work / "home", source, embedder)
    files = sum(first.counts.values())
    return {
        "store": store_kind,
        "layout": layout,
        "files": files,
        "chunks": first.chunks_written,
        "failed": first.counts["failed"],
        "truncated": first.truncated_chunks,
        "first_s": first_s,
        "files_per_s": files / first_s,
        "chunks_per_s": first.chunks_written / first_s,
        "peak_mb": peak_mb,
        "disk_mb": disk_mb,
        "rerun_s": again_s,
        "rerun_pct": 100 * again_s / first_s,
        "rerun_embedded": again.chunks_embedded,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    head = f"{'store':<7}{'layout':<7}{'files':>7}{'chunks':>8}{'first s':>9}{'files/s':>9}{'chunks/s':>10}"
    head += f"{'peak MB':>9}{'disk MB':>9}{'rerun s':>9}{'rerun %':>9}{'rerun emb':>10}"
    head += f"{'failed':>8}{'trunc':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        files_per_s = f"{r['files_per_s']:.0f}" if r["files"] > 1 else "-"
        lines.append(
            f"{r['store']:<7}{r['layout']:<7}{r['files']:>7}{r['chunks']:>8}{r['first_s']:>9.2f}{files_per_s:>9}"
            f"{r['chunks_per_s']:>10.0f}{r['peak_mb']:>9.0f}{r['disk_mb']:>9.0f}{r['rerun_s']:>9.3f}{r['rerun_pct']:>8.1f}%"
            f"{r['rerun_embedded']:>10}{r['failed']:>8}{r['truncated']:>7}"
        )
    return "\n".join(lines)


def _check_same_records(ours: Any, raw: Any, ids: list[str]) -> None:
    """Stop unless both collections hold the same metadata for `ids`: the comparison is of equal work."""
    mine, theirs = (c.get(ids=ids, include=["metadatas"]) for c in (ours, raw))
    if dict(zip(mine["ids"], mine["metadatas"], strict=True)) != dict(
        zip(theirs["ids"], theirs["metadatas"], strict=True)
    ):
        raise SystemExit("add_beside_upsert: the raw side writes other records than the store")


def add_beside_upsert(corpus: Path, limit: int | None, repeats: int = 3) -> dict[str, float]:
    """`ChromaVectorStore.add` of SciFact chunks beside raw chromadb `upsert` of the very same records.

    The chunks are embedded once beforehand (hashing), so both sides write identical ids, vectors and
    metadata (the store's record layout, encoded beforehand for the raw side) into fresh collections
    with the same configuration; best of `repeats` rounds, each side timed in alternation.
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    from ingest.pipeline import IngestPipeline
    from ingest.readers import ReaderOptions
    from rag.cli.ingest import make_splitter
    from rag.embeddings import HashingEmbedding
    from stores import ChromaVectorStore, NumpyVectorStore
    from stores.chroma.records import encode

    model = HashingEmbedding()
    # The pipeline's own chunks (ids, texts, metadata), embedded once through a numpy store.
    staging = NumpyVectorStore(model)
    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline = IngestPipeline(staging, make_splitter(model, None, None), reader_options=options)
    pipeline.run([corpus])
    pipeline.manifest.close()
    docs = staging.get(limit=limit, include_embeddings=True)
    vectors = np.stack([d.embedding for d in docs if d.embedding is not None])
    records = []
    for doc in docs:
        records.append(encode(doc.text, doc.metadata))  # the layout the store writes
    ids = [d.id for d in docs]
    best = {"store": float("inf"), "raw": float("inf")}
    with tempfile.TemporaryDirectory(prefix="rag-bench-") as tmp:
        for round_ in range(repeats):
            with ChromaVectorStore(model, collection=f"store-{round_}", path=tmp) as store:
                started = time.perf_counter()
                store.add(docs)
                best["store"] = min(best["store"], time.perf_counter() - started)
            client = chromadb.PersistentClient(path=tmp, settings=ChromaSettings(anonymized_telemetry=False))
            config: Any = {"hnsw": {"space": "ip", "ef_search": 400, "ef_construction": 200}}
            raw = client.create_collection(f"raw-{round_}", embedding_function=None, configuration=config)
            started = time.perf_counter()
            step = client.get_max_batch_size()
            for i in range(0, len(docs), step):
                raw.upsert(
                    ids=ids[i : i + step], embeddings=vectors[i : i + step], metadatas=records[i : i + step]
                )
            best["raw"] = min(best["raw"], time.perf_counter() - started)
            if round_ == 0:
                written = client.get_collection(f"store-{round_}")
                _check_same_records(written, raw, ids[:: max(1, len(ids) // 200)])
    return {"chunks": float(len(docs)), **best}


def print_add_beside_upsert(corpus: Path, limit: int | None) -> None:
    f = add_beside_upsert(corpus, limit)
    print(
        f"\nChroma writes, {f['chunks']:,.0f} SciFact chunks (embedded beforehand, best of 3): store.add "
        f"{f['store']:.2f} s, raw chromadb upsert of the same records {f['raw']:.2f} s; our overhead "
        f"{f['store'] / f['raw'] - 1:+.0%} (target <= +15%)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact corpus.jsonl")
    parser.add_argument("--stores", default="numpy,chroma", help="comma-separated: numpy, chroma")
    parser.add_argument("--embedder", default="hashing", help="embedder spec (default: hashing)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N abstracts")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: STORE:LAYOUT, run in a child process
    args = parser.parse_args()
    if not args.data.is_file():
        print(
            f"error: SciFact corpus not found at {str(args.data)!r}; pass --data PATH/corpus.jsonl",
            file=sys.stderr,
        )
        return 2
    if args.case:
        store_kind, layout = args.case.split(":")
        print(json.dumps(run_case(store_kind, layout, args.data, args.limit, args.embedder)))
        return 0
    rows = []
    for store_kind in args.stores.split(","):
        for layout in ("jsonl", "files"):
            command = [sys.executable, __file__, "--data", str(args.data), "--embedder", args.embedder]
            command += ["--case", f"{store_kind}:{layout}"]
            if args.limit is not None:
                command += ["--limit", str(args.limit)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"error: case {store_kind}:{layout} failed:\n{done.stderr}", file=sys.stderr)
                return 1
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"done {store_kind}:{layout}", file=sys.stderr)
    print(_table(rows))
    if "chroma" in args.stores.split(","):
        print_add_beside_upsert(args.data, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
