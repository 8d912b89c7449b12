"""A filter of thousands of clauses through `rag query`: answered, never a crash; past the limit, refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result


def test_a_filter_of_3000_clauses_is_answered(cli: Callable[..., Result], docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    # The file named by its identity (`docs/...`, as `rag query` shows it) in every clause.
    text = " AND ".join(["source == 'docs/keepers.txt'"] * 3_000)
    result = cli("query", "fog signals", "--store", "numpy", "--filter", text)
    assert result.exit_code == 0, result.output
    assert "docs/keepers.txt" in result.stdout and "fog signals" in result.stdout
    too_long = " AND ".join(["source == 'keepers.txt'"] * 5_000)
    refused = cli("query", "fog signals", "--store", "numpy", "--filter", too_long)
    assert refused.exit_code == 2 and "the limit is 100000" in refused.stderr
