"""Opening a saved numpy store: does it cost the same at 10k, 100k and 1M chunks?

For each size this writes a save directly through the saved-form writer (`stores.numpy.persist.write`:
random unit vectors, d=384, synthetic texts and metadata, no model and no BM25 index, so building 1M
takes a minute or two), then, in fresh processes (the page cache warm, as for any repeated CLI call),
times opening it (`NumpyVectorStore(path=...)`) and the first vector query after the open (which
checks every block of the vectors once: a pass over 1.5 GB at 1M). It prints the ratio
open(largest) / open(smallest) (target <= 3x).

Then it builds a 20k-chunk CLI home through `ingest.open_home` (hashing embedder, BM25 index
included) and times `rag query TEXT` (target <= 2x) and `rag query --mode lexical TEXT` against
`rag --help`, each as a whole process, alternating, median of `--runs`.

    python benchmarks/numpy_open.py --sizes 10000,100000,1000000 --home /tmp/numpy-open
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIMENSIONS = 384
WORDS = [
    "harbour",
    "lantern",
    "ledger",
    "signal",
    "tide",
    "fog",
    "keeper",
    "storm",
    "pump",
    "valve",
    "rotor",
    "gauge",
]

_TIMER = """
import sys, time
start = time.perf_counter()
from stores import NumpyVectorStore
from rag.testing import FakeEmbedding
import numpy as np
imported = time.perf_counter()
store = NumpyVectorStore(FakeEmbedding({dims}), path=sys.argv[1])
opened = time.perf_counter()
store.similarity_search("harbour lantern 17")
first = time.perf_counter()
print(opened - imported, first - opened)
"""


def _texts(count: int, start: int) -> list[str]:
    rng = np.random.default_rng(start)
    picks = rng.integers(0, len(WORDS), (count, 12))
    return [f"chunk {start + i} " + " ".join(WORDS[j] for j in row) for i, row in enumerate(picks.tolist())]


def build(folder: Path, count: int) -> None:
    """A save of `count` chunks written directly by the saved-form writer."""
    from rag.documents import MetadataValue
    from stores.numpy.persist import Contents, exists, write
    from stores.numpy.records import PackedRecords

    if exists(folder):
        return
    rng = np.random.default_rng(count)
    vectors = np.empty((count, DIMENSIONS), np.float32)
    records = PackedRecords()
    step = 100_000
    for begin in range(0, count, step):
        end = min(begin + step, count)
        block = rng.standard_normal((end - begin, DIMENSIONS)).astype(np.float32)
        vectors[begin:end] = block / np.linalg.norm(block, axis=1, keepdims=True)
        metadatas: list[dict[str, MetadataValue]] = [
            {"source": f"file{i // 20}.md", "chunk": i % 20} for i in range(begin, end)
        ]
        records.write(np.arange(begin, end), _texts(end - begin, begin), metadatas)
    ids = [f"id-{i:08d}" for i in range(count)]
    from rag.testing import FakeEmbedding

    model = FakeEmbedding(DIMENSIONS).name
    write(folder, Contents(model, DIMENSIONS, vectors, records, ids, np.arange(count), None, None))


def time_open(folder: Path, runs: int) -> tuple[float, float]:
    script = _TIMER.format(dims=DIMENSIONS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    opens: list[float] = []
    firsts: list[float] = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        opens.append(float(out[0]))
        firsts.append(float(out[1]))
    return statistics.median(opens), statistics.median(firsts)


def build_home(folder: Path, count: int) -> None:
    from ingest import open_home
    from rag import Document

    if (folder / "stores.json").exists():
        return
    with open_home(folder, store="numpy", embedder="hashing", create=True) as home:
        for begin in range(0, count, 5000):
            texts = _texts(min(5000, count - begin), begin)
            home.store.add(
                Document(f"c{begin + i}", text, {"source": f"f{(begin + i) // 20}.md"})
                for i, text in enumerate(texts)
            )
        home.save()


def time_cli(home: Path, runs: int) -> tuple[float, float, float]:
    """Median seconds of `rag --help`, `rag query` and `rag query --mode lexical` (which loads the
    saved BM25 index), each a whole process, alternating."""
    rag = [str(Path(sys.executable).parent / "rag")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAG_HOME": str(home)}
    commands = (
        ["--help"],
        ["query", "harbour lantern storm"],
        ["query", "--mode", "lexical", "harbour storm"],
    )
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for command, out in zip(commands, times, strict=True):
            start = time.perf_counter()
            subprocess.run(rag + command, capture_output=True, env=env, check=True)
            out.append(time.perf_counter() - start)
    helped, queried, lexical = (statistics.median(out) for out in times)
    return helped, queried, lexical


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--home", type=Path, default=Path("/tmp/numpy-open"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cli-chunks", type=int, default=20000)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"{'chunks':>9} {'build s':>8} {'open ms':>9} {'first query ms':>15}")
    opens = {}
    for size in sizes:
        folder = args.home / f"store-{size}"
        start = time.perf_counter()
        build(folder, size)
        built = time.perf_counter() - start
        opened, first = time_open(folder, args.runs)
        opens[size] = opened
        print(f"{size:>9} {built:>8.1f} {opened * 1e3:>9.2f} {first * 1e3:>15.1f}", flush=True)
    print(f"open({sizes[-1]}) / open({sizes[0]}) = {opens[sizes[-1]] / opens[sizes[0]]:.2f}x (target <= 3x)")
    home = args.home / f"home-{args.cli_chunks}"
    build_home(home, args.cli_chunks)
    helped, queried, lexical = time_cli(home, args.runs)
    print(
        f"rag --help {helped * 1e3:.0f} ms, rag query ({args.cli_chunks} chunks) {queried * 1e3:.0f} ms: "
        f"{queried / helped:.2f}x (target <= 2x); rag query --mode lexical {lexical * 1e3:.0f} ms: "
        f"{lexical / helped:.2f}x"
    )


if __name__ == "__main__":
    main()
