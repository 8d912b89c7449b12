"""`rag info` names a sentence-transformers model given as a folder by that folder, as `--embedder`
gave it, not by the folder's last part alone (`model` for `st:/models/minilm/model`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.rag.tiny_bert import build_tiny_bert

RunCli = Callable[..., Result]


@pytest.mark.slow
def test_info_shows_a_model_folder_as_the_spec_gave_it(cli: RunCli, docs: Path, tmp_path: Path) -> None:
    model = build_tiny_bert(tmp_path / "st")
    spec = f"st:{model}"
    assert cli("ingest", docs, "--store", "numpy", "--embedder", spec).exit_code == 0
    info = cli("info")
    assert info.exit_code == 0, info.stderr
    lines = info.stdout.splitlines()
    assert f"embedder:        {spec}" in lines
    assert f"embedding_model: {model}" in lines, lines
    # JSON keeps the name the store checks the model against.
    assert json.loads(cli("info", "--json").stdout)["embedding_model"] == model.name


def test_info_shows_a_named_model_as_recorded(cli: RunCli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    lines = cli("info").stdout.splitlines()
    assert "embedder:        hashing" in lines
    assert any(line.startswith("embedding_model: hashing-") for line in lines), lines
