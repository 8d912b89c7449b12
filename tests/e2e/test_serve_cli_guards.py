"""`rag serve` started for real: forwarded headers believed only from the proxies named, a blank token
refused, a missing extra exiting 1 with the install line, and a rate limit that no flood resets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from rag.serve.limits import RateLimiter
from tests.e2e.serve_helpers import ROOT, ServeProcess, rag_env, rag_in_process


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
