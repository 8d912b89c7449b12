"""A home records its store kind: after `rag ingest --store numpy` (or pgvector), every command finds that
store without `--store`; an explicit `--store` the home does not hold is an error naming the one it does.

Through the real entry point (click's runner), on real numpy folders and the test session's PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from ingest import open_home
from rag.config import Settings

RunCli = Callable[..., Result]


def test_numpy_home_then_plain_commands(cli: RunCli, docs: Path, rag_home: Path, tmp_path: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    assert list(json.loads((rag_home / "stores.json").read_text(encoding="utf-8"))) == ["numpy:rag"]
    found = cli("query", "who logs fog signals", "--top-k", "1")
    assert found.exit_code == 0, found.stderr
    assert "keepers.txt" in found.stdout
    answer = cli("ask", "Who logs fog signals?")
    assert answer.exit_code == 0, answer.stderr
    assert "ledger" in answer.stdout
    info = cli("info", "--json")
    assert info.exit_code == 0, info.stderr
    facts = json.loads(info.stdout)
    assert facts["store"] == "numpy" and facts["location"] == str(rag_home / "numpy" / "rag")
    assert facts["count"] >= 3
    chat = cli("chat", "--conversation", "c1", input="Who logs fog signals?\n/exit\n")
    assert chat.exit_code == 0, chat.stderr
    assert "ledger" in chat.stdout
    questions = tmp_path / "q.jsonl"
    line = {"question": "who logs fog signals", "relevant": [{"source": "keepers.txt"}]}
    questions.write_text(json.dumps(line) + "\n", encoding="utf-8")
    evaluated = cli("eval", questions, "--top-k", "1", "--json")
    assert evaluated.exit_code == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["settings"][0]["hit_rate"] == 1.0
    assert f"against {rag_home / 'numpy' / 'rag'}" in evaluated.stderr
    again = cli("ingest", docs, "--json")  # plain ingest: the same numpy store, so nothing to write
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["chunks_written"] == 0
    assert not (rag_home / "chroma").exists()
    deleted = cli("delete", "--source", "docs/tides.md", "--yes")
    assert deleted.exit_code == 0, deleted.stderr
    with open_home(rag_home, settings=Settings()) as home:  # the same store from Python, one call
        assert home.kind == "numpy" and home.store.count() == facts["count"] - 1


def test_an_explicit_store_the_home_does_not_hold_is_an_error_naming_it(
    cli: RunCli, docs: Path, rag_home: Path
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("query", "fog", "--store", "chroma")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: no chroma collection 'rag' in {str(rag_home)!r}; "
        "the home holds it as numpy:rag (--store numpy); run `rag ingest` first"
    ]


def test_a_collection_in_two_stores_needs_a_choice(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    assert cli("ingest", docs, "--store", "chroma").exit_code == 0
    result = cli("query", "fog")
    assert result.exit_code == 2
    assert "2 stores (chroma:rag, numpy:rag); choose one with --store" in result.stderr
    assert cli("query", "fog", "--store", "numpy").exit_code == 0
    assert cli("query", "fog", "--collection", "other", "--store", "numpy").exit_code == 1


def test_pgvector_home_then_plain_commands_without_the_password(
    cli: RunCli, docs: Path, rag_home: Path, postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    import psycopg
    from psycopg import sql

    secret = "S3cret-home-77"
    role = fresh_name("role")
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(sql.Identifier(role), secret)
        )
    _, _, rest = postgres_server_url.partition("@")
    url = f"postgresql://{role}:{secret}@{rest}"
    assert cli("ingest", docs, "--store", "pgvector", "--database-url", url).exit_code == 0
    assert secret not in (rag_home / "stores.json").read_text(encoding="utf-8")
    found = cli("query", "who logs fog signals", "--top-k", "1")  # no --store, no --database-url
    assert found.exit_code == 0, found.stderr
    assert "keepers.txt" in found.stdout and secret not in found.stdout + found.stderr
    info = cli("info", "--json")
    assert info.exit_code == 0, info.stderr
    assert json.loads(info.stdout)["store"] == "pgvector" and secret not in info.stdout


def test_the_homes_guide_runs_as_written(
    cli: RunCli,
    docs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "homes.md").read_text(encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path))  # the guide's "~/.rag"
    monkeypatch.chdir(tmp_path)  # and its "docs/" (the fixture's folder)
    assert cli("ingest", docs, "--store", "numpy", "--home", tmp_path / ".rag").exit_code == 0
    code = guide.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/homes.md", "exec"), namespace)
    printed = capsys.readouterr().out.split()
    assert printed == ["numpy", "rag", "hashing", str(tmp_path / ".rag" / "numpy" / "rag")]
    assert namespace["report"].counts["unchanged"] == 3
    hits = namespace["hits"]
    assert 1 <= len(hits) <= 3 and hits[0].metadata["source"] == "guide/install.md"
    shown = guide.split('$ rag query "pump" --store chroma\n', 1)[1].split("\n", 1)[0]
    result = cli("query", "pump", "--store", "chroma", "--home", ".rag")
    assert result.exit_code == 1 and result.stderr.strip() == shown


def test_serve_finds_the_numpy_store_without_store_options(docs: Path, tmp_path: Path) -> None:
    from tests.e2e.serve_helpers import ServeProcess, rag_env, rag_in_process

    env = rag_env(tmp_path / "served")
    del env["RAG_STORE"]  # the helper's default: this test leaves the choice to the home
    assert rag_in_process(["ingest", str(docs), "--store", "numpy"], env).exit_code == 0
    server = ServeProcess(["--rate-limit", "0"], env)
    try:
        response = httpx.post(f"{server.base}/v1/search", json={"query": "fog signals ledger", "top_k": 1})
        assert response.status_code == 200
        assert [hit["metadata"]["source"] for hit in response.json()["data"]] == ["keepers.txt"]
    finally:
        log = server.stop()
    assert "serving " + str(tmp_path / "served" / "numpy" / "rag") in log
