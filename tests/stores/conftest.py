"""Fixtures shared by the store tests: the embedding model and a real Chroma server on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag.embeddings import HashingEmbedding


@pytest.fixture
def embedding() -> HashingEmbedding:
    """The offline embedding model every store under test uses."""
    return HashingEmbedding(dimensions=256)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _chroma_command() -> list[str]:
    script = Path(sys.executable).parent / "chroma"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "chromadb.cli.cli"]


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


def _wait_for_heartbeat(url: str, server: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"chroma run exited with {server.returncode}:\n{_tail(log)}")
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"chroma run did not answer at {url} within {timeout} s:\n{_tail(log)}")


def start_chroma_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start `chroma run` on a free loopback port with data in `folder`; returns the process and URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = folder / "chroma.log"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    options = ["--path", str(folder / "data"), "--port", str(port), "--host", "127.0.0.1"]
    command = [*_chroma_command(), "run", *options]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    _wait_for_heartbeat(url, server, log)
    return server, url


def stop_chroma_server(server: subprocess.Popen[bytes]) -> None:
    """Terminate a server started by `start_chroma_server` (kill it if it does not stop)."""
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=15)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Chroma server this test session starts, and stops at the end."""
    server, url = start_chroma_server(tmp_path_factory.mktemp("chroma-server"))
    try:
        yield url
    finally:
        stop_chroma_server(server)
