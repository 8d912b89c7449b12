"""What users wait for at the command line: `rag --help`, `rag query` and an unchanged `rag ingest`.

Each figure is a whole process (`python -m rag.cli`-equivalent: the `rag` entry point of this
interpreter), timed from spawn to exit, median of `--repeats` runs. The home is a temporary folder;
the corpus is BEIR SciFact's corpus.jsonl (5,183 abstracts) when ../shared/data/scifact holds it, else
the project's own `data/docs` (or `--data`: a folder, or a JSON Lines file read with
`--text-field title,text --id-field _id`). The first ingest is timed once; the
unchanged re-ingest, which should write nothing, is timed as a share of it (target <= 5%).
Also the import time of `rag`, `stores`, `ingest` and `rag.cli` in a fresh interpreter, and which heavy
libraries that loads (target: none; `rag --help` <= 0.3 s).

    python benchmarks/startup.py [--data PATH] [--store chroma|numpy] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_RAG = [sys.executable, "-c", "import sys; from rag.cli import main; sys.exit(main())"]
_IMPORTS = (
    "import sys, time; t = time.perf_counter(); import rag, stores, ingest, rag.cli; "
    "print(time.perf_counter() - t, [m for m in ('chromadb', 'torch', 'httpx', 'pydantic', 'rich') "
    "if m in sys.modules])"
)


def _default_data() -> Path:
    scifact = _ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    return scifact if scifact.is_file() else _ROOT / "data" / "docs"


def run(args: list[str], env: dict[str, str]) -> float:
    """Seconds one `rag ...` process takes, which must succeed."""
    start = time.perf_counter()
    done = subprocess.run([*_RAG, *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"rag {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def median_of(args: list[str], env: dict[str, str], repeats: int) -> float:
    return statistics.median(run(args, env) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=_default_data())
    parser.add_argument("--store", choices=("chroma", "numpy"), default="chroma")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "RAG_HOME": home, "RAG_STORE": args.store, "PYTHONPATH": str(_ROOT)}
        imports = subprocess.run([sys.executable, "-c", _IMPORTS], env=env, capture_output=True, text=True)
        helped = median_of(["--help"], env, args.repeats)
        fields = ["--text-field", "title,text", "--id-field", "_id"] if args.data.suffix == ".jsonl" else []
        first = run(["ingest", str(args.data), *fields], env)
        again = median_of(["ingest", str(args.data), *fields], env, args.repeats)
        query = median_of(["query", "how do I install it"], env, args.repeats)
    print(f"\nWhole processes, median of {args.repeats} ({args.store} store, corpus {args.data})")
    print(f"{'what':<32} {'seconds':>8}  target")
    print("-" * 52)
    seconds, loaded = imports.stdout.split(" ", 1)
    print(
        f"{'import rag, stores, ingest, cli':<32} {float(seconds):>8.3f}  loads {loaded.strip()}, none wanted"
    )
    print(f"{'rag --help':<32} {helped:>8.3f}  <= 0.3 s")
    print(f"{'rag query':<32} {query:>8.3f}")
    print(f"{'rag ingest (first run)':<32} {first:>8.3f}")
    print(f"{'rag ingest (unchanged)':<32} {again:>8.3f}  {again / first:.1%} of the first run, <= 5%")


if __name__ == "__main__":
    main()
