"""The first filtered query after opening a saved home, in a fresh process.

Every `rag query --filter ...` is a new process: what it pays before its first answer is the open plus
whatever the first filtered query loads (the numpy store's filter columns; Chroma's own collection).
For each size this builds, once, an embedded Chroma home and a saved numpy store of the same records
(random unit vectors, d=384, no model: `Lookup` maps query texts to prepared vectors) with metadata
of every kind:

    {"year": int, "score": float, "lang": str (5 values), "title": str (unique), "draft": bool}

then starts fresh Python processes, each timing one sequence on one store:

- `filtered`: open, first filtered search, first `count(filter)`, then a warm filtered search (median);
- `count`:    open, first `count(filter)` (nothing loaded before it);
- `plain`:    open, first unfiltered search, then a warm one (median);
- `warmed` (Chroma): open, an unfiltered `count()` (Chroma's own first call, which loads the
  collection: shown in the count column), then the first filtered search and warm ones. Chroma's
  first call costs the same with or without a filter, so this row shows what filtering adds.

The "x warm" column is the first filtered search over the warm one. Homes are kept in `--home`
(built when missing) so a before/after comparison reads the same folders; the first fresh process
after a code change may convert an older save, so each sequence runs `--runs` times and the table
shows the median of all runs but the first (what a user sees every day). The machine's load moves
single figures a lot: `--against CODE HOME` times another checkout (say, the previous commit, from
`git worktree add`) on homes it builds itself, alternating process by process with this code, so
both see the same load.

    python benchmarks/reopen.py --sizes 10000,100000 --home /tmp/reopen-homes
    python benchmarks/reopen.py --home /tmp/new-homes --against /tmp/old-checkout /tmp/old-homes
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
QUERIES = 40
FILTER = "lang == 'en' AND year >= 2015"  # about 10% of the records
COUNT_FILTER = "score < 0.25 OR draft == true"
LANGS = ["en", "de", "fr", "es", "it"]


class Lookup:
    """A stand-in embedding model: query texts "q <i>" map to prepared vectors (no model time)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(99)
        queries = rng.standard_normal((QUERIES, DIMENSIONS), dtype=np.float32)
        self.queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
        self.dimensions = DIMENSIONS
        self.name = f"bench-lookup-{DIMENSIONS}"

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        rows: npt.NDArray[np.float32] = self.queries[[int(text.split()[-1]) for text in texts]]
        return rows.copy()


def documents(count: int) -> Iterator[list[Any]]:
    """The records, in batches of 5,000, each with a vector and metadata of every kind."""
    from rag import Document

    rng = np.random.default_rng(0)
    for start in range(0, count, 5000):
        size = min(5000, count - start)
        vectors = rng.standard_normal((size, DIMENSIONS), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        years = rng.integers(1990, 2025, size)
        scores = rng.random(size)
        yield [
            Document(
                f"doc-{start + i:07d}",
                f"text {start + i}",
                {
                    "year": int(years[i]),
                    "score": float(scores[i]),
                    "lang": LANGS[(start + i) % 5],
                    "title": f"title {(start + i) * 7919 % count:07d}",
                    "draft": bool((start + i) % 3 == 0),
                },
                embedding=vectors[i],
            )
            for i in range(size)
        ]


def build(home: Path, count: int) -> None:
    """An embedded Chroma home and a saved numpy store of `count` records, unless already there."""
    from stores import ChromaVectorStore, NumpyVectorStore

    chroma, numpy_folder = home / f"chroma-{count}", home / f"numpy-{count}"
    if chroma.is_dir() and numpy_folder.is_dir():
        return
    started = time.perf_counter()
    model: Any = Lookup()
    with ChromaVectorStore(model, collection="bench", path=chroma) as store:
        exact = NumpyVectorStore(model)
        for batch in documents(count):
            store.add(batch)
            exact.add(batch)
        exact.save(numpy_folder)
        # Chroma's BM25 index beside the collection is built and saved now, as after any use.
        store.count(FILTER)
    print(f"N={count:,}: homes built in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _open(kind: str, folder: Path) -> Any:
    model: Any = Lookup()
    if kind == "chroma":
        from stores import ChromaVectorStore

        return ChromaVectorStore(model, collection="bench", path=folder)
    from stores import NumpyVectorStore

    return NumpyVectorStore.load(folder, model)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def child(kind: str, folder: Path, sequence: str) -> dict[str, float]:
    """One sequence in this (fresh) process; milliseconds by step."""
    from rag import SearchRequest

    figures: dict[str, float] = {}
    holder: list[Any] = []
    figures["open"] = _timed(lambda: holder.append(_open(kind, folder)))
    store = holder[0]

    def search(i: int, filtered: bool) -> Callable[[], object]:
        request = SearchRequest(f"q {i}", top_k=10, filter=FILTER if filtered else None)
        return lambda: store.similarity_search(request)

    if sequence == "filtered":
        figures["first"] = _timed(search(0, True))
        figures["count"] = _timed(lambda: store.count(COUNT_FILTER))
        figures["warm"] = statistics.median(_timed(search(i, True)) for i in range(1, QUERIES))
    elif sequence == "warmed":
        figures["chroma"] = _timed(lambda: store.count())  # Chroma's own first call: no filter columns
        figures["first"] = _timed(search(0, True))
        figures["warm"] = statistics.median(_timed(search(i, True)) for i in range(1, QUERIES))
    elif sequence == "count":
        figures["first"] = _timed(lambda: store.count(COUNT_FILTER))
        figures["warm"] = statistics.median(_timed(lambda: store.count(COUNT_FILTER)) for _ in range(9))
    else:
        figures["first"] = _timed(search(0, False))
        figures["warm"] = statistics.median(_timed(search(i, False)) for i in range(1, QUERIES))
    close = getattr(store, "close", None)
    if close is not None:
        close()
    return figures


def fresh(kind: str, folder: Path, sequence: str, code: Path = _HERE.parent) -> dict[str, float]:
    """Run `child` in a new interpreter importing the project from `code`, and return its figures."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(folder), sequence]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child failed ({kind} {sequence}, code {code}):\n{done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over `runs`."""
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def _row(label: str, kind: str, count: int, sequence: str, figures: dict[str, float]) -> str:
    second = figures.get("count", figures.get("chroma"))
    counted = f"{'':>10}" if second is None else f"{second:>10.1f}"
    ratio = figures["first"] / max(figures["warm"], 1e-6)
    return (
        f"{label:<8}{kind:<7}{count:>9,}  {sequence:<9}{figures['open']:>9.1f}{figures['first']:>10.1f}"
        f"{counted}{figures['warm']:>9.1f}{ratio:>8.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated record counts")
    parser.add_argument("--home", type=Path, default=None, help="folder keeping the built homes")
    parser.add_argument("--runs", type=int, default=4, help="fresh processes per sequence")
    parser.add_argument(
        "--against",
        nargs=2,
        type=Path,
        metavar=("CODE", "HOME"),
        help="also time another checkout of the project (CODE) on its own homes (HOME, built by it), "
        "alternating process by process with this one",
    )
    parser.add_argument("--child", nargs=3, metavar=("KIND", "FOLDER", "SEQUENCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, folder, sequence = args.child
        if kind == "build":
            build(Path(folder), int(sequence))
            print("{}")
        else:
            print(json.dumps(child(kind, Path(folder), sequence)))
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="reopen-"))
    sides = [("this", _HERE.parent, home)]
    if args.against:
        sides.append(("against", args.against[0].resolve(), args.against[1]))
    sizes = [int(size) for size in args.sizes.split(",")]
    header = f"{'code':<8}{'store':<7}{'N':>9}  {'sequence':<9}{'open ms':>9}{'first ms':>10}{'count ms':>10}"
    print(header + f"{'warm ms':>9}{'x warm':>8}")
    for count in sizes:
        for _, code, folder in sides:
            fresh("build", folder, str(count), code)
        for kind in ("chroma", "numpy"):
            for sequence in ("filtered", "count", "plain", "warmed")[: 4 if kind == "chroma" else 3]:
                runs: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in sides}
                for _ in range(args.runs):
                    for label, code, folder in sides:
                        runs[label].append(fresh(kind, folder / f"{kind}-{count}", sequence, code))
                for label, held in runs.items():
                    print(_row(label, kind, count, sequence, median(held[1:] or held)), flush=True)
    print(f"homes kept in {home}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
