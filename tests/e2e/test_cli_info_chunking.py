"""`rag info` shows the chunk size and overlap in effect, never the word "default" (issue 18, item 9)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

RunCli = Callable[..., Result]


def test_info_shows_the_default_numbers(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    text = cli("info", "--store", "numpy")
    assert text.exit_code == 0, text.stderr
    line = next(line for line in text.stdout.splitlines() if line.startswith("chunking:"))
    assert line.split(":", 1)[1].strip() == "size 200, overlap 30 (the defaults)"
    facts = json.loads(cli("info", "--store", "numpy", "--json").stdout)
    assert (facts["chunk_size"], facts["chunk_overlap"], facts["chunking_defaults"]) == (200, 30, True)


def test_info_shows_the_numbers_given_at_ingest(cli: RunCli, docs: Path) -> None:
    built = cli("ingest", docs, "--store", "numpy", "--chunk-size", "20")
    assert built.exit_code == 0, built.stderr
    text = cli("info", "--store", "numpy").stdout
    assert "chunking:        size 20, overlap 19\n" in text  # the overlap default shrinks below the size
    facts = json.loads(cli("info", "--store", "numpy", "--json").stdout)
    assert (facts["chunk_size"], facts["chunk_overlap"], facts["chunking_defaults"]) == (20, 19, False)
