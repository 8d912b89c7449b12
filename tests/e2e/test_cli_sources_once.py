"""The sources list of an offline answer names each file once, with the passages it holds."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag import Document
from rag.citations import cited_sources
from rag.serve.wire import citations_text
from tests.ingest.pdfs import text_pdf

RunCli = Callable[..., Result]


@pytest.fixture(autouse=True)
def _no_chat_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)


@pytest.fixture
def manual(tmp_path: Path, cli: RunCli) -> Path:
    """A quick-start long enough for several chunks that all mention the lamp, and a short FAQ."""
    folder = tmp_path / "manual"
    folder.mkdir()
    sections = [
        f"## Step {n}\n\nLight the beacon lamp at dusk, step {n}: check the lamp wick and the lamp oil "
        + "before the harbour closes. " * 12
        for n in range(1, 5)
    ]
    (folder / "quick-start.md").write_text("# Quick start\n\n" + "\n\n".join(sections), encoding="utf-8")
    (folder / "faq.md").write_text("# FAQ\n\nThe beacon lamp burns whale oil.\n", encoding="utf-8")
    (folder / "lamp.pdf").write_bytes(text_pdf(["The lamp lens is polished.", "The lamp glass is cleaned."]))
    result = cli("ingest", folder, "--store", "numpy", "--chunk-size", "60", "--chunk-overlap", "0")
    assert result.exit_code == 0, result.stderr
    return folder


def _sources(stdout: str) -> list[str]:
    return re.findall(r"^  (\[[\d, ]+\] .*)$", stdout, flags=re.MULTILINE)


def test_ask_lists_each_file_once_with_its_passages(cli: RunCli, manual: Path) -> None:
    args = ("ask", "When is the beacon lamp lit?", "--store", "numpy", "--top-k", "6")
    text = cli(*args, "--no-stream")
    assert text.exit_code == 0, text.stderr
    sources = _sources(text.stdout.split("\nSources:\n", 1)[1])
    names = [re.sub(r"^\[[\d, ]+\] ", "", line).split(",")[0].split(" (")[0] for line in sources]
    assert len(names) == len(set(names)), sources  # no file named twice
    passages = json.loads(cli(*args, "--json").stdout)["sources"]
    assert len(passages) == 6  # --json keeps one row per passage
    quick = [p for p in passages if p["citation"] == "manual/quick-start.md"]
    assert len(quick) >= 2
    numbers = ", ".join(str(p["rank"]) for p in quick)
    line = next(s for s in sources if "quick-start.md" in s)
    assert line.startswith(f"[{numbers}] manual/quick-start.md, chunks "), line
    assert line.count(" / ") == 2 * (len(quick) - 1)  # a score and a cosine per passage


def test_chat_sources_name_each_file_once(cli: RunCli, manual: Path) -> None:
    script = "When is the beacon lamp lit?\n/sources\n"
    result = cli("chat", "--store", "numpy", "--top-k", "6", "--no-stream", input=script)
    assert result.exit_code == 0, result.stderr
    sources = _sources(result.stdout)
    assert sum("quick-start.md" in line for line in sources) == 1, sources
    assert re.search(r"^\[\d+(, \d+)+\] manual/quick-start\.md, chunks ", "\n".join(sources), re.MULTILINE)


def test_pages_tell_the_passages_of_a_pdf_apart() -> None:
    pages = [
        Document(f"p{n}", "...", {"source": "lamp.pdf", "page": n, "chunk_index": n - 1}) for n in (1, 2)
    ]
    other = Document("f", "...", {"source": "faq.md", "chunk_index": 0})
    assert [s.line() for s in cited_sources([pages[0], other, pages[1]])] == [
        "[1, 3] lamp.pdf, pages 1, 2",
        "[2] faq.md",
    ]
    same_page = [
        Document(f"s{i}", "...", {"source": "lamp.pdf", "page": 1, "chunk_index": i}) for i in (4, 5)
    ]
    assert cited_sources(same_page)[0].line() == "[1, 2] lamp.pdf, page 1, chunks 4, 5"


def test_serve_appends_each_source_once() -> None:
    docs = [
        Document("a", "...", {"source": "quick-start.html"}),
        Document("b", "...", {"source": "drd-manual.html"}),
        Document("c", "...", {"source": "quick-start.html"}),
    ]
    assert citations_text(docs) == "\n\nSources:\n[1, 3] quick-start.html\n[2] drd-manual.html"
