"""Commands that never embed open a sentence-transformers home without loading its model.

Loading a model imports torch and reads its weights: about 20 s for MiniLM on two busy cores. `rag info`,
`rag delete` and a lexical `rag query` need only the vector length the home recorded, and an `rag ingest`
whose files are unchanged only the model's input limit (it sizes the chunks, so it is part of their
ids). The tests remove the model's weights after ingesting: those commands still work, and one that must
embed or split fails naming the model.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.rag.tiny_bert import build_tiny_bert

RunCli = Callable[..., Result]
STORE = ("--store", "numpy")


@pytest.mark.slow
def test_info_delete_and_lexical_query_need_no_model(cli: RunCli, docs: Path, tmp_path: Path) -> None:
    model = build_tiny_bert(tmp_path / "st")
    ingested = cli("ingest", docs, *STORE, "--embedder", f"st:{model}")
    assert ingested.exit_code == 0, ingested.stderr
    _remove_weights(model)

    info = cli("info", *STORE)
    assert info.exit_code == 0, info.stderr
    assert "dimensions:      32" in info.stdout.splitlines()
    lexical = cli("query", "brass bolts", *STORE, "--mode", "lexical", "--top-k", "1")
    assert lexical.exit_code == 0, lexical.stderr
    assert "docs/guide/install.md" in lexical.stdout
    deleted = cli("delete", "--source", "docs/tides.md", "--yes", *STORE)
    assert deleted.exit_code == 0 and deleted.stdout.startswith("deleted "), deleted.stderr

    embedding = cli("query", "brass bolts", *STORE, "--mode", "vector")
    assert embedding.exit_code == 1 and str(model) in embedding.stderr, embedding.stderr


@pytest.mark.slow
def test_unchanged_ingest_needs_no_model(cli: RunCli, docs: Path, rag_home: Path, tmp_path: Path) -> None:
    model = build_tiny_bert(tmp_path / "st")
    first = _ingest(cli, docs, "--embedder", f"st:{model}")
    assert first["chunks_embedded"] > 0
    records = rag_home / "stores.json"
    recorded = json.loads(records.read_text(encoding="utf-8"))
    assert recorded["numpy:rag"]["max_tokens"] == 64  # the tiny model's limit, below the chunk size
    # A home recorded before the input limit was: its next ingest records it and keeps every chunk.
    del recorded["numpy:rag"]["max_tokens"]
    records.write_text(json.dumps(recorded), encoding="utf-8")
    upgraded = _ingest(cli, docs)
    assert _statuses(upgraded) == {"unchanged"} and upgraded["chunks_embedded"] == 0
    assert json.loads(records.read_text(encoding="utf-8"))["numpy:rag"]["max_tokens"] == 64
    # A new file is split and embedded with the model.
    (docs / "fog.md").write_text("# Fog\n\nThe horn sounds every minute in fog.\n", encoding="utf-8")
    added = _ingest(cli, docs)
    assert [d["source"] for d in added["details"] if d["status"] == "new"] == ["fog.md"]
    assert added["chunks_embedded"] == 1
    _remove_weights(model)

    unchanged = _ingest(cli, docs)
    assert _statuses(unchanged) == {"unchanged"} and unchanged["chunks_embedded"] == 0
    (docs / "fog.md").write_text("# Fog\n\nThe horn sounds twice a minute in fog.\n", encoding="utf-8")
    changed = cli("ingest", docs, *STORE)
    assert changed.exit_code == 1 and str(model) in changed.stdout + changed.stderr, changed.stderr


def _ingest(cli: RunCli, docs: Path, *options: str) -> dict[str, Any]:
    result = cli("ingest", docs, *STORE, "--json", *options)
    assert result.exit_code == 0, result.stdout + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _statuses(report: dict[str, Any]) -> set[str]:
    return {detail["status"] for detail in report["details"]}


def _remove_weights(model: Path) -> None:
    """Delete the model's weights, and the BERT folder it was built from: loading it now fails."""
    weights = [p for p in model.rglob("*") if p.suffix in (".safetensors", ".bin")]
    assert weights, sorted(model.rglob("*"))
    for path in weights:
        path.unlink()
    shutil.rmtree(model.parent / "bert", ignore_errors=True)
