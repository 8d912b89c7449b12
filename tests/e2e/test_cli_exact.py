"""`rag query --exact` and `rag ask --exact`: exact on the numpy store, refused on a Chroma home.

Chroma's HNSW index is approximate (docs/stores.md gives its measured recall), so an exact request on a
Chroma home fails with one line naming the exact stores, instead of quietly answering approximately.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

RunCli = Callable[..., Result]
QUERIES = [" ".join(f"w{(i * 37 + j * 11) % 300}" for j in range(4)) for i in range(12)]


def _notes(folder: Path) -> Path:
    rng = random.Random(7)
    folder.mkdir()
    for i in range(60):
        words = " ".join(f"w{rng.randrange(300)}" for _ in range(6))
        (folder / f"note{i:04d}.txt").write_text(words + "\n", encoding="utf-8")
    return folder


def _hits(cli: RunCli, *args: Any) -> list[tuple[str, float]]:
    result = cli("query", *args, "--json", "--top-k", 10)
    assert result.exit_code == 0, result.stderr
    return [(row["id"], row["score"]) for row in json.loads(result.stdout)]


def test_exact_requests_run_on_numpy_and_are_refused_on_chroma(cli: RunCli, tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes")
    for store in ("chroma", "numpy"):
        result = cli("ingest", notes, "--store", store)
        assert result.exit_code == 0, result.stderr
    for text in QUERIES[:3]:
        truth = _hits(cli, text, "--store", "numpy", "--mode", "vector")
        assert _hits(cli, text, "--store", "numpy", "--mode", "vector", "--exact") == truth
        for command in ("query", "ask"):
            refused = cli(command, text, "--store", "chroma", "--exact")
            assert refused.exit_code == 2 and "numpy" in refused.stderr and "pgvector" in refused.stderr
            assert "Traceback" not in refused.stderr
