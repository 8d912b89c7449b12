"""benchmarks/ceiling.py on pages the test writes: which gold pages another page outwords, and the
bound and default columns counted from them."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from rag import Document, HashingEmbedding
from rag.config import Settings
from rag.eval.questions import Question, Relevant
from stores import NumpyVectorStore
from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "ceiling.py"


@pytest.fixture(scope="module")
def ceiling() -> ModuleType:
    return load_script(SCRIPT, "ceiling_under_test")


def _store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    pages = {
        "prop_tgt/IPO.md": "Interprocedural optimization settings.",
        "prop_dir/IPO.md": "Enable interprocedural optimization for every target in a folder.",
        "clean.md": "Remove build files from the tree.",
        "build.md": "Build files.",
        "other.md": "Nothing about any of it.",
    }
    store.add(
        Document(f"c{i}", text, {"source": source, "lang": "en"})
        for i, (source, text) in enumerate(pages.items())
    )
    return store


def test_a_page_holding_more_of_the_question_dominates_the_gold_page(ceiling: ModuleType) -> None:
    pages = ceiling.page_terms(_store())
    ipo = Question("q1", "Enable interprocedural optimization for a target.", (Relevant("prop_tgt/IPO.md"),))
    verdict = ceiling.classify(pages, ipo)
    assert (verdict.gold, verdict.dominating) == ("prop_tgt/IPO.md", ["prop_dir/IPO.md"])
    assert not verdict.holds_all and not verdict.holds_none
    # A page holding fewer of the words ("Build files.") neither dominates nor ties.
    clean = ceiling.classify(pages, Question("q2", "Remove build files.", (Relevant("clean.md"),)))
    assert (clean.dominating, clean.ties, clean.holds_all) == ([], 0, True)
    # A gold page holding none of the words is counted apart.
    none = ceiling.classify(pages, Question("q3", "Remove build files.", (Relevant("other.md"),)))
    assert none.holds_none


def test_count_gives_the_bound_and_the_default_beside_it(ceiling: ModuleType) -> None:
    store = _store()
    questions = [
        Question("q1", "Enable interprocedural optimization for a target.", (Relevant("prop_tgt/IPO.md"),)),
        Question("q2", "Remove build files.", (Relevant("clean.md"),)),
    ]
    got = ceiling.count("tiny", store, Settings.from_env({}), questions, show=1)
    assert (got.questions, got.pages, got.dominated, got.dominated4, got.gold_all) == (2, 5, 1, 0, 1)
    assert got.examples == [(questions[0].text, "prop_tgt/IPO.md", "prop_dir/IPO.md")]
    assert got.default == {"hit@1": 0.5, "hit@4": 1.0}  # the dominated gold page ranks second
    assert got.beaten == {"hit@1": 0.0, "hit@4": 0.0}  # hit@4 rules out no question: nothing counted
