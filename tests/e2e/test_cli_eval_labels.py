"""`rag eval` checks a questions file's sources against the store before measuring.

Every command shows a file as `ROOT/PATH` (`docs/tides.md`), while its chunks carry the path inside the
root (`tides.md`). A label copied from them is read as the path when exactly one root holds that file,
without a word, as a filter reads it; a label naming no chunk at all is a warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

Cli = Callable[..., Result]
QUESTION = "When do spring tides flood the causeway?"


def _questions(path: Path, *sources: str) -> Path:
    rows = [{"question": QUESTION, "relevant": [{"source": source}]} for source in sources]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _rows(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)["settings"]
    return rows


def _metrics(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    return [(row["recall"], row["ndcg"]) for row in rows]


def test_a_label_with_the_root_reads_as_the_path_in_it(cli: Cli, docs: Path, tmp_path: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    hits = json.loads(cli("query", QUESTION, "--top-k", "1", "--json").stdout)
    assert (hits[0]["metadata"]["root"], hits[0]["metadata"]["source"]) == ("docs", "tides.md")
    args = ("--top-k", "1,3", "--filter", "none", "--json")
    plain = _rows(cli("eval", _questions(tmp_path / "plain.jsonl", "tides.md"), *args))
    result = cli("eval", _questions(tmp_path / "rooted.jsonl", "docs/tides.md"), *args)
    assert _metrics(_rows(result)) == _metrics(plain) == [(1.0, 1.0), (1.0, 1.0)]
    assert "warning" not in result.stderr  # the name every command shows is no mistake
    tuned = cli("eval", tmp_path / "rooted.jsonl", "--top-k", "1", "--tune", "--dry-run", "--json")
    assert tuned.exit_code == 0, tuned.stderr
    assert json.loads(tuned.stdout)["best"]["ndcg"] == 1.0
    assert "warning" not in tuned.stderr


def test_a_label_naming_no_chunk_is_a_warning(cli: Cli, docs: Path, tmp_path: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    questions = _questions(tmp_path / "q.jsonl", "tides.md", "guide/setup.md", "guide/setup.md")
    result = cli("eval", questions, "--top-k", "1", "--filter", "none", "--json")
    assert _metrics(_rows(result)) == [(1 / 3, 1 / 3)]
    assert result.stderr.count("warning:") == 1
    assert (
        "warning: no chunk in the store has source 'guide/setup.md' (question 2, 3): it can never be "
        "found; label a file as `rag query` and `rag ask` name it, or by its path inside the folder you "
        "ingested"
    ) in result.stderr


def test_a_path_two_roots_hold_is_not_guessed(cli: Cli, docs: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "tides.md").write_text("# Tides\n\nNeap tides leave the causeway dry.\n", encoding="utf-8")
    for folder in (docs, other):
        assert cli("ingest", folder, "--store", "numpy").exit_code == 0
    result = cli("eval", _questions(tmp_path / "q.jsonl", "docs/tides.md"), "-k", "1", "--filter", "none")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "warning: label 'docs/tides.md' (question 1) cannot score: roots docs, other all hold 'tides.md' "
        "and relevance is judged on the path alone; label it 'tides.md' (each copy counts)"
    )


def test_query_filtering_source_by_identity_finds_the_file(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    for written in ("source == 'docs/tides.md'", "root == 'docs' AND source == 'tides.md'"):
        found = cli("query", QUESTION, "--filter", written, "--json")
        assert found.exit_code == 0 and not found.stderr, found.stderr
        assert [hit["source_id"] for hit in json.loads(found.stdout)] == ["docs/tides.md"]
    elsewhere = cli("query", QUESTION, "--filter", "source IN ['docs/none.md']")
    # no file to point at: no guess, and the filter is named as what selects nothing
    assert elsewhere.stderr == "no chunk matches --filter \"source IN ['docs/none.md']\"\n"


def test_ask_filtering_source_by_identity_finds_the_file(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("ask", QUESTION, "--filter", "source == 'docs/tides.md'", "--no-stream", "--json")
    assert result.exit_code == 0 and not result.stderr, result.stderr
    assert [row["citation"] for row in json.loads(result.stdout)["sources"]] == ["docs/tides.md"]
