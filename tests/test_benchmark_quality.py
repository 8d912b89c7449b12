"""benchmarks/quality.py: the default weight measured on sets it was not chosen on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "quality.py"


def test_each_set_is_scored_with_the_weight_the_other_sets_choose() -> None:
    module = load_script(SCRIPT, "quality_under_test")
    sweeps = {
        "a": {0.0: 0.50, 0.05: 0.55, 0.5: 0.70},
        "b": {0.0: 0.60, 0.05: 0.60, 0.5: 0.50},
        "c": {0.0: 0.61, 0.05: 0.60, 0.5: 0.50},
    }
    found = module.leave_one_set_out(sweeps, 0.05)
    # a: b and c prefer 0 (mean 0.605 against 0.600 at 0.05); b: a and c prefer 0.5 (0.600)
    assert found["a"] == (0.0, 0.50, 0.70, 0.55)
    assert found["b"] == (0.5, 0.50, 0.60, 0.60)
    tied = {"a": {0.0: 0.5, 0.05: 0.5, 0.5: 0.5}, "b": {0.0: 0.4, 0.05: 0.4, 0.5: 0.4}}
    assert module.leave_one_set_out(tied, 0.05)["a"][0] == 0.05  # a tie keeps the weight nearest the default


def test_a_question_is_outworded_when_another_page_holds_all_its_words_and_the_gold_page_not() -> None:
    from rag import Document, HashingEmbedding
    from rag.eval.questions import parse_questions
    from stores import NumpyVectorStore

    trees = load_script(SCRIPT.parent / "quality_trees.py", "quality_trees_under_test")
    store = NumpyVectorStore(HashingEmbedding(32))
    store.add(
        [
            Document("1", "Ends a foreach block.", {"source": "command/endforeach.rst"}),
            Document("2", "Starts a list of commands in a foreach block.", {"source": "command/foreach.rst"}),
        ]
    )
    gold = '"relevant": [{"source": "command/endforeach.rst"}]'
    lines = [
        '{"question": "a list of commands in a foreach block", ' + gold + "}",
        '{"question": "ends a foreach block", ' + gold + "}",
    ]
    assert trees._outworded(store, parse_questions(lines, "q.jsonl"), "en") == 0.5


def _qa(qid: str, question: str, answer: str) -> dict[str, Any]:
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": 0}]}


def _article(title: str, context: str, *qas: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "paragraphs": [{"context": context, "qas": list(qas)}]}


SQUAD: dict[str, Any] = {
    "version": "1.1",
    "data": [
        _article(
            "Fresno,_California",
            "Fresno lies in the San Joaquin Valley. Its airport opened in 1946.",
            _qa("f1", "In which valley does Fresno lie?", "San Joaquin Valley"),
        ),
        _article(
            "Pumps",
            "A centrifugal pump moves water with a spinning impeller. Pumps need priming.",
            _qa("p1", "What spinning part moves water in a centrifugal pump?", "impeller"),
        ),
        _article(
            "Glaciers",
            "Glaciers carve U-shaped valleys as they flow downhill. They hold fresh water.",
            _qa("g1", "What shape are the valleys glaciers carve?", "U-shaped"),
            _qa("g2", "Where do glaciers flow?", "downhill"),
        ),
    ],
}


def test_the_squad_set_is_measured_like_a_docs_tree_with_the_gold_answer_contained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quality = load_script(SCRIPT, "quality_under_test")
    squad_style = load_script(SCRIPT.parent / "datasets" / "squad_style.py", "squad_style_for_quality")
    squad_style.build(SQUAD, tmp_path / "squad", sample=10, seed=1)
    argv = [
        "--sets",
        "squad",
        "--squad",
        str(tmp_path / "squad"),
        "--embedders",
        "hashing",
        "--weights",
        "0.5",
    ]
    assert quality.main(argv) == 0
    out = capsys.readouterr().out
    assert "== squad (answer set), embedder 'hashing': 4 questions" in out
    assert "\nlexical      " in out and "\nhybrid 0.5   " in out  # hit@1, hit@4, nDCG@10 per mode
    assert "held out (2-fold, fit on one half)" in out
    assert (
        "answer: the extractive answer contains the gold answer for 100.0% of questions "
        "(100.0% of the held-out half;" in out
    )
    assert "target gold answer contained >= 90% (held-out half): 100.0%, met" in out
    assert "target hit@1" not in out  # the page targets are the docs-tree sets'
