"""The CLI on PostgreSQL: `--store pgvector` with `--database-url` / `RAG_DATABASE_URL`, for real.

Ingest, query, info, re-ingest (the manifest in the same database) and chat history, against the test
session's PostgreSQL, through a login role with a password that must never be printed or written down.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag.memory import PostgresChatMemoryRepository

RunCli = Callable[..., Result]
SECRET = "S3cret-pw-42"


@pytest.fixture
def url(postgres_server_url: str, fresh_name: Callable[[str], str]) -> str:
    """The server's URL for a fresh login role with a password (the server trusts local sockets)."""
    import psycopg
    from psycopg import sql

    role = fresh_name("role")
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(sql.Identifier(role), SECRET)
        )
    _, _, rest = postgres_server_url.partition("@")
    return f"postgresql://{role}:{SECRET}@{rest}"


def test_ingest_query_info_and_reingest(
    cli: RunCli, docs: Path, rag_home: Path, url: str, fresh_name: Callable[[str], str]
) -> None:
    options = ["--store", "pgvector", "--database-url", url, "--collection", fresh_name("cli")]
    first = cli("ingest", docs, *options, "--json")
    assert first.exit_code == 0, first.stderr
    found = cli("query", "who logs fog signals", *options, "--top-k", "1")
    assert found.exit_code == 0, found.stderr
    assert "keepers.txt" in found.stdout
    info = cli("info", *options, "--json")
    assert info.exit_code == 0, info.stderr
    facts = json.loads(info.stdout)
    assert facts["store"] == "pgvector" and facts["count"] >= 3
    assert sorted(Path(source).name for source in facts["sources"]) == [
        "install.md",
        "keepers.txt",
        "tides.md",
    ]
    assert ":***@" in facts["location"]
    again = cli("ingest", docs, *options, "--json")
    assert again.exit_code == 0, again.stderr
    assert json.loads(first.stdout)["chunks_written"] >= 3
    report = json.loads(again.stdout)  # the manifest in Postgres knew every file: nothing written
    assert report["files"].get("unchanged") == 3 and report["chunks_written"] == 0
    tides = next(source for source in facts["sources"] if source.endswith("tides.md"))
    deleted = cli("delete", "--source", tides, "--yes", *options)
    assert deleted.exit_code == 0, deleted.stderr
    after = json.loads(cli("info", *options, "--json").stdout)
    assert sorted(after["sources"]) == sorted(s for s in facts["sources"] if s != tides)
    assert after["count"] == facts["count"] - facts["sources"][tides]
    for text in (
        first.stdout,
        first.stderr,
        found.stdout,
        info.stdout,
        info.stderr,
        again.stdout,
        deleted.stdout,
    ):
        assert SECRET not in text
    assert SECRET not in (rag_home / "stores.json").read_text(encoding="utf-8")


def test_environment_variables_and_chat_history(
    cli: RunCli, docs: Path, url: str, fresh_name: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_STORE", "pgvector")
    monkeypatch.setenv("RAG_DATABASE_URL", url)
    monkeypatch.setenv("RAG_COLLECTION", fresh_name("env"))
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)
    assert cli("ingest", docs).exit_code == 0
    info = cli("info")
    assert info.exit_code == 0 and "pgvector" in info.stdout and SECRET not in info.stdout
    result = cli("chat", "--conversation", "it's 'mine'", input="Who logs fog signals?\n/exit\n")
    assert result.exit_code == 0, result.stderr
    with PostgresChatMemoryRepository(url) as repo:
        texts = [m.text for m in repo.find("it's 'mine'")]
    assert texts[0] == "Who logs fog signals?" and len(texts) == 2


def test_settings_repr_hides_the_database_url() -> None:
    from rag.config import Settings

    settings = Settings.from_env(
        {"RAG_STORE": "pgvector", "RAG_DATABASE_URL": f"postgresql://u:{SECRET}@h/db"}
    )
    assert settings.database_url is not None and SECRET not in repr(settings)


def test_pgvector_without_a_database_is_a_usage_error(cli: RunCli) -> None:
    result = cli("info", "--store", "pgvector")
    assert result.exit_code == 2
    assert "RAG_DATABASE_URL" in result.stderr and "--database-url" in result.stderr


def test_info_and_mark_legacy_on_postgres(
    cli: RunCli, docs: Path, rag_home: Path, url: str, fresh_name: Callable[[str], str]
) -> None:
    """The record counts and the repair of unmarked chat-memory turns hold on PostgreSQL too."""
    from ingest import open_home
    from rag.config import Settings
    from rag.documents import Document

    collection = fresh_name("memory")
    options = ["--store", "pgvector", "--database-url", url, "--collection", collection]
    assert cli("ingest", docs, *options).exit_code == 0
    chunks = json.loads(cli("info", *options, "--json").stdout)["count"]
    settings = Settings.from_env().replace(database_url=url)
    old = {"conversation_id": "old", "message_type": "user", "turn": 1, "timestamp": 1.7e9}
    with open_home(rag_home, store="pgvector", collection=collection, settings=settings) as opened:
        opened.store.add([Document("old-1", "Which keeper logs the fog signals?", old)])
    facts = json.loads(cli("info", *options, "--json").stdout)
    assert (facts["documents"], facts["chat_memory_turns"], facts["unmarked_turns"]) == (chunks + 1, 0, 1)
    result = cli("memory", "mark-legacy", *options)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "marked 1 unmarked chat-memory turn in 1 conversation\n"
    facts = json.loads(cli("info", *options, "--json").stdout)
    assert (facts["documents"], facts["chat_memory_turns"], facts["unmarked_turns"]) == (chunks, 1, 0)
    assert SECRET not in result.stdout + result.stderr
