"""The README is what a new user runs first: its set-up commands and Python examples must work as written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(heading: str, language: str = "python") -> str:
    """The first code block of `language` after `heading`."""
    after = README[README.index(heading) :]
    return after.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_set_up_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    set_up = README[README.index("## Set up") : README.index("\n## ", README.index("## Set up") + 1)]
    commands = [block.split("```", 1)[0].strip() for block in set_up.split("```bash\n")[1:]]
    assert len(commands) == 2
    main_job, tests = commands
    assert "rag ingest data/docs" in main_job and "rag ask" in main_job
    assert tests.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for step in ("pip install -q torch==2.13.0", 'pip install -q -e ".[dev]"', "python -m pytest"):
        assert step.replace(" -q", "") in tests and step in ci


def test_retrieval_example_runs_and_filters() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block("## Retrieval from Python"), "README.md", "exec"), namespace)
    assert [d.id for d in namespace["hits"]] == ["a"] == [d.id for d in namespace["same"]]
    assert namespace["words"][0].id == "b"


def test_question_answer_example_reads_what_rag_ingest_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("RAG_HOME", "RAG_STORE", "RAG_EMBEDDER", "RAG_COLLECTION", "RAG_CHROMA_URL"):
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(ROOT / "data" / "docs", tmp_path / "data" / "docs")
    rag = Path(sys.executable).with_name("rag")
    subprocess.run([str(rag), "ingest", "data/docs"], cwd=tmp_path, check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(_block("## Questions and answers from Python"), "README.md", "exec"), namespace)
    namespace["store"].close()
    answer = capsys.readouterr().out
    assert "no language model was used" in answer and "`vgrow`" in answer and "[guide/install.md]" in answer
