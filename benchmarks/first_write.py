"""The first small write after opening a saved embedded Chroma home, in a fresh process.

A `rag ingest` that changes one file of a big home is a new process that opens the home, writes a
few chunks and saves the sidecar (the BM25 index, the filter columns and the kept records) at exit.
For each size this builds, once, an embedded Chroma home of N chunks of about 1 KB with four metadata
keys (a path, an int, a title, a list of two headings; random unit vectors, d=384, no model), then
starts fresh Python processes, each of which:

- opens the store (`open`) and makes Chroma's own first call, an unfiltered `count()` (`chroma`,
  the same for any code: it loads the collection);
- upserts 3 chunks over existing ids with new texts (`write`: loads what the sidecar needs for a
  write, then writes to Chroma and to the sidecar);
- closes the store, which saves the sidecar (`save`).

Each process writes new texts, so every run is a real change and the home stays N chunks. The table
shows the median of all runs but the first. `--against CODE HOME` times another checkout (say, the
previous commit, exported with `git archive`) on homes it builds itself, alternating process by
process with this code, so both see the same machine load.

    python benchmarks/first_write.py --sizes 10000,100000 --runs 5 --home /tmp/write-homes
    python benchmarks/first_write.py --home /tmp/new --against /tmp/old-checkout /tmp/old-homes
"""

from __future__ import annotations

import argparse
import json
import os
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

DIMENSIONS = 384
WORDS = [
    "retrieval",
    "augmented",
    "generation",
    "vector",
    "store",
    "lexical",
    "index",
    "chunk",
    "splitter",
    "embedding",
    "model",
]


class Lookup:
    """A stand-in embedding model: documents carry their vectors; a query gets a fixed unit vector."""

    dimensions = DIMENSIONS
    name = f"bench-lookup-{DIMENSIONS}"

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        vectors = np.zeros((len(texts), DIMENSIONS), np.float32)
        vectors[:, 0] = 1.0
        return vectors


def _text(rng: np.random.Generator, number: int) -> str:
    words = [WORDS[i] for i in rng.integers(0, len(WORDS), 120)]
    return f"chunk {number} " + " ".join(words)  # about 1 KB


def documents(start: int, count: int, seed: int) -> list[Any]:
    """`count` chunks from number `start`, with vectors and four metadata keys."""
    from rag import Document

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        Document(
            f"chunk-{number:07d}",
            _text(rng, number),
            {
                "path": f"docs/file-{number // 20:05d}.md",
                "index": number % 20,
                "title": f"File {number // 20}",
                "headings": [f"Part {number % 3}", f"Section {number % 7}"],
            },
            embedding=vectors[i],
        )
        for i, number in enumerate(range(start, start + count))
    ]


def _batches(count: int) -> Iterator[list[Any]]:
    for start in range(0, count, 5000):
        yield documents(start, min(5000, count - start), seed=start)


def build(folder: Path, count: int) -> None:
    """An embedded Chroma home of `count` chunks with its sidecar saved, unless already there."""
    from rag import SearchRequest
    from stores import ChromaVectorStore

    if folder.is_dir():
        return
    started = time.perf_counter()
    model: Any = Lookup()
    with ChromaVectorStore(model, collection="bench", path=folder) as store:
        for batch in _batches(count):
            store.add(batch)
        # The sidecar (BM25 index, filter columns, kept records) is built and saved, as after any use.
        store.similarity_search(SearchRequest("chunk", top_k=1, mode="lexical"))
    print(f"N={count:,}: home built in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def child(folder: Path, count: int) -> dict[str, float]:
    """Open, Chroma's first call, a 3-chunk upsert, close; milliseconds by step."""
    from stores import ChromaVectorStore

    figures: dict[str, float] = {}
    model: Any = Lookup()
    holder: list[Any] = []
    figures["open"] = _timed(lambda: holder.append(ChromaVectorStore(model, collection="bench", path=folder)))
    store = holder[0]
    figures["chroma"] = _timed(store.count)
    changed = documents(count // 2, 3, seed=time.time_ns() % 2**32)  # new texts over existing ids
    figures["write"] = _timed(lambda: store.add(changed))
    figures["save"] = _timed(store.close)
    return figures


def fresh(folder: Path, count: int, code: Path, build_only: bool = False) -> dict[str, float]:
    """Run `child` (or `build`) in a new interpreter importing the project from `code`."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    step = "build" if build_only else "child"
    command = [sys.executable, str(Path(__file__).resolve()), "--" + step, str(folder), str(count)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} failed (code {code}):\n{done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--home", type=Path, default=None, help="folder keeping the built homes")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per size and code")
    parser.add_argument("--against", nargs=2, type=Path, metavar=("CODE", "HOME"))
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "COUNT"), help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=2, metavar=("FOLDER", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build or args.child:
        folder, count = args.build or args.child
        if args.build:
            build(Path(folder), int(count))
            print("{}")
        else:
            print(json.dumps(child(Path(folder), int(count))))
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="first-write-"))
    sides = [("this", _HERE.parent, home)]
    if args.against:
        sides.append(("against", args.against[0].resolve(), args.against[1]))
    print(f"{'code':<8}{'N':>9}{'open ms':>10}{'chroma ms':>11}{'write ms':>10}{'save ms':>10}")
    for count in [int(size) for size in args.sizes.split(",")]:
        for _, code, folder in sides:
            fresh(folder / f"chroma-{count}", count, code, build_only=True)
        runs: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in sides}
        for _ in range(args.runs):
            for label, code, folder in sides:
                runs[label].append(fresh(folder / f"chroma-{count}", count, code))
        for label, held in runs.items():
            kept = held[1:] or held
            median = {name: statistics.median(run[name] for run in kept) for name in kept[0]}
            print(
                f"{label:<8}{count:>9,}{median['open']:>10.1f}{median['chroma']:>11.1f}"
                f"{median['write']:>10.1f}{median['save']:>10.1f}",
                flush=True,
            )
    print(f"homes kept in {home}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
