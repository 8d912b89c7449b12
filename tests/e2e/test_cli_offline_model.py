"""`rag ingest --embedder st:NAME` offline: one line naming the local-folder option (issue 18, item 3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result


def test_ingest_with_an_uncached_hub_model_offline(
    cli: Callable[..., Result], docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = cli("ingest", docs, "--store", "numpy", "--embedder", "st:rag-tests-no-such-model")
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("error: sentence-transformers model 'rag-tests-no-such-model' is not in ")
    assert line.endswith(
        "HF_HUB_OFFLINE is set; download it once while online, or use a local folder: "
        "--embedder st:/path/to/model"
    )
