"""`rag serve` started for real: forwarded headers believed only from the proxies named, a blank token
refused, a missing extra exiting 1 with the install line, and a rate limit that no flood resets."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx

from rag.serve.limits import RateLimiter
from tests.e2e.serve_helpers import ROOT, ServeProcess, rag_env, rag_in_process, wait_ready


def _statuses(process: ServeProcess, count: int) -> list[int]:
    with httpx.Client(base_url=process.base, timeout=30) as client:
        return [
            client.get("/v1/models", headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
            for i in range(count)
        ]


def test_forwarded_addresses_are_believed_only_from_configured_proxies(tmp_path: Path) -> None:
    env = rag_env(tmp_path / "home")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "beacon.md").write_text("The beacon is lit at dusk.\n", "utf-8")
    assert rag_in_process(["ingest", str(tmp_path / "docs")], env).exit_code == 0
    default = ServeProcess(["--rate-limit", "2"], env)
    try:
        # Each forged address would get a fresh bucket if the header were believed.
        assert _statuses(default, 3) == [200, 200, 429]
    finally:
        default.stop()
    proxied = ServeProcess(["--rate-limit", "2", "--forwarded-allow-ips", "127.0.0.1"], env)
    try:
        assert _statuses(proxied, 3) == [200, 200, 200]  # behind a named proxy: one bucket per client
    finally:
        proxied.stop()


def test_a_blank_token_is_refused_before_binding(tmp_path: Path) -> None:
    for token in (" ", "two words"):
        result = rag_in_process(
            ["serve", "--host", "0.0.0.0", "--port", "0", "--token", token], rag_env(tmp_path)
        )
        assert result.exit_code == 2, result.stderr
        assert "error: the bearer token" in result.stderr and "two words" not in result.stderr


def _beacon_home(tmp_path: Path) -> dict[str, str]:
    """The environment of a home holding one small file."""
    env = rag_env(tmp_path / "home")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "beacon.md").write_text("The beacon is lit at dusk.\n", "utf-8")
    assert rag_in_process(["ingest", str(tmp_path / "docs")], env).exit_code == 0
    return env


def test_a_port_in_use_is_one_line_before_anything_is_announced(tmp_path: Path) -> None:
    env = _beacon_home(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rag_in_process(["serve", "--port", str(port)], env)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use (--port chooses another)\n"
    )


def test_port_0_announces_the_port_the_system_gave(tmp_path: Path) -> None:
    env = _beacon_home(tmp_path)
    command = [sys.executable, "-c", "from rag.cli import main; main()", "serve", "--port", "0"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        announced = process.stderr.readline()
        base = announced.split(" on ", 1)[1].split("/v1", 1)[0]
        assert base.startswith("http://127.0.0.1:") and not base.endswith(":0"), announced
        wait_ready(base, process)
        assert httpx.get(f"{base}/v1/models", timeout=10).json()["data"][0]["id"] == "rag"
    finally:
        process.send_signal(2)  # Ctrl-C, as a user stops it
        process.communicate(timeout=30)  # also closes the stderr pipe
    assert process.returncode == 0


# A None entry in sys.modules makes `import uvicorn` raise ImportError, as on a machine without it.
_WITHOUT_UVICORN = (
    "import sys\n"
    "sys.modules['uvicorn'] = None\n"
    "from rag.cli import main\n"
    "main(sys.argv[1:], prog_name='rag')\n"
)


def test_serve_without_its_extra_exits_1_with_the_install_line(tmp_path: Path) -> None:
    env = {**rag_env(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_UVICORN, "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        'error: rag serve needs uvicorn, which is not installed: pip install "rag-advisors[serve]"'
    ]


def test_a_flood_of_new_addresses_forgets_the_oldest_not_everyone() -> None:
    limiter = RateLimiter(1)
    for i in range(10_000):
        limiter.acquire(f"flood-{i}")
    assert limiter.acquire("client") is None  # its one request this minute
    for i in range(10_000, 10_050):
        limiter.acquire(f"flood-{i}")  # the table is full: the oldest floods go first
    assert limiter.acquire("client") is not None  # still throttled: its bucket was kept
    assert limiter.acquire("flood-0") is None  # forgotten, so it starts afresh
