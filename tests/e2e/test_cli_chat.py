"""`rag chat` through the real entry point, offline: answers stream, memory persists between runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag.filters import key
from rag.memory import SQLiteChatMemoryRepository

RunCli = Callable[..., Result]


@pytest.fixture(autouse=True)
def _no_chat_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)


@pytest.fixture(params=["numpy", "chroma"])
def store_kind(request: pytest.FixtureRequest, cli: RunCli, docs: Path) -> str:
    result = cli("ingest", docs, "--store", request.param)
    assert result.exit_code == 0, result.stderr
    return str(request.param)


def _messages(home: Path, conversation: str) -> list[str | None]:
    with SQLiteChatMemoryRepository(home / "chat" / "memory.sqlite") as repo:
        return [m.text for m in repo.find(conversation)]


def test_chat_answers_remembers_and_resumes(cli: RunCli, rag_home: Path, store_kind: str) -> None:
    script = "Who logs fog signals?\n/sources\n\nWhen do spring tides flood?\n/exit\nnever read\n"
    result = cli("chat", "--store", store_kind, "--conversation", "harbour 'notes'", input=script)
    assert result.exit_code == 0, result.stderr
    assert "conversation harbour 'notes' (new; resume with --conversation harbour 'notes')" in result.stderr
    assert "Each keeper logs fog signals in the ledger. [docs/keepers.txt]" in result.stdout
    assert "Spring tides flood the causeway twice a month." in result.stdout
    assert re.search(r"\[1\] docs/keepers\.txt \(score [0-9.]+, cosine [0-9.]+\)", result.stdout)
    stored = _messages(rag_home, "harbour 'notes'")
    assert stored[0::2] == ["Who logs fog signals?", "When do spring tides flood?"]
    assert all(text and text.startswith("From the documents") for text in stored[1::2])
    # The next run continues the same conversation; the long-term memory holds both turns as well.
    again = cli("chat", "--store", store_kind, "--conversation", "harbour 'notes'", input="/exit\n")
    assert again.exit_code == 0, again.stderr
    assert "(continuing;" in again.stderr
    assert _long_term_count(rag_home, store_kind, "harbour 'notes'") == 4


def _long_term_count(home: Path, store_kind: str, conversation: str) -> int:
    from rag.embeddings import HashingEmbedding

    folder = home / "chat"
    if store_kind == "numpy":
        from stores import NumpyVectorStore

        return NumpyVectorStore(HashingEmbedding(), path=folder / "numpy" / "memory-rag").count(
            key("conversation_id") == conversation
        )
    from stores import ChromaVectorStore

    chroma = ChromaVectorStore(HashingEmbedding(), collection="memory-rag", path=str(folder / "chroma"))
    try:
        return chroma.count(key("conversation_id") == conversation)
    finally:
        chroma.close()


def test_chat_new_id_clear_and_unknown_commands(cli: RunCli, rag_home: Path, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("chat", "--store", "numpy", input="Who logs fog signals?\n/nope\n/clear\n/sources\n")
    assert result.exit_code == 0, result.stderr
    match = re.search(r"conversation ([0-9a-f]{12}) \(new;", result.stderr)
    assert match, result.stderr
    assert "unknown command '/nope'. Commands: /sources" in result.stderr
    assert f"conversation {match.group(1)} forgotten" in result.stderr
    assert "no sources for the last answer" in result.stderr
    assert _messages(rag_home, match.group(1)) == []
    assert _long_term_count(rag_home, "numpy", match.group(1)) == 0


def test_chat_needs_an_ingested_store(cli: RunCli) -> None:
    result = cli("chat", "--store", "numpy", input="/exit\n")
    assert result.exit_code == 1
    assert "run `rag ingest` first" in result.stderr


def test_piped_questions_get_no_prompts_on_stderr(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("chat", "--store", "numpy", "--no-stream", input="Who logs fog signals?\n")
    assert result.exit_code == 0, result.stderr
    assert "you>" not in result.stderr  # stdin is not a terminal: no prompt to type at
    assert result.stderr.startswith("conversation ")  # the one line saying how to resume


def test_piped_turns_are_echoed_and_set_apart(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    script = "Who logs fog signals?\n/sources\n\nWhen do spring tides flood?\n"
    for stream in ("--stream", "--no-stream"):
        result = cli("chat", "--store", "numpy", stream, input=script)
        assert result.exit_code == 0, result.stderr
        turns = result.stdout.rstrip("\n").split("\n\n")
        heads = [turn.splitlines()[0] for turn in turns]
        assert heads == ["you> Who logs fog signals?", "you> /sources", "you> When do spring tides flood?"]
        assert "[docs/keepers.txt]" in turns[0] and "docs/keepers.txt (score" in turns[1]
        assert "Spring tides flood the causeway" in turns[2]
