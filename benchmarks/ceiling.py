"""How far words can take each docs-tree set: the share of questions whose gold page another page
outwords, and the hit@1 / hit@4 that no ranking by which question words a chunk holds can pass.

The docs-tree sets (`benchmarks/datasets/docs_trees.py`) take a page's one-line summary as the
question and remove it from the page. Where the summary repeats what a neighbour says (CMake's
`prop_tgt/X`, `prop_dir/X` and `variable/CMAKE_X` describe one setting three times; a man page and
its configuration file's page share their words), the neighbour keeps every word of the question and
the gold page has lost some. This script counts those questions.

The search ranks chunks and shows a page at its best chunk's rank, so the counting is by chunk too.
Definitions, per question (a page is a file, `source`; the gold page is the one the question names,
the best of them when it names several):

- A chunk's *matched words*: the question's content words (the question analysed as the lexical
  index analyses a query, in the chunk's language, stop words out) that the chunk holds in its text,
  its title and headings or its path (`stores.lexical.fields.field_text`, as the index reads them).
- Another page *dominates* the gold page when one of its chunks holds a strict superset of the
  matched words of every chunk of the gold page (every question word any one gold chunk holds, and
  more). Another page *ties* (column `tied`, counted only where nothing dominates) when one of its
  chunks holds all the matched words of one gold chunk.
- The *word-set bound*: any ranking that scores a chunk by which question words it holds, giving
  more to a chunk holding more of them (with any positive weight per word, idf or other), and a page
  by its best chunk, ranks every dominating page above the gold page. So the gold page cannot be
  first when one page dominates it, nor in the top 4 when four do, nor be found when no chunk of it
  holds a question word. `bound hit@1` is the share of questions where some gold chunk holds a
  question word and no page dominates (ties counted as won); `bound hit@4` the share where some gold
  chunk holds one and fewer than four pages dominate.

The bound is exact for that class of rankings, not for every ranking: BM25 also weighs how often a
word occurs and how long the chunk is, and the vectors add their own evidence, so the shipped search
can still rank a dominated gold page first. The last columns show how often it does: the offline
default's hit@1 / hit@4 (as `rag eval` counts: the top 1 and 4 chunks, a page counted once) on all
questions, and on the questions the bound rules out (for hit@4: those with four dominating pages or
no matched word). `gold has all` is the share of questions whose gold page holds every content word
somewhere; `gold has none`, where no gold chunk holds any.

Usage:
    python benchmarks/ceiling.py [--sets cmake,man-en,man-de,man-fr] [--trees PATH] [--embedder SPEC]
        [--homes DIR] [--show N]

Each set is built on first use into --trees (as `benchmarks/quality.py` does) and ingested through
the real CLI into a numpy store in a temporary home, or read from `DIR/SET` with `--homes` (a numpy
home ingested from that tree, with any embedder: MiniLM's take minutes to build). `--show N` prints
N dominated questions per set with the gold page and a page that dominates it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag.cli._common import open_store  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.eval import Question, load_questions, score_ranking  # noqa: E402
from rag.eval.metrics import units_of  # noqa: E402
from rag.vectorstore import VectorStore  # noqa: E402
from stores.lexical.fields import field_text  # noqa: E402
from stores.lexical.text import analyze, query_terms  # noqa: E402

TREE_SETS = ("cmake", "man-en", "man-de", "man-fr")
TREES = Path(tempfile.gettempdir()) / "rag-bench" / "trees"
Pages = dict[str, list[tuple[str, frozenset[str]]]]  # source -> (language, terms) of each chunk


@dataclass
class Ceiling:
    """What one set measured (counts of questions)."""

    dataset: str
    questions: int = 0
    chunks: int = 0
    pages: int = 0
    gold_all: int = 0  # the gold page holds every content word of the question
    gold_none: int = 0  # the gold page holds none
    dominated: int = 0  # the gold page holds some, and another page dominates it
    dominated4: int = 0  # ... four pages or more
    tied: int = 0  # no page dominates it, one or more tie with it
    default: dict[str, float] = field(default_factory=dict)  # hit@1, hit@4 on all questions
    beaten: dict[str, float] = field(default_factory=dict)  # hit@k on the questions the bound rules out
    examples: list[tuple[str, str, str]] = field(default_factory=list)


def page_terms(store: VectorStore) -> Pages:
    """Each page's chunks: their language and terms (text and names field, analysed in that language)."""
    pages: Pages = {}
    for doc in store.get():
        language = str(doc.metadata.get("lang") or "und")
        terms = frozenset(analyze(doc.text + "\n" + field_text(doc.metadata), language))
        pages.setdefault(str(doc.metadata.get("source")), []).append((language, terms))
    return pages


def matched_words(pages: Pages, text: str) -> dict[str, set[frozenset[int]]]:
    """For each page, the distinct matched-word sets of its chunks: the positions of the question's
    words (as `query_terms` lists them, the same in every language) whose term the chunk holds."""
    languages = {language for chunks in pages.values() for language, _ in chunks}
    asked = {language: list(enumerate(query_terms(text, language))) for language in languages}
    return {
        source: {
            frozenset(at for at, term in asked[language] if term is not None and term in terms)
            for language, terms in chunks
        }
        for source, chunks in pages.items()
    }


def content_words(pages: Pages, text: str) -> frozenset[int]:
    """The positions of the question's content words: not a stop word in some page's language."""
    languages = {language for chunks in pages.values() for language, _ in chunks}
    return frozenset(
        at
        for language in languages
        for at, term in enumerate(query_terms(text, language))
        if term is not None
    )


def dominators(
    matched: Mapping[str, set[frozenset[int]]], gold: str, golds: set[str]
) -> tuple[list[str], int]:
    """The other pages with a chunk whose matched words strictly contain those of every chunk of the
    gold page, and how many others (none of them dominating) have a chunk holding all the words of one
    of the gold page's chunks (a tie at best)."""
    own = [words for words in matched[gold] if words]
    over: list[str] = []
    ties = 0
    for page, sets in matched.items():
        if page in golds:
            continue
        if any(all(words > mine for mine in own) for words in sets):
            over.append(page)
        elif any(words >= mine for words in sets for mine in own):
            ties += 1
    return over, ties


class Verdict(NamedTuple):
    """One question's standing: its gold page, the pages dominating it, how many tie with it."""

    gold: str
    dominating: list[str]
    ties: int
    holds_all: bool  # the gold page holds every content word of the question
    holds_none: bool  # no chunk of the gold page holds any


def classify(pages: Pages, question: Question) -> Verdict:
    """The verdict for the gold page with the fewest pages dominating it (a question may name several)."""
    golds = {str(label.key[0]) for label in question.relevant}
    matched = matched_words(pages, question.text)
    for gold in golds:
        matched.setdefault(gold, set())
    gold, (over, ties) = min(
        ((g, dominators(matched, g, golds)) for g in sorted(golds)), key=lambda pair: len(pair[1][0])
    )
    held = frozenset[int]().union(*matched[gold])
    return Verdict(gold, over, ties, held >= content_words(pages, question.text), not held)


def _hits(store: VectorStore, settings: Settings, question: Question) -> dict[str, float]:
    """hit@1 and hit@4 of the offline default for one question, as `rag eval` counts them."""
    qrels = question.qrels()
    hits = store.similarity_search(settings.search_request().replace(query=question.text, top_k=4))
    return {f"hit@{k}": score_ranking(units_of(hits[:k], qrels), qrels, k)["hit_rate"] for k in (1, 4)}


def count(
    dataset: str, store: VectorStore, settings: Settings, questions: Sequence[Question], show: int
) -> Ceiling:
    """Classify every question over `store`, and score the default search (`settings`) beside it."""
    got = Ceiling(dataset, chunks=store.count())
    pages = page_terms(store)
    got.pages = len(pages)
    totals = {"hit@1": 0.0, "hit@4": 0.0}
    ruled_out = {"hit@1": [0.0, 0.0], "hit@4": [0.0, 0.0]}  # hits, questions
    for question in questions:
        verdict = classify(pages, question)
        found = 0 if verdict.holds_none else len(verdict.dominating)  # pages dominating
        got.questions += 1
        got.gold_all += verdict.holds_all
        got.gold_none += verdict.holds_none
        got.dominated += found >= 1
        got.dominated4 += found >= 4
        got.tied += not verdict.holds_none and found == 0 and verdict.ties > 0
        if found and len(got.examples) < show:
            got.examples.append((question.text, verdict.gold, verdict.dominating[0]))
        for metric, value in _hits(store, settings, question).items():
            totals[metric] += value
            if verdict.holds_none or found >= (1 if metric == "hit@1" else 4):
                ruled_out[metric][0] += value
                ruled_out[metric][1] += 1
    got.default = {metric: value / got.questions for metric, value in totals.items()}
    got.beaten = {metric: won / max(asked, 1) for metric, (won, asked) in ruled_out.items()}
    return got


def measure(folder: Path, home: Path, show: int) -> Ceiling:
    """Count the questions of the tree in `folder` over the numpy store in `home`, ingested from it."""
    opened = open_store(Settings.from_env({"RAG_HOME": str(home), "RAG_STORE": "numpy"}))
    try:
        questions = list(load_questions(folder / "questions.jsonl"))
        return count(folder.name, opened.store, opened.settings, questions, show)
    finally:
        opened.close()


def _share(count: int, run: Ceiling) -> str:
    return f"{count / run.questions:.1%}"


def print_table(results: Sequence[Ceiling]) -> None:
    header = (
        f"{'set':<8}{'questions':>10}{'pages':>7}{'gold has all':>13}{'gold has none':>14}"
        f"{'dominated':>10}{'by 4+':>7}{'tied':>7}{'bound hit@1':>12}{'bound hit@4':>12}"
        f"{'default hit@1/@4':>18}{'on ruled out @1/@4':>20}"
    )
    print(header)
    for run in results:
        bound1 = 1 - (run.gold_none + run.dominated) / run.questions
        bound4 = 1 - (run.gold_none + run.dominated4) / run.questions
        print(
            f"{run.dataset:<8}{run.questions:>10}{run.pages:>7}{_share(run.gold_all, run):>13}"
            f"{_share(run.gold_none, run):>14}{_share(run.dominated, run):>10}"
            f"{_share(run.dominated4, run):>7}"
            f"{_share(run.tied, run):>7}{bound1:>12.3f}{bound4:>12.3f}"
            f"{run.default['hit@1']:>11.3f} / {run.default['hit@4']:.3f}"
            f"{run.beaten['hit@1']:>13.3f} / {run.beaten['hit@4']:.3f}"
        )
    print("targets: hit@1 >= 0.85, hit@4 >= 0.95 (issue 27)")
    for run in results:
        for text, gold, over in run.examples:
            print(f"{run.dataset}: {text!r}\n    gold {gold}, dominated by {over}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default=",".join(TREE_SETS), help="docs-tree sets, comma-separated")
    parser.add_argument("--trees", type=Path, default=TREES, help="folder of the docs-tree sets")
    parser.add_argument("--embedder", default="hashing", help="embedder spec of the default search")
    parser.add_argument("--homes", type=Path, help="reuse numpy homes HOMES/SET ingested from each tree")
    parser.add_argument("--show", type=int, default=0, help="dominated questions to print per set")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    unknown = [name for name in names if name not in TREE_SETS]
    if unknown:
        print(f"error: unknown set(s) {unknown!r}; known: {', '.join(TREE_SETS)}", file=sys.stderr)
        return 2
    quality = _module("quality", _HERE / "quality.py")
    building = quality._module("docs_trees", _HERE / "datasets" / "docs_trees.py")
    results = []
    for name in names:
        folder = building.ensure(name, args.trees / name)
        if args.homes is not None:
            results.append(measure(folder, args.homes / name, args.show))
            continue
        with tempfile.TemporaryDirectory(prefix="rag-ceiling-") as home:
            quality._rag(
                Path(home), "ingest", str(folder / "docs"), "--store", "numpy", "--embedder", args.embedder
            )
            results.append(measure(folder, Path(home), args.show))
    print(f"embedder {args.embedder if args.homes is None else 'of the homes in ' + str(args.homes)}")
    print_table(results)
    return 0


def _module(name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
