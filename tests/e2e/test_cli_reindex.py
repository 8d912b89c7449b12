"""`rag reindex` rebuilds a Chroma home's BM25 index after writes made with other tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

RunCli = Callable[..., Result]


def _lexical(cli: RunCli, text: str) -> list[str]:
    result = cli("query", text, "--mode", "lexical", "--json")
    assert result.exit_code == 0, result.stderr
    return [row["text"] for row in json.loads(result.stdout)]


def test_reindex_picks_up_a_record_written_with_raw_chromadb(cli: RunCli, rag_home: Path, docs: Path) -> None:
    assert cli("ingest", docs).exit_code == 0
    from rag.cli._common import DEFAULT_EMBEDDER, build_embedder
    from stores import ChromaVectorStore

    model = build_embedder(DEFAULT_EMBEDDER)
    with ChromaVectorStore(model, path=rag_home / "chroma") as store:
        raw: Any = store.chroma_collection
        raw.add(ids=["raw"], embeddings=model.embed(["zeppelin hangar"]), documents=["zeppelin hangar"])
    assert _lexical(cli, "zeppelin") == []  # the index reflects this toolkit's writes only
    stale = cli("info")
    assert stale.exit_code == 0, stale.stderr
    assert "lexical index:   stale: the collection changed outside this toolkit" in stale.stdout
    assert json.loads(cli("info", "--json").stdout)["lexical_index_current"] is False
    result = cli("reindex")
    assert result.exit_code == 0, result.stderr
    assert "rebuilt the BM25 index" in result.stdout
    assert _lexical(cli, "zeppelin") == ["zeppelin hangar"]
    assert "lexical index:   current" in cli("info").stdout
