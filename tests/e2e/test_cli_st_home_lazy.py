"""Commands that never embed open a sentence-transformers home without loading its model.

Loading a model imports torch and reads its weights: about 20 s for MiniLM on two busy cores. `rag info`,
`rag delete` and a lexical `rag query` need only the vector length the home recorded. The test removes
the model's weights after ingesting: those commands still work, and a search that must embed the
question fails naming the model.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

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
    weights = [p for p in model.rglob("*") if p.suffix in (".safetensors", ".bin")]
    assert weights, sorted(model.rglob("*"))
    for path in weights:
        path.unlink()
    shutil.rmtree(tmp_path / "st" / "bert", ignore_errors=True)  # the copy the model was built from

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
