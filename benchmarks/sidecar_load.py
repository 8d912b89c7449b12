"""What a filter loads of an embedded Chroma home's sidecar, against a whole load, paired in one process.

A filter needs the filter columns alone; a lexical or hybrid search or a write also needs the BM25
index and the kept records (the lexical half). This opens a saved home (built by
`benchmarks/reopen.py` or `benchmarks/first_write.py`), makes Chroma's own first call, then loads
the saved sidecar both ways, alternating, and prints the medians:

    python benchmarks/sidecar_load.py /tmp/reopen-homes/chroma-100000 --repeats 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


class _Named:
    """The model name and size a benchmark home was built with (nothing is embedded here)."""

    def __init__(self, name: str, dimensions: int) -> None:
        self.name, self.dimensions = name, dimensions

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        raise AssertionError("nothing is embedded when loading a sidecar")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("home", type=Path, help="an embedded Chroma folder with a saved sidecar")
    parser.add_argument("--collection", default="bench")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    from stores import ChromaVectorStore

    model: Any = _Named("bench-lookup-384", 384)
    with ChromaVectorStore(model, collection=args.collection, path=args.home) as store:
        store.count()  # Chroma's own first call, paid by any code, out of the way
        lexical = store._lexical
        token = lexical._current()
        times: dict[str, list[float]] = {"filter (columns)": [], "whole sidecar": []}
        for _ in range(args.repeats):
            for label, whole in (("filter (columns)", False), ("whole sidecar", True)):
                started = time.perf_counter()
                if lexical._load(token, whole) is None:
                    raise SystemExit(f"no usable sidecar saved in {args.home}")
                times[label].append((time.perf_counter() - started) * 1000)
    for label, values in times.items():
        print(f"{label:<18} median {statistics.median(values):7.1f} ms   min {min(values):7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
