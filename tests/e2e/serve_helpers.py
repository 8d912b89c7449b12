"""Starting `rag serve` for tests: the real command in a subprocess, or the app under uvicorn in a thread."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner, Result

from rag.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = ROOT / "data" / "docs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rag_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a `rag` subprocess: this checkout first on the path, a private home, no endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), RAG_HOME=str(home), RAG_STORE="numpy", **extra)
    return env


def run_rag(args: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "from rag.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def rag_in_process(args: Sequence[str], env: dict[str, str]) -> Result:
    """`rag ARGS` run in this process (click's runner) under `env`, as `run_rag` runs it in a subprocess.

    For commands whose process is not what a test is about: the ingestion a served home starts from, or
    `rag serve` refusing its options before it binds.
    """
    unset = {k: None for k in os.environ if k.startswith(("RAG_", "OPENAI_")) and k not in env}
    return CliRunner().invoke(main, list(args), env={**env, **unset})


def wait_ready(base: str, process: subprocess.Popen[str] | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"rag serve exited early: {process.stderr.read() if process.stderr else ''}")
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"rag serve did not answer on {base} within {timeout} s")


class ServeProcess:
    """`rag serve ARGS` in a subprocess on a free loopback port; `base` is `http://127.0.0.1:PORT`."""

    def __init__(self, args: Sequence[str], env: dict[str, str]) -> None:
        self.port = free_port()
        code = "from rag.cli import main; main()"
        command = [sys.executable, "-c", code, "serve", "--port", str(self.port), *args]
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        self.base = f"http://127.0.0.1:{self.port}"
        wait_ready(self.base, self.process)

    def stop(self) -> str:
        """Stop the server (Ctrl-C, as a user would); returns what it wrote to stderr."""
        self.process.send_signal(2)
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


class ThreadServer:
    """An ASGI app under a real uvicorn server in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}"
        wait_ready(self.base)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
