"""benchmarks/answers.py's helpers: the words a user reads, and the passages' sentence holding a gold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "answers.py"


@pytest.fixture(scope="module")
def answers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("answers_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_sentence_holding_a_gold_answer_is_found_in_the_passages(answers: ModuleType) -> None:
    text = "The mill opened in spring. Its wheel was built by Ada Rusk! Nobody knows why."
    assert answers.gold_sentence(text, ["Grace Hill", "ada rusk"]) == "Its wheel was built by Ada Rusk!"
    assert answers.gold_sentence(text, ["Grace Hill"]) == ""


def test_words_quoted_leave_out_the_heading_and_the_source_tags(answers: ModuleType) -> None:
    answer = "From the documents:\n- The mill opened in spring. [mill.md]\n- It has a wheel. [wheel.md]"
    assert answers.quoted_words(answer) == 9
