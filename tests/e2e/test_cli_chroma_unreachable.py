"""A Chroma server down or mistyped: every command says so in one line, exit 1 (issue 18, item 2)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.stores.conftest import chroma_server

__all__ = ["chroma_server"]  # the session's real Chroma server, used below

RunCli = Callable[..., Result]
DATA = Path(__file__).resolve().parents[2] / "data"


def _closed_port_url() -> str:
    """A loopback URL where nothing listens: a port the kernel gave out, then closed again."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _commands(docs: Path) -> list[list[str]]:
    return [
        ["ingest", str(docs)],
        ["query", "fog signals"],
        ["ask", "Who logs fog signals?"],
        ["chat"],
        ["eval", str(DATA / "questions.jsonl")],
        ["info"],
        ["delete", "--source", "keepers.txt", "--yes"],
    ]


@pytest.mark.parametrize("kind", ["down", "notaurl", "with-password"])
def test_every_command_says_the_server_cannot_be_reached(
    cli: RunCli, docs: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    url = {"down": _closed_port_url(), "notaurl": "notaurl", "with-password": "http://ann:s3cret@127.0.0.1:1"}
    monkeypatch.setenv("RAG_CHROMA_URL", url[kind])
    shown = url[kind].replace("ann:s3cret@", "")
    for args in _commands(docs):
        result = cli(*args, input="")
        assert result.exit_code == 1, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (args, result.stderr)
        assert lines[0].startswith(f"error: cannot reach the Chroma server at {shown!r}"), (args, lines)
        assert "s3cret" not in result.output and "rag ingest" not in lines[0]


@pytest.mark.server
def test_a_live_server_passes_the_check(
    cli: RunCli, docs: Path, monkeypatch: pytest.MonkeyPatch, chroma_server: str
) -> None:
    monkeypatch.setenv("RAG_CHROMA_URL", chroma_server)
    monkeypatch.setenv("RAG_COLLECTION", "unreachable-check")
    assert cli("ingest", docs).exit_code == 0
    hits = cli("query", "fog signals", "--top-k", "1")
    assert hits.exit_code == 0 and "keepers.txt" in hits.stdout, hits.stderr
