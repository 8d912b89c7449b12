"""`rag query` and `rag ask` show the rank score and the cosine --threshold compares (issue 18, item 1)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

RunCli = Callable[..., Result]
DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A RAG_HOME with the sample docs ingested into both stores, built once for this module."""
    from click.testing import CliRunner

    from rag.cli import main

    home = tmp_path_factory.mktemp("scores-home")
    for store in ("numpy", "chroma"):
        args = ["--home", str(home), "ingest", str(DATA / "docs"), "--store", store]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    return home


def _hits(cli: RunCli, home: Path, *args: Any) -> list[dict[str, Any]]:
    result = cli("query", *args, "--home", home, "--json")
    assert result.exit_code == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


@pytest.mark.parametrize("store", ["numpy", "chroma"])
def test_hybrid_hits_carry_the_cosine_the_threshold_compares(
    cli: RunCli, sample_home: Path, store: str
) -> None:
    query = ["error E-214 valve stuck", "--store", store, "--top-k", "8"]
    hybrid = _hits(cli, sample_home, *query)
    assert {row["score_kind"] for row in hybrid} == {"hybrid-weighted"} and hybrid[0]["score"] == 1.0
    # The cosine shown is exactly the vector mode's score of the same chunk.
    vector = _hits(cli, sample_home, *query, "--mode", "vector", "--top-k", "200")
    assert {row["score_kind"] for row in vector} == {"cosine"}
    cosine_of = {row["id"]: row["score"] for row in vector}
    assert all(row["cosine"] == cosine_of[row["id"]] for row in vector)
    assert all(row["cosine"] == cosine_of[row["id"]] for row in hybrid)
    lexical = _hits(cli, sample_home, *query, "--mode", "lexical")
    assert {row["score_kind"] for row in lexical} == {"bm25"} and lexical[0]["score"] > 1.0
    # A threshold between the hits' cosines keeps exactly the hits at or above it.
    cosines = sorted(row["cosine"] for row in hybrid)
    threshold = (cosines[len(cosines) // 2 - 1] + cosines[len(cosines) // 2]) / 2
    kept = _hits(cli, sample_home, *query, "--threshold", f"{threshold:.6f}")
    assert kept and all(row["cosine"] >= threshold for row in kept)
    above = {row["id"] for row in hybrid if row["cosine"] >= threshold}
    assert above <= {row["id"] for row in kept}


def test_text_output_labels_both_numbers(cli: RunCli, sample_home: Path) -> None:
    result = cli("query", "error E-214", "--home", sample_home, "--store", "numpy", "--top-k", "3")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert all(re.match(r"  \d  score \d\.\d{3}  cosine \d\.\d{3}  \S+  p\.", line) for line in lines), lines
    assert result.stderr.splitlines() == [
        "score ranks the hits (hybrid-weighted); cosine is the similarity that --threshold compares"
    ]
    help_text = " ".join(cli("query", "--help").stdout.split())
    assert "--threshold compares in every mode" in help_text
    assert "It compares the cosine shown beside each hit, not the rank score" in help_text


def test_ask_sources_show_score_and_cosine(cli: RunCli, sample_home: Path) -> None:
    args = ["ask", "error E-214", "--home", sample_home, "--store", "numpy", "--top-k", "2", "--no-stream"]
    text = cli(*args)
    assert text.exit_code == 0, text.stderr
    sources = text.stdout.split("\nSources:\n", 1)[1].splitlines()
    # One line per file: several passages of one file share it, their numbers and scores in order.
    number = r"\d\.\d{3}"
    numbers = rf"{number}(?: / {number})*"
    line_re = rf"  \[\d(?:, \d)*\] \S+(?:, chunks \d+(?:, \d+)*)? \(score {numbers}, cosine {numbers}\)"
    assert sources and all(re.fullmatch(line_re, line) for line in sources), sources
    data = json.loads(cli(*args, "--json").stdout)
    query = _hits(cli, sample_home, "error E-214", "--store", "numpy", "--top-k", "2")
    assert [(s["id"], s["score"], s["cosine"]) for s in data["sources"]] == [
        (row["id"], row["score"], row["cosine"]) for row in query
    ]
