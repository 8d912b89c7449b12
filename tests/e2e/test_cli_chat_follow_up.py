"""`rag chat` offline: a follow-up question is searched with the conversation, `rag ask` is unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

RunCli = Callable[..., Result]

FOLLOW_UP = "How do I install valgrind?\nAnd how do I run it?\n/sources\n"
PAGES = {
    "valgrind-install.md": "# Getting valgrind\n\nYour package manager has valgrind: apt install valgrind.\n",
    "valgrind-run.md": "# Using valgrind\n\nStart your program under valgrind: valgrind "
    "--leak-check=yes ./myprog arg1. Valgrind runs it on a synthetic CPU; valgrind --help lists "
    "the options of valgrind.\n",
    "tests.md": "# Running the tests\n\nRun the test suite with make check. To run one test only, "
    "run make check TEST=name.\n",
    "lint.md": "# Linting\n\nRun the linter with make lint before you push.\n",
    "bench.md": "# Benchmarks\n\nThe benchmarks run for an hour; run them on a quiet machine.\n",
    "tides.md": "# Tides\n\nSpring tides flood the causeway twice a month.\n",
}
"""A tool's install and usage pages, and pages about running other things that say "run" most."""


@pytest.fixture(autouse=True)
def _no_chat_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)


@pytest.fixture
def home_docs(tmp_path: Path, cli: RunCli) -> Path:
    """A tool's install and usage pages, and a page about running tests that says "run" most."""
    folder = tmp_path / "manual"
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    result = cli("ingest", folder, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    return folder


def _sources(stdout: str) -> list[str]:
    return re.findall(r"^\s+\[\d+\] (\S+)", stdout, flags=re.MULTILINE)


def test_a_follow_up_finds_what_the_conversation_is_about(cli: RunCli, home_docs: Path) -> None:
    result = cli("chat", "--store", "numpy", "--no-stream", input=FOLLOW_UP)
    assert result.exit_code == 0, result.stderr
    sources = _sources(result.stdout)
    # ranked first (the sources list puts the ones the answer quotes first)
    assert re.search(r"^\s+\[1(, \d+)*\] manual/valgrind-run\.md", result.stdout, flags=re.MULTILINE), (
        result.stdout
    )
    # The page that only shares the word "run" is still among the passages, just not first.
    assert "manual/tests.md" in sources


def test_follow_up_zero_searches_with_the_follow_up_alone(cli: RunCli, home_docs: Path) -> None:
    result = cli("chat", "--store", "numpy", "--no-stream", "--follow-up", "0", input=FOLLOW_UP)
    assert result.exit_code == 0, result.stderr
    assert _sources(result.stdout)[0] == "manual/tests.md"


def test_a_change_of_subject_keeps_its_own_passages(cli: RunCli, home_docs: Path) -> None:
    script = "How do I install valgrind?\nWhen do spring tides flood the causeway?\n/sources\n"
    result = cli("chat", "--store", "numpy", "--no-stream", input=script)
    assert result.exit_code == 0, result.stderr
    assert _sources(result.stdout)[0] == "manual/tides.md"
    assert "Spring tides flood the causeway twice a month. [manual/tides.md]" in result.stdout


def test_ask_is_one_question_and_unchanged(cli: RunCli, home_docs: Path) -> None:
    result = cli("ask", "And how do I run it?", "--store", "numpy", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sources"][0]["citation"] == "manual/tests.md"


def test_help_names_the_follow_up_option(cli: RunCli) -> None:
    text = " ".join(cli("chat", "--help").stdout.split())
    assert "--follow-up INTEGER RANGE Earlier questions joined to a follow-up for a second search" in text
    assert "the passages closest to both are kept" in text
