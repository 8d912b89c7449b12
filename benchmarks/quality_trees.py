"""Docs-tree sets for `benchmarks/quality.py`: one page answers each question (see datasets/docs_trees.py,
and datasets/squad_style.py for `squad`, whose questions also carry gold answers).

For each set and embedder the tree goes through the real CLI into a numpy store in a temporary home
(`rag ingest DOCS --store numpy --embedder SPEC`), then per mode (vector, lexical, hybrid at the
weight `rag ingest` recorded, hybrid at each swept weight; hybrid fuses as the CLI does, weighted):
hit@1, hit@4 and nDCG@10 as `rag eval` counts them (the top k chunks, a page counted once); the
held-out `--tune` (fit the mode and weight on half the questions, score the other half, both ways
round); the answer column: how often the offline extractive answerer, given the default search's
top 4 through `QuestionAnswerAdvisor`, quotes the gold page, or for a set with gold answers
(`squad`) how often its answer contains the gold answer, scored by `benchmarks/answers.py` as
`rag eval --answer-with extractive` does (all questions, and the held-out half the answerer was not
tuned on); and the share of questions another page outwords (it holds every question term, the gold
page does not), which words alone cannot rank right. With `--bm25s`, the lexical row per page (pages
ranked by their best chunk) is put beside bm25s over whole pages with the set's Snowball stemmer and
stop words.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.cli._common import open_store
from rag.config import DEFAULT_FUSION, Settings
from rag.documents import SearchRequest
from rag.eval import QueryEmbeddingCache, QuestionSet, evaluate, load_questions
from rag.eval.tune import tune
from rag.vectorstore import VectorStore

LANGUAGE = {"cmake": "en", "man-en": "en", "man-de": "de", "man-fr": "fr", "squad": "en"}
TARGETS = {"hit@1": 0.85, "hit@4": 0.95}
CONTAINED_TARGET = 0.90  # the gold answer in the extractive answer, held-out half
_DEPTH = 100


@dataclass
class TreeRun:
    dataset: str
    spec: str
    weight: float
    questions: int = 0
    chunks: int = 0
    rows: dict[str, dict[str, float]] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)
    answered: float = 0.0
    contained: dict[str, float] = field(default_factory=dict)
    per_page: dict[str, float] = field(default_factory=dict)
    outworded: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)


def _scores(store: VectorStore, questions: QuestionSet, request: SearchRequest) -> dict[str, float]:
    rows = {
        r.top_k: r.metrics for r in evaluate(store, questions, top_k=[1, 4, 10], search_request=request).rows
    }
    return {"hit@1": rows[1]["hit_rate"], "hit@4": rows[4]["hit_rate"], "ndcg@10": rows[10]["ndcg"]}


def _held_out(
    store: VectorStore, questions: QuestionSet, base: SearchRequest, weights: list[float]
) -> dict[str, Any]:
    """Fit (mode, weight) on one half by nDCG@10, score it on the other; both folds averaged."""
    items = list(questions)
    halves = [QuestionSet(tuple(items[0::2])), QuestionSet(tuple(items[1::2]))]
    got: dict[str, Any] = {"tuned": 0.0, "default": 0.0, "picks": []}
    for train, test in ((halves[0], halves[1]), (halves[1], halves[0])):
        chosen = tune(store, train, top_k=10, weights=weights, search_request=base).best
        swept = tune(store, test, top_k=10, weights=weights, search_request=base)
        scored = {row.label: row.metrics["ndcg"] for row in swept.rows}
        got["tuned"] += scored[chosen.label] / 2
        got["default"] += scored[f"hybrid {base.vector_weight:g}"] / 2
        got["picks"].append(chosen.label)
    return got


def _answered(store: VectorStore, questions: QuestionSet, request: SearchRequest) -> float:
    """Share of questions whose extractive answer (top 4 of `request`) quotes the gold page."""
    from rag.advisors import QuestionAnswerAdvisor
    from rag.client import ChatClient
    from rag.eval.answers import cites_source
    from rag.models import ExtractiveChatModel

    client = ChatClient(
        ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store, search_request=request)]
    )
    quoted = 0
    for question in questions:
        response = client.prompt(question.text).call().response()
        gold = [str(label.key[0]) for label in question.relevant]
        quoted += any(cites_source(response.text or "", response.documents, name) for name in gold)
    return quoted / len(questions)


def _contained(answers: Any, store: VectorStore, folder: Path, request: SearchRequest) -> dict[str, float]:
    """How often the extractive answer (top 4 of `request`) contains the first gold answer, as
    `rag eval` scores it, over all questions and the held-out half; also any gold answer (as SQuAD
    counts) and a gold answer in the passages read. `answers` is benchmarks/answers.py."""
    questions = load_questions(folder / "questions.jsonl")
    golds = answers.gold_answers(folder / "questions.jsonl")
    scored = [row for _, row in answers.score_answers(store, request.replace(top_k=4), questions, golds)]
    split = {name: answers.mean(rows) for name, rows in answers.halves(scored).items()}
    return {
        "all": split["all"]["contains"],
        "held-out": split["held-out"]["contains"],
        "any gold": split["all"]["any gold"],
        "in ctx": split["all"]["in ctx"],
    }


def _per_page_lexical(store: VectorStore, questions: QuestionSet) -> float:
    """nDCG@10 of pages ranked by their best chunk, lexical mode (one relevant page per question)."""
    total = 0.0
    for question in questions:
        gold = {label.key[0] for label in question.relevant}
        hits = store.similarity_search(SearchRequest(question.text, top_k=_DEPTH, mode="lexical"))
        pages = list(dict.fromkeys(str(d.metadata.get("source")) for d in hits))[:10]
        total += next((1 / math.log2(rank + 2) for rank, page in enumerate(pages) if page in gold), 0.0)
    return total / len(questions)


def _outworded(store: VectorStore, questions: QuestionSet, language: str) -> float:
    """Share of questions where the gold page lacks some of the question's terms (text, title, headings,
    path, as the lexical index analyses them) that another page holds all of: there, words alone rank
    another page first, and only other evidence (a better embedder) can lift the gold page."""
    from stores.lexical.fields import field_text
    from stores.lexical.text import analyze

    pages: dict[str, set[str]] = {}
    for doc in store.get():
        terms = analyze(doc.text + "\n" + field_text(doc.metadata), language)
        pages.setdefault(str(doc.metadata.get("source")), set()).update(terms)
    count = 0
    for question in questions:
        wanted = set(analyze(question.text, language))
        gold = {str(label.key[0]) for label in question.relevant}
        lacking = all(not wanted <= pages.get(page, set()) for page in gold)
        count += lacking and any(wanted <= terms for page, terms in pages.items() if page not in gold)
    return count / len(questions)


def _bm25s(folder: Path, questions: QuestionSet, language: str) -> float:
    """nDCG@10 of bm25s over whole pages, with the language's Snowball stemmer and stop words."""
    import bm25s
    import Stemmer

    names = {"en": "english", "de": "german", "fr": "french"}
    pages = sorted(p for p in (folder / "docs").rglob("*") if p.is_file())
    sources = [p.relative_to(folder / "docs").as_posix() for p in pages]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages]
    stemmer = Stemmer.Stemmer(names[language])
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords=language, stemmer=stemmer, show_progress=False), show_progress=False
    )
    total = 0.0
    for question in questions:
        gold = {label.key[0] for label in question.relevant}
        tokens = bm25s.tokenize([question.text], stopwords=language, stemmer=stemmer, show_progress=False)
        found, _ = retriever.retrieve(tokens, k=10, show_progress=False)
        ranked = [sources[i] for i in found[0].tolist()]
        total += next((1 / math.log2(rank + 2) for rank, page in enumerate(ranked) if page in gold), 0.0)
    return total / len(questions)


def measure_tree(
    dataset: str,
    folder: Path,
    spec: str,
    weight: float | None,
    weights: list[float],
    rag: Any,
    bm25s: bool,
    fusion: str = DEFAULT_FUSION,
    answers: Any = None,
) -> TreeRun:
    """Ingest the tree with `spec`, then every row; `weight` None: the weight `rag ingest` recorded.

    With `answers` (benchmarks/answers.py, for a set whose questions carry gold answers) the answer
    column is the gold answer contained, else the gold page quoted."""
    run = TreeRun(dataset, spec, 0.0)
    questions = load_questions(folder / "questions.jsonl")
    run.questions = len(questions)
    with tempfile.TemporaryDirectory(prefix="rag-quality-tree-") as tmp:
        home = Path(tmp)
        started = time.perf_counter()
        rag(home, "ingest", str(folder / "docs"), "--store", "numpy", "--embedder", spec)
        run.seconds["ingest"] = time.perf_counter() - started
        opened = open_store(
            Settings.from_env({"RAG_HOME": str(home), "RAG_STORE": "numpy"}), wrap_model=QueryEmbeddingCache
        )
        try:
            store = opened.store
            run.chunks = store.count()
            run.weight = opened.settings.vector_weight if weight is None else weight
            base = SearchRequest("defaults", mode="hybrid", fusion=fusion, vector_weight=run.weight)
            started = time.perf_counter()
            labels = [("vector", base.replace(mode="vector")), ("lexical", base.replace(mode="lexical"))]
            labels.append(("hybrid", base))
            labels += [(f"hybrid {w:g}", base.replace(vector_weight=w)) for w in weights]
            for label, request in labels:
                run.rows[label] = _scores(store, questions, request)
            run.seconds["search"] = time.perf_counter() - started
            run.held_out = _held_out(store, questions, base, sorted({*weights, run.weight}))
            started = time.perf_counter()
            if answers is None:
                run.answered = _answered(store, questions, base)
            else:
                run.contained = _contained(answers, store, folder, base)
            run.seconds["answers"] = time.perf_counter() - started
            run.outworded = _outworded(store, questions, LANGUAGE[dataset])
            if bm25s:
                run.per_page["lexical"] = _per_page_lexical(store, questions)
                run.per_page["bm25s"] = _bm25s(folder, questions, LANGUAGE[dataset])
        finally:
            opened.close()
    return run


def print_tree(run: TreeRun) -> None:
    kind = "answer set" if run.contained else "docs tree"
    print(
        f"== {run.dataset} ({kind}), embedder {run.spec!r}: {run.questions} questions, "
        f"{run.chunks} chunks; " + ", ".join(f"{k} {v:.0f} s" for k, v in run.seconds.items())
    )
    print(f"{'mode':<18}{'hit@1':>8}{'hit@4':>8}{'nDCG@10':>9}")
    for label, row in run.rows.items():
        shown = f"hybrid {run.weight:g} (default)" if label == "hybrid" else label
        print(f"{shown:<24}"[:18] + f"{row['hit@1']:>8.3f}{row['hit@4']:>8.3f}{row['ndcg@10']:>9.3f}")
    default = run.rows["hybrid"]
    swept = {k: v for k, v in run.rows.items() if k.startswith("hybrid ")}
    if swept:
        best = max(
            swept, key=lambda k: (round(swept[k]["ndcg@10"], 9), -abs(float(k.split()[1]) - run.weight))
        )
        print(
            f"best weight {best.split()[1]} (nDCG@10 {swept[best]['ndcg@10']:.3f}); default {run.weight:g} "
            f"{default['ndcg@10']:.3f}, {swept[best]['ndcg@10'] - default['ndcg@10']:.3f} below"
        )
    h = run.held_out
    print(
        f"held out (2-fold, fit on one half): tuned {h['tuned']:.3f} (picks {', '.join(h['picks'])}), "
        f"default {h['default']:.3f}"
    )
    c = run.contained
    if c:
        print(
            f"answer: the extractive answer contains the gold answer for {c['all']:.1%} of questions "
            f"({c['held-out']:.1%} of the held-out half; any gold answer {c['any gold']:.1%}; a gold "
            f"answer in the passages read {c['in ctx']:.1%})"
        )
    else:
        print(f"answer: the extractive answerer quotes the gold page for {run.answered:.1%} of questions")
    print(
        f"outworded: for {run.outworded:.1%} of questions another page holds every question term and "
        "the gold page does not"
    )
    if c:
        got = c["held-out"]
        print(
            f"target gold answer contained >= {CONTAINED_TARGET:.0%} (held-out half): {got:.1%}, "
            f"{'met' if got >= CONTAINED_TARGET else 'NOT met'}"
        )
    else:  # the page targets are the docs-tree sets'
        for metric, target in TARGETS.items():
            got = default[metric]
            print(f"target {metric} >= {target:.0%}: {got:.1%}, {'met' if got >= target else 'NOT met'}")
    if run.per_page:
        lex, ref = run.per_page["lexical"], run.per_page["bm25s"]
        print(
            f"lexical per page nDCG@10 {lex:.3f} vs bm25s ({LANGUAGE[run.dataset]} stemmer) {ref:.3f}: "
            f"{'met' if lex >= ref - 1e-9 else 'NOT met'}"
        )
    print()
    sys.stdout.flush()
