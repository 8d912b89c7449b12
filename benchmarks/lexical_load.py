"""Loading a saved lexical (BM25) index, first query included: the current save form against the first.

What every CLI process pays on its first lexical or hybrid search of a Chroma home (the index kept in
a folder, `LexicalIndex.load`). For each size this builds an index of synthetic documents (~60 words
drawn from a Zipf law over 50k made-up words; the ids look like `path/to/file-N.md#chunk-M`), saves
it twice: with `LexicalIndex.save` (the current form: segments as searched, ids and vocabulary with
their hash maps, read as saved) and with a copy of the first form's writer below (one merged segment,
ids as JSON, terms as lines: what homes written before hold, read and converted on every load). Then,
in this process, loads each save once untimed (imports, page cache), then each in turn `--runs`
times, timing load + the first query; the table shows medians, and the ratio of the largest size to
the smallest (target: <= 3x for the current form).

    python benchmarks/lexical_load.py --sizes 10000,100000,400000
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from stores.lexical import LexicalIndex  # noqa: E402
from stores.lexical.persist import MANIFEST, to_arrays  # noqa: E402
from stores.lexical.segments import merge  # noqa: E402

QUERY = "harbour storm lantern"


def build(count: int, rng: np.random.Generator) -> LexicalIndex:
    letters = "bcdfghklmnprstvz"
    syllables = [a + v for a in letters for v in "aeiou"]
    vocabulary = [syllables[i % 80] + syllables[(i // 80) % 80] + syllables[i // 6400] for i in range(50_000)]
    for rank, word in zip((300, 1500, 6000), QUERY.split(), strict=True):  # as rare as a query's words
        vocabulary[rank] = word
    index = LexicalIndex()
    for first in range(0, count, 20_000):  # batches, as ingestion adds them
        size = min(20_000, count - first)
        ranks = np.minimum(rng.zipf(1.2, size=size * 60), len(vocabulary)) - 1
        words = [vocabulary[r] for r in ranks.tolist()]
        texts = [" ".join(words[n * 60 : (n + 1) * 60]) for n in range(size)]
        ids = [f"docs/part-{(first + n) // 40}/file-{first + n}.md#chunk-{n % 7}" for n in range(size)]
        index.add(ids, texts)
    return index


def save_first_form(index: LexicalIndex, folder: Path) -> None:
    """The index as the first save form held it (version 1), as its writer wrote it."""
    saved = index.saved()
    live = np.ones(len(saved.ids), np.bool_)
    segment = merge(saved.segments, live, np.arange(live.size))
    described, _ = to_arrays(saved)

    def encode(text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)

    arrays = {
        "terms": segment.terms.astype(np.int32),
        "starts": segment.starts.astype(np.int64),
        "rows": segment.absolute_rows,
        "tfs": segment.tfs.astype(np.int32),
        "lengths": np.asarray(saved.lengths, np.int64),
        "ids": encode(json.dumps(saved.ids.live_ids(), ensure_ascii=False)),
        "vocabulary": encode("\n".join(saved.terms.live_ids())),
    }
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    folder.mkdir(parents=True)
    (folder / "lexical-first.npz").write_bytes(buffer.getvalue())
    manifest = {
        "format": "rag-advisors/lexical-index",
        "version": 1,
        **described,
        "data": "lexical-first.npz",
    }
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


def load_and_query(folder: Path) -> tuple[float, list[tuple[str, float]]]:
    started = time.perf_counter()
    hits = LexicalIndex.load(folder).search(QUERY, 10)
    return time.perf_counter() - started, hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,400000", help="comma-separated document counts")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for count in sizes:
            index = build(count, np.random.default_rng(count))
            current, first = Path(scratch) / f"current-{count}", Path(scratch) / f"first-{count}"
            index.save(current)
            save_first_form(index, first)
            times: dict[Path, list[float]] = {current: [], first: []}
            answers = {json.dumps(load_and_query(folder)[1]) for folder in (first, current)}  # warm-up
            for _ in range(args.runs):
                for folder in (first, current):  # alternating, so both see the same load
                    seconds, hits = load_and_query(folder)
                    times[folder].append(seconds)
                    answers.add(json.dumps(hits))
            assert len(answers) == 1, "the two forms answer differently"
            size = sum(p.stat().st_size for p in current.iterdir())
            medians = (statistics.median(times[folder]) for folder in (first, current))
            rows.append((count, index.segment_count, size, *medians))
            print(f"built and timed {count}", file=sys.stderr)
    print(f"load + first query of a saved index (median of {args.runs}), query {QUERY!r}")
    print(f"{'docs':>8} {'segments':>8} {'file MB':>8} {'first form':>11} {'current':>9} {'speed-up':>8}")
    for count, segments, size, old, new in rows:
        timed = f"{old * 1e3:>9.0f}ms {new * 1e3:>7.0f}ms {old / new:>7.1f}x"
        print(f"{count:>8} {segments:>8} {size / 1e6:>8.1f} {timed}")
    (small, *_, old_small, new_small), (large, *_, old_large, new_large) = rows[0], rows[-1]
    print(
        f"load({large}) / load({small}): first form {old_large / old_small:.1f}x, "
        f"current {new_large / new_small:.1f}x (target <= 3x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
