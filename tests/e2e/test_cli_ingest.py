"""`rag ingest`, `rag query`, `rag info` and `rag delete` through the real entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from rag.cli._common import build_embedder
from rag.config import Settings
from rag.errors import ConfigError

RunCli = Callable[..., Result]


def as_json(result: Result) -> Any:
    """The JSON a command printed on stdout."""
    return json.loads(result.stdout)


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_ingest_query_info_delete(cli: RunCli, docs: Path, store: str) -> None:
    first = cli("ingest", docs, "--store", store, "--meta", "project=beacon", "--json")
    assert first.exit_code == 0, first.stderr
    report = as_json(first)
    assert report["files"]["new"] == 3 and report["chunks_written"] >= 3 and report["truncated_chunks"] == 0
    assert {d["source"] for d in report["details"]} == {"guide/install.md", "keepers.txt", "tides.md"}

    again = as_json(cli("ingest", docs, "--store", store, "--meta", "project=beacon", "--json"))
    assert again["files"]["unchanged"] == 3 and again["chunks_embedded"] == again["chunks_written"] == 0

    hits = cli("query", "who logs fog signals", "--store", store, "--top-k", "2", "--json")
    assert hits.exit_code == 0, hits.stderr
    rows = as_json(hits)
    assert (
        rows[0]["rank"] == 1
        and rows[0]["source"] == "keepers.txt"
        and rows[0]["metadata"]["project"] == "beacon"
    )
    table = cli("query", "brass bolts", "--store", store, "--filter", "source == 'guide/install.md'")
    assert table.exit_code == 0 and table.stdout.splitlines()[0].split()[5] == "docs/guide/install.md"

    info = as_json(cli("info", "--store", store, "--json"))
    assert info["collection"] == "rag" and info["store"] == store and info["embedder"] == "hashing"
    assert info["count"] == report["chunks_written"] and set(info["sources"]) == {
        "docs/guide/install.md",
        "docs/keepers.txt",
        "docs/tides.md",
    }
    assert info["roots"] == {"docs": os.path.realpath(docs)}

    gone = cli("delete", "--store", store, "--source", "docs/tides.md", "--yes")
    assert gone.exit_code == 0 and "deleted 1 chunk(s) from 1 source(s)" in gone.stdout
    info = as_json(cli("info", "--store", store, "--json"))
    assert "docs/tides.md" not in info["sources"] and info["count"] == report["chunks_written"] - 1
    # The manifest forgot it, so the next ingest restores it, as the command's help says.
    assert "ingesting its folder again brings it back" in " ".join(cli("delete", "--help").stdout.split())
    restored = as_json(cli("ingest", docs, "--store", store, "--meta", "project=beacon", "--json"))
    assert restored["files"]["new"] == 1 and restored["chunks_written"] == 1


def test_changed_file_and_deleted_file_human_report(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    (docs / "tides.md").write_text("# Tides\n\nNeap tides are gentle.\n", encoding="utf-8")
    (docs / "keepers.txt").unlink()
    result = cli("ingest", docs, "--store", "numpy")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert any(line.startswith("changed") and "tides.md" in line for line in lines)
    assert any(line.startswith("deleted") and "keepers.txt" in line for line in lines)
    assert "files: 0 new, 1 changed, 1 unchanged, 1 deleted, 0 failed, 0 skipped" in result.stdout


def test_failed_file_exits_1_and_is_named(cli: RunCli, docs: Path) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 truncated garbage")
    result = cli("ingest", docs, "--store", "numpy", "--json")
    assert result.exit_code == 1
    report = as_json(result)
    failed = [d for d in report["details"] if d["status"] == "failed"]
    assert [d["source"] for d in failed] == ["broken.pdf"] and failed[0]["reason"]
    assert report["files"]["new"] == 3 and "1 file(s) failed" in result.stderr


def test_jsonl_with_a_bad_line_is_unchanged_on_the_next_run_and_still_reported(
    cli: RunCli, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "c.jsonl").write_text('{"text":"first record about tides"}\n{not json\n', encoding="utf-8")
    assert cli("ingest", folder, "--store", "numpy").exit_code == 1
    again = cli("ingest", folder, "--store", "numpy")
    assert again.exit_code == 1 and "1 file(s) had parts that could not be read" in again.stderr
    line = again.stdout.splitlines()[0]
    assert line.startswith("unchanged r/c.jsonl  (1 chunk); 1 error: 'c.jsonl' line 2: invalid JSON")
    assert "files: 0 new, 0 changed, 1 unchanged" in again.stdout
    assert "chunks: 0 embedded, 0 written, 0 deleted" in again.stdout


def test_usage_errors_exit_2_with_one_line(cli: RunCli, docs: Path, rag_home: Path) -> None:
    assert cli("ingest").exit_code == 2
    assert cli("ingest", docs / "missing").exit_code == 2
    bad_meta = cli("ingest", docs, "--meta", "novalue")
    assert bad_meta.exit_code == 2 and "key=value" in bad_meta.stderr
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    bad_filter = cli("query", "x", "--store", "numpy", "--filter", "source ==")
    assert (
        bad_filter.exit_code == 2
        and bad_filter.stderr.startswith("error: ")
        and "Traceback" not in bad_filter.stderr
    )
    both = cli("delete", "--store", "numpy", "--source", "a", "--filter", "x == 1")
    assert both.exit_code == 2 and "exactly one of --filter and --source" in both.stderr
    mismatch = cli("query", "x", "--store", "numpy", "--embedder", "hashing:16")
    assert mismatch.exit_code == 2 and "built with embedder 'hashing'" in mismatch.stderr
    missing = cli("info", "--store", "numpy", "--collection", "other")
    assert missing.exit_code == 1 and "no numpy collection 'other'" in missing.stderr
    assert missing.stderr.count("\n") == 1
    debug = cli("--debug", "info", "--store", "numpy", "--collection", "other")
    assert debug.exit_code == 1 and debug.exception is not None  # --debug lets the exception through


def test_query_uses_the_embedder_the_store_was_built_with(cli: RunCli, docs: Path) -> None:
    built = cli("ingest", docs, "--store", "numpy", "--embedder", "hashing:128", "--chunk-size", "50")
    assert built.exit_code == 0, built.stderr
    hits = as_json(cli("query", "tides flood the causeway", "--store", "numpy", "--json"))
    assert hits[0]["source"] == "tides.md"
    info = as_json(cli("info", "--store", "numpy", "--json"))
    assert (info["embedder"], info["dimensions"], info["chunk_size"]) == ("hashing:128", 128, 50)
    again = as_json(cli("ingest", docs, "--store", "numpy", "--json"))  # remembered chunking: nothing redone
    assert again["files"]["unchanged"] == 3


def test_delete_by_filter_asks_first(cli: RunCli, docs: Path) -> None:
    cli("ingest", docs, "--store", "numpy", "--meta", "year=2020")
    refused = cli("delete", "--store", "numpy", "--filter", "year == 2020", input="n\n")
    assert (
        refused.exit_code == 0
        and "nothing deleted" in refused.stderr
        and as_json(cli("info", "--store", "numpy", "--json"))["count"] > 0
    )
    accepted = cli("delete", "--store", "numpy", "--filter", "year == 2020", input="y\n")
    assert accepted.exit_code == 0 and as_json(cli("info", "--store", "numpy", "--json"))["count"] == 0
    assert cli("delete", "--store", "numpy", "--filter", "year == 2020").stderr.startswith("nothing matches")


def test_home_option_on_the_group_and_the_command(cli: RunCli, docs: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    assert cli("--home", elsewhere, "ingest", docs, "--store", "numpy").exit_code == 0
    assert (elsewhere / "stores.json").exists()
    assert as_json(cli("info", "--home", elsewhere, "--store", "numpy", "--json"))["count"] > 0
    assert cli("info", "--store", "numpy").exit_code == 1  # the default home has nothing


def test_installed_script_runs_in_a_subprocess(docs: Path, rag_home: Path) -> None:
    script = Path(sys.executable).with_name("rag")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from rag.cli import main; main()"]
    env = {**os.environ, "RAG_HOME": str(rag_home), "RAG_STORE": "numpy"}
    done = subprocess.run(
        [*command, "ingest", str(docs), "--json"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (
        json.loads(done.stdout)["files"]["new"] == 3 and done.stderr == ""
    )  # no progress bar off a terminal
    hits = subprocess.run(
        [*command, "query", "fog signals"], capture_output=True, text=True, env=env, check=False
    )
    assert hits.returncode == 0 and "keepers.txt" in hits.stdout.splitlines()[0]


def test_settings_and_embedder_specs() -> None:
    settings = Settings.from_env({"RAG_HOME": "/x", "RAG_STORE": "NUMPY", "RAG_CHUNK_OVERLAP": "5"})
    assert (settings.home, settings.store, settings.chunk_overlap) == (Path("/x"), "numpy", 5)
    with pytest.raises(ConfigError, match="RAG_CHUNK_SIZE must be an integer, got 'big'"):
        Settings.from_env({"RAG_CHUNK_SIZE": "big"})
    with pytest.raises(ConfigError, match="store must be one of chroma, numpy, pgvector; got 'faiss'"):
        Settings(store="faiss")
    with pytest.raises(ConfigError, match="collection name 'a b'"):
        Settings(collection="a b")
    assert build_embedder("hashing:64").dimensions == 64
    with pytest.raises(ConfigError, match="unknown embedder spec 'word2vec'"):
        build_embedder("word2vec")
