"""Fixtures for running the `rag` command line for real: a private RAG_HOME and a small docs folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rag.cli import main
from tests.otlp_receiver import receiver  # noqa: F401 (a fixture for the e2e tests)

_ENV = (
    "RAG_HOME",
    "RAG_STORE",
    "RAG_CHROMA_URL",
    "RAG_DATABASE_URL",
    "RAG_COLLECTION",
    "RAG_EMBEDDER",
    "RAG_CHUNK_SIZE",
    "RAG_CHUNK_OVERLAP",
    "RAG_SEARCH_MODE",
    "RAG_FUSION",
    "RAG_VECTOR_WEIGHT",
    "RAG_DIVERSITY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture
def rag_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh RAG_HOME; every other RAG_* variable unset, so the user's environment cannot leak in."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("RAG_HOME", str(home))
    return home


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A small folder of Markdown and text files about a made-up lighthouse."""
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "install.md").write_text(
        "---\ntitle: Installing the beacon\n---\n# Install\n\nMount the beacon lamp on the north tower. "
        "Tighten the brass bolts before you power the lantern.\n\n## From source\n\nCompile the firmware "
        "with the harbour toolkit.\n",
        encoding="utf-8",
    )
    (folder / "keepers.txt").write_text(
        "The keepers rotate every fortnight. Each keeper logs fog signals in the ledger.\n", encoding="utf-8"
    )
    (folder / "tides.md").write_text(
        "# Tides\n\nSpring tides flood the causeway twice a month.\n", encoding="utf-8"
    )
    return folder


@pytest.fixture
def cli(rag_home: Path) -> Callable[..., Result]:
    """Run `rag` through click's runner; stdout and stderr are kept apart."""

    def run(*args: Any, input: str | None = None) -> Result:
        return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)

    return run
