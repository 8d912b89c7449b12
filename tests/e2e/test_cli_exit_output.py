"""Exit codes and output of the CLI: declining a delete, a closed pipe, `--top-k 0`, progress lines
off a terminal, and `rag info` on a home of many sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rag.cli import main
from rag.cli.info import SHOWN_SOURCES
from tests.e2e.serve_helpers import rag_env


def _rag(args: list[str], env: dict[str, str]) -> Result:
    """`rag ARGS` in this process (click's runner: stderr is not a terminal) with `env` applied."""
    names = {name: None for name in os.environ if name.startswith(("RAG_", "OPENAI_"))}
    return CliRunner().invoke(main, args, env={**names, **env}, catch_exceptions=False)


LONG = "n" * 230  # long names: the source list outgrows a pipe's buffer
FILES = 300


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A home holding FILES small files with long names (numpy store)."""
    folder = tmp_path_factory.mktemp("many")
    docs = folder / "docs"
    docs.mkdir()
    for i in range(FILES):
        (docs / f"{LONG}-{i:04d}.txt").write_text(f"Lamp {i} is lit at dusk.\n", "utf-8")
    env = rag_env(folder / "home")
    result = _rag(["ingest", str(docs)], env)
    assert result.exit_code == 0, result.stderr
    return docs, env


def test_declining_a_delete_deletes_nothing_and_exits_0(cli: Callable[..., Result], docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    before = json.loads(cli("info", "--store", "numpy", "--json").stdout)["count"]
    result = cli("delete", "--store", "numpy", "--source", "docs/keepers.txt", input="n\n")
    assert result.exit_code == 0, result.output
    assert "nothing deleted" in result.stderr and "Aborted" not in result.output
    # The question names the file as the user wrote it, not the filter it became.
    assert result.stderr.startswith("Delete 1 chunk(s) of 'docs/keepers.txt'? [y/N]: ")
    assert json.loads(cli("info", "--store", "numpy", "--json").stdout)["count"] == before


def test_a_delete_left_unanswered_says_how_to_delete_without_asking(
    cli: Callable[..., Result], docs: Path
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    before = json.loads(cli("info", "--store", "numpy", "--json").stdout)["count"]
    result = cli("delete", "--store", "numpy", "--source", "docs/keepers.txt", input="")  # `< /dev/null`
    assert result.exit_code == 1, result.output
    last = result.stderr.splitlines()[-1]
    assert last == "error: no answer, so nothing deleted; --yes deletes without asking"
    assert "Aborted" not in result.output
    assert json.loads(cli("info", "--store", "numpy", "--json").stdout)["count"] == before


def test_a_delete_matching_nothing_names_what_was_asked(cli: Callable[..., Result], docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    missing = cli("delete", "--source", "keeper.txt", "--yes")
    assert missing.exit_code == 0, missing.output
    assert missing.stderr == (
        "nothing matches --source 'keeper.txt' (rag info --sources lists the sources); nothing deleted\n"
    )
    none = cli("delete", "--filter", "year == 2020", "--yes")
    assert none.stderr == "nothing matches --filter 'year == 2020'; nothing deleted\n"


def test_a_closed_pipe_ends_the_command_quietly(many: tuple[Path, dict[str, str]]) -> None:
    _, env = many
    command = [sys.executable, "-c", "from rag.cli import main; main()", "info", "--sources"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first = [process.stdout.readline() for _ in range(2)]  # `| head -2`
    process.stdout.close()
    error = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=60) == 0, error
    assert first[0].startswith(b"store:") and error == b""


def test_info_lists_the_first_sources_and_counts_the_rest(many: tuple[Path, dict[str, str]]) -> None:
    _, env = many
    summary = _rag(["info"], env).stdout.splitlines()
    listed = [line for line in summary if LONG in line]
    assert len(listed) == SHOWN_SOURCES
    assert f"sources:         {FILES}" in summary
    assert summary[-1] == f"  ... and {FILES - SHOWN_SOURCES} more (rag info --sources lists them all)"
    every = _rag(["info", "--sources"], env).stdout
    assert sum(LONG in line for line in every.splitlines()) == FILES
    none = _rag(["info", "--no-sources"], env).stdout.splitlines()
    assert not any(LONG in line for line in none) and none[-1] == f"sources:         {FILES}"
    assert len(json.loads(_rag(["info", "--json"], env).stdout)["sources"]) == FILES


@pytest.mark.parametrize(
    "command", [["query", "lamp"], ["ask", "lamp"], ["chat"], ["serve"], ["eval", "q.jsonl"]]
)
def test_top_k_0_is_refused_by_every_command(cli: Callable[..., Result], command: list[str]) -> None:
    result = cli(*command, "--top-k", "0")
    assert result.exit_code == 2
    assert "Invalid value for '--top-k'" in result.stderr and ">=1" in result.stderr.replace(" ", "")


def test_progress_goes_to_stderr_as_plain_lines_off_a_terminal(
    many: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    docs, env = many
    fresh = {**env, "RAG_HOME": str(tmp_path / "home"), "RAG_PROGRESS_INTERVAL": "0"}
    ingested = _rag(["ingest", str(docs), "--json"], fresh)
    assert ingested.exit_code == 0, ingested.stderr
    lines = [line for line in ingested.stderr.splitlines() if line.startswith("ingest: [")]
    assert "\r" not in ingested.stderr and len(lines) > 2
    assert lines[-1].split("]")[1].startswith(f" {FILES}/{FILES} files")
    assert json.loads(ingested.stdout)["files"]["new"] == FILES  # stdout is the result alone
    questions = tmp_path / "q.jsonl"
    rows = [{"question": f"lamp {i}", "relevant": [{"source": f"{LONG}-{i:04d}.txt"}]} for i in range(3)]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    evaluated = _rag(["eval", str(questions), "--top-k", "1,2", "--mode", "vector,lexical"], fresh)
    assert evaluated.exit_code == 0, evaluated.stderr
    counts = [line for line in evaluated.stderr.splitlines() if line.startswith("eval: ")]
    assert counts[0] == "eval: 1/6 searches (16%)" and counts[-1] == "eval: 6/6 searches (100%)"
    quiet = _rag(["ingest", str(docs)], {**fresh, "RAG_PROGRESS_INTERVAL": "60"})
    assert "ingest: [" not in quiet.stderr  # a run shorter than the interval prints no progress


def test_a_conversation_id_is_trimmed_as_the_server_trims_it(cli: Callable[..., Result], docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("chat", "--store", "numpy", "--conversation", " café\t", input="/exit\n")
    assert result.exit_code == 0, result.output
    assert "conversation café (new; resume with --conversation café)" in result.stderr
