"""A real docs tree through `rag ingest` and `rag query`/`rag ask`: folder and language filters, AsciiDoc,
`--as-text`, the supported types in the help, clean chunks, and JSON Lines record citations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from ingest.readers import SUPPORTED_SUFFIXES

Cli = Callable[..., Result]


def _tree(root: Path) -> Path:
    site = root / "site"
    for folder in ("docs/en", "docs/es"):
        (site / folder).mkdir(parents=True)
    (site / "docs/en/cors.md").write_text(
        "# CORS { #cors }\n\n## Add the middleware { #add }\n\n"
        "You can add the CORS middleware to your application with <kbd>add_middleware</kbd>.\n",
        encoding="utf-8",
    )
    (site / "docs/es/cors.md").write_text(
        "# CORS\n\n## Añadir el middleware\n\n"
        "Puedes añadir el middleware de CORS a tu aplicación con add_middleware, como en el ejemplo.\n",
        encoding="utf-8",
    )
    (site / "docs/en/advisors.adoc").write_text(
        "= Advisors\n\n== Ordering\n\nNOTE: The advisors run in the order of their middleware values.\n",
        encoding="utf-8",
    )
    (site / "app.cfg").write_text("middleware = cors\n", encoding="utf-8")
    return site


def _hits(cli: Cli, *args: str) -> list[dict[str, object]]:
    result = cli("query", "add the CORS middleware", "--store", "numpy", "--top-k", "10", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_folder_and_language_filters_keep_one_part_of_the_tree(cli: Cli, tmp_path: Path) -> None:
    site = _tree(tmp_path)
    result = cli("ingest", site, "--store", "numpy", "--as-text", ".cfg")
    assert result.exit_code == 0, result.stderr
    everything = _hits(cli)
    assert {h["source"] for h in everything} == {
        "docs/en/cors.md",
        "docs/es/cors.md",
        "docs/en/advisors.adoc",
        "app.cfg",
    }
    english = _hits(cli, "--filter", "dirs CONTAINS 'docs/en'")
    assert {h["source"] for h in english} == {"docs/en/cors.md", "docs/en/advisors.adoc"}
    spanish = _hits(cli, "--filter", "lang == 'es'")
    assert [h["source"] for h in spanish] == ["docs/es/cors.md"]
    by_source = {h["source"]: h for h in everything}
    cors = by_source["docs/en/cors.md"]
    assert cors["metadata"]["headings"] == ["Add the middleware"]  # type: ignore[index]
    assert "{ #" not in str(cors["text"]) and "<kbd>" not in str(cors["text"])
    assert by_source["docs/en/advisors.adoc"]["text"] == (
        "Ordering\n\nThe advisors run in the order of their middleware values."
    )


def test_without_as_text_other_suffixes_are_skipped(cli: Cli, tmp_path: Path) -> None:
    site = _tree(tmp_path)
    result = cli("ingest", site, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    assert "skipped 1 file: .cfg" in result.stderr
    bad = cli("ingest", site, "--store", "numpy", "--as-text", "a b")
    assert bad.exit_code == 2 and "not a file suffix: 'a b'" in bad.stderr


def test_help_lists_the_supported_types(cli: Cli) -> None:
    result = cli("ingest", "--help")
    assert result.exit_code == 0
    for suffix in SUPPORTED_SUFFIXES:  # kept in step with the readers registered
        assert f" {suffix}" in result.stdout, suffix
    assert "--as-text" in result.stdout


def test_jsonl_records_are_cited_by_their_id(cli: Cli, tmp_path: Path) -> None:
    corpus = tmp_path / "beir" / "corpus.jsonl"
    corpus.parent.mkdir()
    records = [
        {"_id": "12209494", "title": "Tides", "text": "Spring tides flood the causeway twice a month."},
        {"_id": "77", "title": "Lamps", "text": "The beacon lamp burns whale oil."},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ingested = cli("ingest", corpus, "--store", "numpy", "--id-field", "_id", "--text-field", "title,text")
    assert ingested.exit_code == 0, ingested.stderr
    found = cli("query", "when do spring tides flood", "--store", "numpy", "--top-k", "1")
    assert found.exit_code == 0, found.stderr
    assert "beir/corpus.jsonl#12209494" in found.stdout
    answer = cli("ask", "When do spring tides flood the causeway?", "--store", "numpy", "--top-k", "1")
    assert answer.exit_code == 0, answer.stderr
    assert (
        "[beir/corpus.jsonl#12209494]" in answer.stdout
    )  # the quoted sentence's citation, as query names it
    assert "[1] beir/corpus.jsonl#12209494" in answer.stdout  # the sources list


def test_answers_never_quote_a_bare_heading(cli: Cli, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "upload.md").write_text(
        "# Request Files\n\n## Optional File Upload { #optional-file-upload }\n\n"
        "Make a file upload optional with a default of None.\n",
        encoding="utf-8",
    )
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    answer = cli("ask", "Is the file upload optional?", "--store", "numpy", "--top-k", "1")
    assert answer.exit_code == 0, answer.stderr
    quoted = [line for line in answer.stdout.splitlines() if line.startswith("- ")]
    assert quoted == ["- Make a file upload optional with a default of None. [docs/upload.md]"]


def test_files_without_a_suffix_are_read_with_as_text_dot(cli: Cli, tmp_path: Path) -> None:
    """A /usr/share/doc-like folder: README and copyright have no suffix; a binary without one stays out."""
    package = tmp_path / "lantern"
    package.mkdir()
    (package / "README").write_text("The lantern package trims the wick every evening.\n", encoding="utf-8")
    (package / "copyright").write_text("Copyright the harbour keepers. Licence: MIT.\n", encoding="utf-8")
    (package / "lantern-bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    (package / "notes.md").write_text("# Notes\n\nOil the hinges.\n", encoding="utf-8")
    skipped = cli("ingest", package, "--store", "numpy")
    assert skipped.exit_code == 0, skipped.stderr
    assert "skipped 3 files: (no suffix) x3" in skipped.stderr
    assert "hint: --as-text . reads files without a suffix (README, NEWS, copyright) as plain text" in (
        skipped.stderr
    )
    read = cli("ingest", package, "--store", "numpy", "--as-text", ".", "--json")
    assert read.exit_code == 0, read.stderr
    assert json.loads(read.stdout)["files"]["new"] == 2
    assert "skipped 1 file: (no suffix) x1" in read.stderr and "hint:" not in read.stderr  # the binary
    found = cli("query", "wick keepers hinges", "--store", "numpy", "--top-k", "10", "--json")
    sources = {h["source"] for h in json.loads(found.stdout)}
    assert {"README", "copyright", "notes.md"} <= sources and "lantern-bin" not in sources


def test_a_folder_of_suffixless_files_alone_says_how_to_read_them(cli: Cli, tmp_path: Path) -> None:
    package = tmp_path / "bare"
    package.mkdir()
    (package / "NEWS").write_text("Version 2 lights the beacon sooner.\n", encoding="utf-8")
    result = cli("ingest", package, "--store", "numpy")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-2:] == [
        f"error: nothing could be read from {str(package)!r}: skipped 1 file: (no suffix) x1",
        "hint: --as-text . reads files without a suffix (README, NEWS, copyright) as plain text",
    ]


def test_readme_dot_something_gets_an_as_text_hint(cli: Cli, tmp_path: Path) -> None:
    """/usr/share/doc/git holds README.Debian and README.source: text by name, skipped by suffix; most of
    its files are gzip-compressed, read as the suffix inside says."""
    import gzip

    package = tmp_path / "git"
    package.mkdir()
    (package / "README.Debian").write_text("Debian keeps the lantern docs in /usr/share.\n", encoding="utf-8")
    (package / "README.source").write_text(
        "The lantern source lives in the harbour repo.\n", encoding="utf-8"
    )
    (package / "NEWS.Debian.gz").write_bytes(gzip.compress(b"The beacon now turns twice a minute.\n"))
    (package / "howto.md.gz").write_bytes(gzip.compress(b"# Howto\n\nPolish the lens with vinegar.\n"))
    (package / "notes.md").write_text("# Notes\n\nOil the hinges.\n", encoding="utf-8")
    first = cli("ingest", package, "--store", "numpy")
    assert first.exit_code == 0, first.stderr
    assert "skipped 3 files: .debian x2, .source x1" in first.stderr
    hint = (
        "hint: --as-text .debian --as-text .source reads NEWS.Debian.gz, README.Debian, README.source "
        "as plain text"
    )
    assert hint in first.stderr.splitlines()
    again = cli(
        "ingest", package, "--store", "numpy", "--as-text", ".debian", "--as-text", ".source", "--json"
    )
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["files"]["new"] == 3
    assert "hint:" not in again.stderr
    found = cli("query", "beacon turns lens vinegar", "--store", "numpy", "--top-k", "10", "--json")
    sources = {h["source"] for h in json.loads(found.stdout)}
    assert {"NEWS.Debian.gz", "howto.md.gz"} <= sources


def test_the_hint_examples_run() -> None:
    import doctest
    import importlib

    # `rag.cli.ingest` as an attribute is the click command; the module is imported by name.
    result = doctest.testmod(importlib.import_module("rag.cli.ingest"))
    assert result.attempted > 0 and result.failed == 0
