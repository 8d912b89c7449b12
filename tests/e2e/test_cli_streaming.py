"""`rag ask` and `rag chat` stream on a terminal, `--no-stream` turns it off, slash commands are documented.

Issue 18, item 10. The terminal is a real pseudo-terminal; the model is the loopback OpenAI server, which
holds the rest of its answer back until the test has seen the first piece on the terminal: an answer
printed only when complete would never show that piece, so the test needs no clock to tell the two apart.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse

RunCli = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]
FIRST, REST = "The keepers ", "log the fog signals."
_WAIT = 120.0  # seconds: a bound on a wait that normally takes milliseconds, never a speed check


@pytest.fixture
def ingested(cli: RunCli, docs: Path, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    return cli


def _gated_reply(seen: threading.Event) -> Reply:
    """A streamed answer whose second half is sent only once `seen` is set (or the server stops)."""

    def pieces() -> Iterator[bytes]:
        yield sse([chunk(FIRST)], done=False)
        seen.wait(_WAIT)
        yield sse([chunk(REST), chunk(finish_reason="stop")])

    return Reply(chunks=pieces(), headers={"Content-Type": "text/event-stream"})  # type: ignore[arg-type]


def _run_on_terminal(
    args: list[str], env: dict[str, str], stdin: str, seen: threading.Event
) -> tuple[str, bool]:
    """Run `rag ARGS` with stdout on a pseudo-terminal; set `seen` when FIRST shows.

    Returns all output, and whether FIRST was on the terminal before the rest of the answer was sent.
    """
    primary, secondary = pty.openpty()
    code = "from rag.cli import main; main(prog_name='rag')"
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=secondary,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    os.close(secondary)
    assert process.stdin is not None
    process.stdin.write(stdin.encode())
    process.stdin.close()
    output = b""
    streamed = False
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], _WAIT)
            if not ready:
                break
            try:
                data = os.read(primary, 4096)
            except OSError:  # the terminal closed: the process has exited
                break
            if not data:
                break
            output += data
            if not seen.is_set() and FIRST.encode() in output and REST.encode() not in output:
                streamed = True  # the first piece is on the terminal while the rest is still held back
                seen.set()
    finally:
        seen.set()
        os.close(primary)
        process.wait(timeout=_WAIT)
    assert process.returncode == 0
    return output.decode().replace("\r\n", "\n"), streamed


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_answers_stream_on_a_terminal(
    ingested: RunCli, rag_home: Path, openai_server: OpenAIServer, command: str
) -> None:
    seen = threading.Event()
    openai_server.enqueue(_gated_reply(seen))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAG_HOME": str(rag_home),
        "RAG_STORE": "numpy",
        "OPENAI_BASE_URL": openai_server.base_url,
    }
    args = ["ask", "Who logs fog signals?"] if command == "ask" else ["chat"]
    output, streamed = _run_on_terminal(args, env, "Who logs fog signals?\n/exit\n", seen)
    assert streamed and FIRST + REST in output
    assert openai_server.requests[0].json["stream"] is True


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_no_stream_asks_for_the_whole_answer(
    ingested: RunCli, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.enqueue(Reply(json=completion(FIRST + REST)))
    args = ["ask", "Who logs fog signals?"] if command == "ask" else ["chat"]
    result = ingested(*args, "--store", "numpy", "--no-stream", input="Who logs fog signals?\n/exit\n")
    assert result.exit_code == 0, result.stderr
    # `rag chat` echoes a piped question above its answer.
    assert result.stdout.removeprefix("you> Who logs fog signals?\n").startswith(FIRST + REST + "\n")
    assert not openai_server.requests[0].json.get("stream")


def test_chat_help_documents_the_slash_commands(ingested: RunCli) -> None:
    help_lines = [line.strip() for line in ingested("chat", "--help").stdout.splitlines()]
    for command, meaning in [
        ("/sources", "the passages behind the last answer"),
        ("/clear", "forget this conversation"),
        ("/help", "list these commands"),
        ("/exit", "quit; /quit and end of input (Ctrl-D) do the same"),
    ]:
        assert any(line.startswith(command) and meaning in line for line in help_lines), command
    assert any(line.startswith("--stream / --no-stream") for line in help_lines)
    session = ingested("chat", "--store", "numpy", input="/help\n/exit\n")
    assert session.exit_code == 0 and "Commands: /sources" in session.stderr
    assert "unknown command" not in session.stderr
