"""The offline extractive answerer on a SQuAD-style set: is the gold answer in what a user reads?

The set (`benchmarks/datasets/squad_style.py`, built on first use into --set): 48 Wikipedia articles
of SQuAD v1.1's development set as a docs folder of Markdown pages, and a fixed-seed sample of its
questions with their gold answer spans. The folder goes through the real CLI into a temporary home
with the defaults (`rag ingest DOCS --store numpy`: the offline embedder, hybrid search), then:

- `rag eval questions.jsonl --top-k 4 --answer-with extractive --json` (the real CLI): hit@4 of the
  gold page, `answer_contains` and `answer_f1` against each question's first gold answer;
- the same search and the same prompt through the Python API `rag eval` uses (`SearchRequest` from the
  home's settings, the `DocumentsView` that widens each hit by its neighbouring chunks as `rag ask`
  does, `AnswerScorer(ExtractiveChatModel())`), per question, to split the set in halves:
  the **tuning half** (questions at even 0-based positions of questions.jsonl: lines 1, 3, 5, ...) on
  which answerer changes are chosen, and the **held-out half** (lines 2, 4, 6, ...) reported as is.

Columns: `hit@4` (the gold page among the 4 passages), `in ctx` (a gold answer occurs in those
passages: the most an extractive answer can contain), `contains` (the first gold answer occurs in the
answer, as `rag eval` scores it), `any gold` (one of the gold answers does, as SQuAD's evaluation
counts), `F1` (SQuAD token F1 against the first gold), `words` (mean words quoted: the answer without
its heading line and its `[source]` tags) and `no ans` (share answered "I cannot answer").

Usage:
    python benchmarks/answers.py [--set /tmp/rag-bench/squad] [--sample 400] [--sdist FILE]
        [--misses N]

`--misses N` prints N questions of the tuning half whose answer lacks every gold answer although a
passage holds one, with the answer given and the passages' sentence holding a gold answer.
Target: `contains` >= 0.90 on the held-out half.

`benchmarks/quality.py --sets squad` scores its answer column with this module's `score_answers`,
`halves` and `mean`, at the search it measures (the set's default, or `--vector-weight`/`--fusion`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag.cli._common import open_store  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.documents import SearchRequest  # noqa: E402
from rag.eval import (  # noqa: E402
    AnswerScorer,
    QueryEmbeddingCache,
    QuestionSet,
    answer_contains,
    load_questions,
    token_f1,
)
from rag.models import ExtractiveChatModel  # noqa: E402
from rag.retrieval.documents_view import DocumentsView  # noqa: E402
from rag.retrieval.windows import ANSWER_WINDOW  # noqa: E402
from rag.vectorstore import VectorStore  # noqa: E402

_ROOT = _HERE.parent
SET = Path(tempfile.gettempdir()) / "rag-bench" / "squad"
TOP_K = 4  # what `rag ask` retrieves by default
TARGET = 0.90
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TAG = re.compile(r"\s*\[[^\[\]\n]+\]\s*$")
COLUMNS = ("hit@4", "in ctx", "contains", "any gold", "F1", "words", "no ans")


@dataclass(frozen=True)
class Scored:
    """One question's figures (see the module docstring for the columns)."""

    hit: float
    in_context: float
    contains: float
    any_gold: float
    f1: float
    words: int
    unanswered: float


def _script(name: str, path: Path) -> ModuleType:
    """Load a script beside this one (benchmarks/ is kept off the import path, see above)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _dataset_module() -> ModuleType:
    return _script("squad_style", _HERE / "datasets" / "squad_style.py")


def _rag(home: Path, *args: str) -> str:
    """Run the real `rag` CLI on `home` as `benchmarks/quality.py` runs it; its stdout."""
    quality = sys.modules.get("quality") or _script("quality", _HERE / "quality.py")
    return quality._rag(home, *args)  # type: ignore[no-any-return]


def quoted_words(answer: str) -> int:
    """Words a user reads as the answer: its lines after the heading, without `[source]` tags."""
    return sum(len(_TAG.sub("", line).lstrip("- ").split()) for line in answer.splitlines()[1:])


def mean(rows: list[Scored]) -> dict[str, float]:
    """Each column's mean over `rows` (0 for none)."""
    n = max(len(rows), 1)
    fields = ("hit", "in_context", "contains", "any_gold", "f1", "words", "unanswered")
    return {c: sum(getattr(r, f) for r in rows) / n for c, f in zip(COLUMNS, fields, strict=True)}


def gold_answers(path: Path) -> dict[str, list[str]]:
    """Every gold answer of each question in a questions.jsonl, by id (`answers`, else `answer`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {r["id"]: r.get("answers") or [r["answer"]] for r in map(json.loads, filter(str.strip, lines))}


def score_answers(
    store: VectorStore, request: SearchRequest, questions: QuestionSet, golds: Mapping[str, list[str]]
) -> Iterator[tuple[str, Scored]]:
    """Each question's extractive answer from `request`'s top hits, as `rag eval` and `rag ask` read them
    (each page once, each hit widened by its neighbouring chunks), with its figures."""
    view = DocumentsView(store, window=ANSWER_WINDOW)
    scorer = AnswerScorer(ExtractiveChatModel())
    for question in questions:
        hits = view.similarity_search(request.replace(query=question.text))
        answer = scorer.answer(question.text, hits)
        gold = question.answer or ""
        pages = {str(d.metadata.get("source")) for d in hits}
        passages = " ".join(d.text for d in hits)
        yield (
            answer,
            Scored(
                hit=float(any(r.source in pages for r in question.relevant)),
                in_context=max(answer_contains(passages, g) for g in golds[question.id]),
                contains=answer_contains(answer, gold),
                any_gold=max(answer_contains(answer, g) for g in golds[question.id]),
                f1=token_f1(answer, gold),
                words=quoted_words(answer),
                unanswered=float(answer.startswith("I cannot answer")),
            ),
        )


def gold_sentence(text: str, golds: list[str]) -> str:
    """The first sentence of `text` (cut after ". ", "! " or "? ") holding one of `golds`, else ""."""
    found = (s for s in _SENTENCE_END.split(text) if any(answer_contains(s, g) for g in golds))
    return next(found, "")


def halves(rows: list[Scored]) -> dict[str, list[Scored]]:
    """`rows` (in questions.jsonl order) as all, the tuning half (even 0-based positions) and the
    held-out half (odd ones)."""
    return {"all": rows, "tuning": rows[0::2], "held-out": rows[1::2]}


def measure(folder: Path, misses: int) -> tuple[dict[str, Any], dict[str, list[Scored]]]:
    """Ingest and evaluate through the CLI, then per question through the Python API."""
    questions = load_questions(folder / "questions.jsonl")
    golds = gold_answers(folder / "questions.jsonl")
    with tempfile.TemporaryDirectory(prefix="rag-answers-") as tmp:
        home = Path(tmp)
        _rag(home, "ingest", str(folder / "docs"), "--store", "numpy")
        cli = json.loads(
            _rag(
                home,
                "eval",
                str(folder / "questions.jsonl"),
                "--store",
                "numpy",
                "--top-k",
                str(TOP_K),
                "--answer-with",
                "extractive",
                "--json",
            )
        )
        opened = open_store(
            Settings.from_env({"RAG_HOME": str(home), "RAG_STORE": "numpy"}), wrap_model=QueryEmbeddingCache
        )
        try:
            request = opened.settings.search_request(top_k=TOP_K)
            rows: list[Scored] = []
            shown = 0
            scored = score_answers(opened.store, request, questions, golds)
            for position, (question, (answer, row)) in enumerate(zip(questions, scored, strict=True)):
                rows.append(row)
                if position % 2 == 0 and shown < misses and row.in_context and not row.any_gold:
                    shown += 1
                    hits = DocumentsView(opened.store, window=ANSWER_WINDOW).similarity_search(
                        request.replace(query=question.text)
                    )
                    held = gold_sentence(" ".join(d.text for d in hits), golds[question.id])
                    print(
                        f"--- miss: {question.text}\n    gold: {golds[question.id]}\n{answer}\n"
                        f"    gold sentence: {held}\n"
                    )
        finally:
            opened.close()
    return cli, halves(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", type=Path, default=SET, help="the built set (built here when absent)")
    parser.add_argument("--sample", type=int, default=400, help="questions, when building the set")
    parser.add_argument("--sdist", type=Path, help="a downloaded bigbench-1.0.0.tar.gz, when building")
    parser.add_argument("--misses", type=int, default=0, help="print N misses of the tuning half")
    args = parser.parse_args(argv)
    folder = _dataset_module().ensure(args.set, args.sample, args.sdist)
    cli, split = measure(folder, args.misses)
    row = cli["settings"][0]
    print(
        f"rag eval (CLI, {row.get('mode', '')} top {TOP_K}, {row['questions']} questions): "
        f"hit@4 {row['hit_rate']:.3f}, answer_contains {row['answer_contains']:.3f}, "
        f"answer_f1 {row['answer_f1']:.3f}"
    )
    print(f"{'questions':<18}{'n':>5}" + "".join(f"{c:>10}" for c in COLUMNS))
    for name, rows in split.items():
        means = mean(rows)
        cells = "".join(f"{means[c]:>10.1f}" if c == "words" else f"{means[c]:>10.3f}" for c in COLUMNS)
        print(f"{name:<18}{len(rows):>5}{cells}")
    got = mean(split["held-out"])["contains"]
    print(
        f"target contains >= {TARGET:.2f} (held-out half): {got:.3f}, {'met' if got >= TARGET else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
