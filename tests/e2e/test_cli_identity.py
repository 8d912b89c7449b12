"""Source identity through the command line: folders with the same file names, one file reached two
ways, and the identity shown by `rag info` and `rag query`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

RunCli = Callable[..., Result]


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_two_folders_with_a_readme_each_keep_both(cli: RunCli, tmp_path: Path) -> None:
    english, spanish = tmp_path / "en", tmp_path / "es"
    english.mkdir()
    spanish.mkdir()
    (english / "README.md").write_text("# Beacon\n\nThe lighthouse beacon turns at night.\n")
    (spanish / "README.md").write_text("# Faro\n\nEl faro gira de noche junto al beacon.\n")
    _json(cli("ingest", english, "--store", "numpy", "--json"))
    second = _json(cli("ingest", spanish, "--store", "numpy", "--json"))
    assert second["files"]["new"] == 1 and second["files"]["changed"] == second["files"]["deleted"] == 0
    info = _json(cli("info", "--store", "numpy", "--json"))
    assert info["sources"] == {"en/README.md": 1, "es/README.md": 1}
    assert info["roots"] == {"en": os.path.realpath(english), "es": os.path.realpath(spanish)}
    hits = _json(cli("query", "beacon", "--store", "numpy", "--mode", "lexical", "--json"))
    assert sorted(h["source_id"] for h in hits) == ["en/README.md", "es/README.md"]
    assert {(h["root"], h["source"]) for h in hits} == {("en", "README.md"), ("es", "README.md")}
    table = cli("query", "faro", "--store", "numpy", "--mode", "lexical")
    assert table.stdout.split()[5] == "es/README.md"
    text = cli("info", "--store", "numpy").stdout
    assert f"  en  {os.path.realpath(english)}" in text and "  es/README.md  (1 chunk)" in text


def test_a_file_given_after_its_folder_is_stored_once(cli: RunCli, tmp_path: Path) -> None:
    docs = tmp_path / "data" / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text("# Install\n\nMount the brass lamp on the tower.\n")
    (docs / "tides.md").write_text("# Tides\n\nSpring tides flood the causeway.\n")
    _json(cli("ingest", docs, "--store", "numpy", "--json"))
    again = _json(cli("ingest", docs / "guide" / "install.md", "--store", "numpy", "--json"))
    assert again["files"]["unchanged"] == 1 and again["chunks_written"] == 0
    assert again["details"][0]["source_id"] == "docs/guide/install.md"
    info = _json(cli("info", "--store", "numpy", "--json"))
    assert info["count"] == 2 and set(info["sources"]) == {"docs/guide/install.md", "docs/tides.md"}
    hits = _json(cli("query", "brass lamp tower", "--store", "numpy", "--json"))
    # never the same file twice, and tides.md (no word of the query, cosine 0) not at all
    assert [h["source_id"] for h in hits] == ["docs/guide/install.md"]

    deleted = cli("delete", "--store", "numpy", "--source", "docs/tides.md", "--yes")
    assert deleted.exit_code == 0 and "deleted 1 chunk(s) from 1 source(s)" in deleted.stdout
    assert set(_json(cli("info", "--store", "numpy", "--json"))["sources"]) == {"docs/guide/install.md"}
