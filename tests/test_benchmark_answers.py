"""benchmarks/answers.py's helpers: the words a user reads, and the passages' sentence holding a gold."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "answers.py"


@pytest.fixture(scope="module")
def answers() -> ModuleType:
    return load_script(SCRIPT, "answers_under_test")


def test_the_sentence_holding_a_gold_answer_is_found_in_the_passages(answers: ModuleType) -> None:
    text = "The mill opened in spring. Its wheel was built by Ada Rusk! Nobody knows why."
    assert answers.gold_sentence(text, ["Grace Hill", "ada rusk"]) == "Its wheel was built by Ada Rusk!"
    assert answers.gold_sentence(text, ["Grace Hill"]) == ""


def test_words_quoted_leave_out_the_heading_and_the_source_tags(answers: ModuleType) -> None:
    answer = "From the documents:\n- The mill opened in spring. [mill.md]\n- It has a wheel. [wheel.md]"
    assert answers.quoted_words(answer) == 9
