"""benchmarks/datasets/python_faq.py on a small reStructuredText tree: the known-item set it writes."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from rag.eval import load_beir
from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "datasets" / "python_faq.py"
FILLER = "It is explained here at enough length to count as a real answer to the question above."


@pytest.fixture(scope="module")
def python_faq() -> ModuleType:
    return load_script(SCRIPT, "python_faq_under_test")


def _sources(root: Path) -> Path:
    (root / "faq").mkdir(parents=True)
    (root / "whatsnew").mkdir()
    (root / "faq" / "programming.rst.txt").write_text(
        "===============\nProgramming FAQ\n===============\n\n.. contents::\n\n"
        "General Questions\n=================\n\n"
        "How do I share global variables across modules?\n"
        "------------------------------------------------\n\n"
        f".. index:: single: globals\n   pair: module; config\n\nUse a :mod:`config` module. {FILLER}\n\n"
        ".. _faq-speed:\n\nHow to make code faster\n-----------------------\n\n"
        f"Profile first with ``cProfile``. {FILLER}\n\n"
        "Tables\n------\n\n=====  =====\na      b\n=====  =====\n",
        encoding="utf-8",
    )
    (root / "faq" / "installing.rst.txt").write_text(
        "Installing\n==========\n\nHow do I ...?\n-------------\n\n"
        "... install packages just for the current user?\n"
        "-----------------------------------------------\n\n"
        f"Pass ``--user`` to pip. {FILLER}\n",
        encoding="utf-8",
    )
    (root / "whatsnew" / "3.11.rst.txt").write_text(
        f"What's New\n==========\n\nWhy upgrade?\n------------\n\n{FILLER}\n", encoding="utf-8"
    )
    return root


def test_question_headings_judge_their_own_section_which_does_not_contain_them(
    python_faq: ModuleType, tmp_path: Path
) -> None:
    docs, queries = python_faq.build(_sources(tmp_path / "src"), tmp_path / "out")
    corpus = {
        r["_id"]: r for r in map(json.loads, (tmp_path / "out" / "corpus.jsonl").read_text().splitlines())
    }
    assert (docs, queries) == (3, 3)  # short sections (title, "General Questions", "Tables") are left out
    share = corpus["faq/programming#how-do-i-share-global-variables-across-modules"]
    assert share["title"] == "Programming FAQ"
    assert share["text"] == f"Use a :mod:`config` module. {FILLER}"  # no heading, index or label lines
    questions = load_beir(tmp_path / "out")
    judged = {q.text: [r.source for r in q.relevant] for q in questions}
    assert judged == {
        "How do I share global variables across modules?": [
            "faq/programming#how-do-i-share-global-variables-across-modules"
        ],
        "How to make code faster": ["faq/programming#how-to-make-code-faster"],
        "How do I install packages just for the current user?": [
            "faq/installing#install-packages-just-for-the-current-user"
        ],
    }
    assert all(text.lower() not in corpus[ids[0]]["text"].lower() for text, ids in judged.items())
    assert not any(doc_id.startswith("whatsnew/") for doc_id in corpus)


def test_headings_and_markup(python_faq: ModuleType) -> None:
    assert python_faq.plain("Why is :func:`len` not a :meth:`~list.size` method?") == (
        "Why is len not a list.size method?"
    )
    assert python_faq.as_question("Sorting Basics") is None
    assert python_faq.as_question("When to use logging") == "When to use logging"
