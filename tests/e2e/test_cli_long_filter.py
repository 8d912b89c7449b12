"""A filter of thousands of clauses through `rag query`: answered, with the source hint, never a crash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result


def test_a_filter_of_3000_clauses_is_answered_with_its_hint(cli: Callable[..., Result], docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    # `source` holds the path inside the root: written as the identity (`docs/...`), it finds nothing.
    text = " AND ".join(["source == 'docs/keepers.txt'"] * 3_000)
    result = cli("query", "fog signals", "--store", "numpy", "--filter", text)
    assert result.exit_code == 0, result.output
    assert "root == 'docs' AND source == 'keepers.txt'" in result.stderr + result.stdout
    too_long = " AND ".join(["source == 'keepers.txt'"] * 5_000)
    refused = cli("query", "fog signals", "--store", "numpy", "--filter", too_long)
    assert refused.exit_code == 2 and "the limit is 100000" in refused.stderr
