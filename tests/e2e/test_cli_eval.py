"""`rag eval` through the real entry point: the sample corpus, a BEIR folder, and usage errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from rag.config import DEFAULT_SEARCH_MODE

DATA = Path(__file__).resolve().parents[2] / "data"
Cli = Callable[..., Result]


def test_eval_sample_questions_after_ingest(cli: Cli, tmp_path: Path) -> None:
    # The exact store answers a search several times faster than Chroma; the default store's eval of the
    # same questions, in every mode, is the README's own `rag eval` command (tests/e2e/test_readme.py).
    assert cli("ingest", DATA / "docs", "--store", "numpy").exit_code == 0
    png, csv = tmp_path / "eval.png", tmp_path / "eval.csv"
    result = cli(
        "eval", DATA / "questions.jsonl", "--store", "numpy", "--top-k", "1,5,10", "--plot", png, "--csv", csv
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["mode", "filter", "thr", "k", "n"]
    assert max(map(len, lines)) <= 100  # short headers, the fewer columns; --wide and --json have all
    # No --filter: no filter, plus each question's own filter (11 of the questions have one).
    assert [line.split()[:4] for line in lines[1:]] == [
        [DEFAULT_SEARCH_MODE, f, "0", k] for f in ("none", "question") for k in ("1", "5", "10")
    ]
    assert all(line.split()[4] == "74" for line in lines[1:])
    # The questions carry gold answers: the offline answerer's answers are scored beside retrieval.
    assert lines[0].split()[-4:] == ["contains", "f1", "cited", "grounded"]
    assert all(0.0 <= float(value) <= 1.0 for line in lines[1:] for value in line.split()[-4:-2])
    assert (
        f"evaluating 74 questions x 2 filter setting(s) x 1 mode(s) ({DEFAULT_SEARCH_MODE})" in result.stderr
    )
    assert png.read_bytes()[:4] == b"\x89PNG" and len(csv.read_text(encoding="utf-8").splitlines()) == 7

    # A sweep of thresholds and filters over the same home.
    result = cli(
        "eval",
        DATA / "questions.jsonl",
        "--store",
        "numpy",
        "-k",
        "3,10",
        "--threshold",
        "0,0.99",
        "--filter",
        "none",
        "--filter",
        "tags CONTAINS 'irrigation'",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["settings"]
    assert [(r["filter"], r["threshold"], r["top_k"]) for r in rows] == [
        (f, t, k) for f in ("none", "tags CONTAINS 'irrigation'") for t in (0.0, 0.99) for k in (3, 10)
    ]
    by_setting = {(r["filter"], r["threshold"], r["top_k"]): r for r in rows}
    # A wide net finds almost every labelled source; a filter on one topic finds few of them.
    assert by_setting[("none", 0.0, 10)]["recall"] > 0.8
    assert by_setting[("tags CONTAINS 'irrigation'", 0.0, 10)]["recall"] < 0.3
    assert by_setting[("none", 0.99, 10)]["recall"] < by_setting[("none", 0.0, 10)]["recall"]


def test_eval_beir_folder(cli: Cli, tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Tides", "text": "Spring tides flood the causeway twice a month."},
        {"_id": "d2", "title": "Lamps", "text": "The beacon lamp burns whale oil in old towers."},
        {"_id": "d3", "title": "Keepers", "text": "Keepers rotate every fortnight and log fog signals."},
    ]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    queries = [{"_id": "1", "text": "when do tides flood the causeway"}, {"_id": "2", "text": "unjudged"}]
    (beir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n", encoding="utf-8")
    ingested = cli(
        "ingest", beir / "corpus.jsonl", "--id-field", "_id", "--text-field", "title,text", "--store", "numpy"
    )
    assert ingested.exit_code == 0, ingested.stderr
    result = cli("eval", beir, "--store", "numpy", "--top-k", "1,3", "--json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["settings"]
    assert [(r["top_k"], r["questions"], r["recall"], r["ndcg"]) for r in rows] == [
        (1, 1, 1.0, 1.0),
        (3, 1, 1.0, 1.0),
    ]


def test_eval_beir_folder_whose_qrels_judge_absent_queries(cli: Cli, tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "Tides", "text": "Spring tides flood the causeway twice a month."}]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "tides causeway"}) + "\n", "utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n404\td1\t1\n", "utf-8")
    ingested = cli(
        "ingest", beir / "corpus.jsonl", "--id-field", "_id", "--text-field", "title,text", "--store", "numpy"
    )
    assert ingested.exit_code == 0, ingested.stderr
    result = cli("eval", beir, "--store", "numpy", "--top-k", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert (
        "warning: " in result.stderr and "judges 1 queries absent from queries.jsonl ('404')" in result.stderr
    )
    rows = json.loads(result.stdout)["settings"]
    assert [(r["questions"], r["recall"]) for r in rows] == [(1, 1.0)]


def test_usage_errors_exit_2(cli: Cli, tmp_path: Path) -> None:
    questions = DATA / "questions.jsonl"
    for args, message in [
        (("--top-k", "0,5"), "expected integers >= 1, got '0,5'"),
        (("--top-k", "a"), "expected comma-separated integers, got 'a'"),
        (("--threshold", "0,1.5"), "expected numbers >= 0 and <= 1, got '0,1.5'"),
        (("--filter", "tags =="), "at column"),
    ]:
        result = cli("eval", questions, *args)
        assert result.exit_code == 2, (args, result.stderr)
        assert message in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q", "relevant": []}\n', encoding="utf-8")
    result = cli("eval", bad)
    assert result.exit_code == 2 and "line 1: 'relevant' must be a non-empty list" in result.stderr
    result = cli("eval", questions)  # nothing ingested in this RAG_HOME
    assert result.exit_code == 1 and "run `rag ingest` first" in result.stderr
