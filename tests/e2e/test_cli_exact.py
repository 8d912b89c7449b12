"""`rag query --exact` and `rag ask --exact` on a Chroma home where HNSW misses true neighbours (issue 17).

The home's collection is created beforehand with a sparse HNSW graph (4 neighbours, `ef_search` 10), as
docs/exactness.md shows, so Chroma's default search visibly misses neighbours at a thousand chunks; the
same files ingested into the numpy store (always exact) give the reference answers.
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
    for i in range(1000):
        words = " ".join(f"w{rng.randrange(300)}" for _ in range(6))
        (folder / f"note{i:04d}.txt").write_text(words + "\n", encoding="utf-8")
    return folder


def _sparse_collection(home: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    from rag.cli._common import DEFAULT_EMBEDDER, build_embedder
    from stores.chroma.client import close_client

    model = build_embedder(DEFAULT_EMBEDDER)
    client = chromadb.PersistentClient(
        path=str(home / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    client.create_collection(
        "rag",
        embedding_function=None,
        metadata={"rag:embedding_model": model.name, "rag:dimensions": model.dimensions},
        configuration={"hnsw": {"space": "ip", "ef_search": 10, "ef_construction": 20, "max_neighbors": 4}},
    )
    close_client(client)


def _hits(cli: RunCli, *args: Any) -> list[tuple[str, float]]:
    result = cli("query", *args, "--json", "--top-k", 10)
    assert result.exit_code == 0, result.stderr
    return [(row["id"], row["score"]) for row in json.loads(result.stdout)]


def test_exact_queries_and_answers_equal_the_numpy_store(cli: RunCli, rag_home: Path, tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes")
    _sparse_collection(rag_home)
    for store in ("chroma", "numpy"):
        result = cli("ingest", notes, "--store", store)
        assert result.exit_code == 0, result.stderr
    missed = 0
    for text in QUERIES:
        truth = _hits(cli, text, "--store", "numpy", "--mode", "vector")
        assert _hits(cli, text, "--store", "chroma", "--mode", "vector", "--exact") == truth
        default = _hits(cli, text, "--store", "chroma", "--mode", "vector")
        missed += len({i for i, _ in truth} - {i for i, _ in default})
        for mode in ("hybrid", "lexical"):
            reference = _hits(cli, text, "--store", "numpy", "--mode", mode)
            assert _hits(cli, text, "--store", "chroma", "--mode", mode, "--exact") == reference
    assert missed > 0  # HNSW does miss here, so the flag is what made the answers exact
    answers = [
        json.loads(cli("ask", QUERIES[0], "--store", store, "--json", *flags).stdout)["sources"]
        for store, flags in (("chroma", ["--exact"]), ("numpy", []))
    ]
    assert [row["id"] for row in answers[0]] == [row["id"] for row in answers[1]]
