"""What telling copies apart costs: `NearDuplicateFilter` with a store, on hits from a very large page.

A synthetic docs tree in a temporary folder: N small Markdown pages (four sections each) and `all.md`,
which concatenates them all, as Node's `all.html` repeats every page of its API docs; ingested into a
numpy store through `IngestPipeline`. For each query (a section of a random page, searched hybrid,
12 hits: what `rag query --top-k 4` filters) it times `NearDuplicateFilter(store=...).process` and the
whole-page comparison it replaces (kept below for this comparison only: every chunk of both pages read
and their word pairs compared), side by side in one process, and checks that both keep the same hits.
Medians over the queries; `ratio` is whole-page time over window time.

    python benchmarks/near_duplicates.py [--pages 50,200,800] [--queries 30]
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from ingest.pipeline import IngestPipeline  # noqa: E402
from ingest.splitters import RecursiveSplitter  # noqa: E402
from rag import Document, HashingEmbedding, SearchRequest  # noqa: E402
from rag.filters import Filter, key  # noqa: E402
from rag.retrieval import NearDuplicateFilter  # noqa: E402
from rag.retrieval.stages import Query  # noqa: E402
from stores import NumpyVectorStore  # noqa: E402

_WORD = re.compile(r"\w+")
_Pairs = frozenset[tuple[str, ...]]
_Page = tuple[str, str | None, str | None]


def _pairs(text: str) -> _Pairs:
    words = _WORD.findall(text.casefold())
    return frozenset((w,) for w in words) if len(words) < 2 else frozenset(itertools.pairwise(words))


def _page(document: Document) -> _Page | None:
    meta = document.metadata
    if meta.get("source") is None:
        return None
    root, record = meta.get("root"), meta.get("doc_id")
    return str(meta["source"]), None if root is None else str(root), None if record is None else str(record)


def _page_filter(page: _Page) -> Filter:
    tree: Filter = key("source") == page[0]
    if page[1] is not None:
        tree = tree & (key("root") == page[1])
    if page[2] is not None:
        tree = tree & (key("doc_id") == page[2])
    return tree


def whole_pages(
    store: NumpyVectorStore, documents: Sequence[Document], threshold: float = 0.9
) -> list[Document]:
    """The comparison of whole pages: both pages read in full, their word pairs' containment."""
    pairs = [_pairs(d.text) for d in documents]
    pages = [_page(d) for d in documents]

    def similar(a: _Pairs, b: _Pairs) -> bool:
        return a == b if not a or not b else len(a & b) / len(a | b) >= threshold

    near = {(i, j) for j in range(len(documents)) for i in range(j) if similar(pairs[i], pairs[j])}
    wanted = sorted({p for i, j in near if pages[i] != pages[j] for p in (pages[i], pages[j]) if p}, key=repr)
    whole: dict[_Page | None, _Pairs] = {}
    if wanted:
        tree = _page_filter(wanted[0])
        for page in wanted[1:]:
            tree = tree | _page_filter(page)
        chunks: dict[_Page | None, list[Document]] = {page: [] for page in wanted}
        for chunk in store.get(filter=tree):
            chunks.setdefault(_page(chunk), []).append(chunk)
        for page in wanted:
            ordered = sorted(chunks[page], key=lambda c: (c.metadata.get("chunk_index", 0), c.id))
            whole[page] = _pairs("\n\n".join(c.text for c in ordered))

    def copies(i: int, j: int) -> bool:
        if pages[i] == pages[j]:
            return True
        a, b = whole.get(pages[i]), whole.get(pages[j])
        if a is None or b is None:
            return False
        return a == b if not a or not b else len(a & b) / min(len(a), len(b)) >= threshold

    kept: list[int] = []
    for j in range(len(documents)):
        if not any((i, j) in near and copies(i, j) for i in kept):
            kept.append(j)
    return [documents[j] for j in kept]


def _tree(folder: Path, pages: int, rng: random.Random) -> list[str]:
    """`pages` pages of four sections and `all.md` holding them all; returns each section's text."""
    words = [f"w{i}" for i in range(3000)]
    sections: list[str] = []
    texts: list[str] = []
    for p in range(pages):
        body = []
        for s in range(4):
            paragraphs = [" ".join(rng.choices(words, k=rng.randint(30, 90))) + "." for _ in range(2)]
            body.append(f"## Section {p}.{s}\n\n" + "\n\n".join(paragraphs))
            sections.append(paragraphs[0])
        texts.append(f"# Page {p}\n\n" + "\n\n".join(body))
        (folder / f"page{p:04d}.md").write_text(texts[-1], encoding="utf-8")
    (folder / "all.md").write_text("\n\n".join(texts), encoding="utf-8")
    return sections


def _timed(func: Callable[[], list[Document]]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    kept = func()
    return time.perf_counter() - start, [d.id for d in kept]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", default="50,200,800", help="comma-separated page counts")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args(argv)
    print(f"{'pages':>6}{'all.md chunks':>15}{'hits':>6}{'whole ms':>10}{'window ms':>11}{'ratio':>8}  same")
    for pages in (int(n) for n in args.pages.split(",")):
        rng = random.Random(pages)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "docs"
            folder.mkdir()
            sections = _tree(folder, pages, rng)
            store = NumpyVectorStore(HashingEmbedding())
            IngestPipeline(store, RecursiveSplitter()).run([folder])
            runs = []
            for text in rng.sample(sections, min(args.queries, len(sections))):
                hits = store.similarity_search(SearchRequest(text, top_k=12, mode="hybrid"))
                runs.append((Query(text), hits))
            window = NearDuplicateFilter(store=store)
            whole_s, window_s, same = [], [], 0
            for query, hits in runs:  # one after the other on each query, so both meet the same caches
                whole_t, whole_kept = _timed(partial(whole_pages, store, hits))
                window_t, window_kept = _timed(partial(window.process, query, hits))
                whole_s.append(whole_t)
                window_s.append(window_t)
                same += whole_kept == window_kept
            whole_ms, window_ms = statistics.median(whole_s) * 1000, statistics.median(window_s) * 1000
            big = store.count(key("source") == "all.md")
            print(
                f"{pages:>6}{big:>15}{len(runs[0][1]):>6}{whole_ms:>10.1f}{window_ms:>11.1f}"
                f"{whole_ms / window_ms:>8.1f}  {same}/{len(runs)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
