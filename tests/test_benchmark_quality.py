"""benchmarks/quality.py: the default weight measured on sets it was not chosen on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "quality.py"


def test_each_set_is_scored_with_the_weight_the_other_sets_choose() -> None:
    spec = importlib.util.spec_from_file_location("quality_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
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

    spec = importlib.util.spec_from_file_location(
        "quality_trees_under_test", SCRIPT.parent / "quality_trees.py"
    )
    assert spec is not None and spec.loader is not None
    trees = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = trees
    spec.loader.exec_module(trees)
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
