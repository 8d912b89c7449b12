"""A file is found by the name every command shows for it (`docs/guide/install.md`, its root and path)
as by its path in the root (`guide/install.md`, its `source`): in `--filter` and from Python."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag import ChatClient, Document, ExtractiveChatModel, HashingEmbedding, QuestionAnswerAdvisor
from stores import NumpyVectorStore

Cli = Callable[..., Result]


def test_the_shown_name_and_the_path_filter_the_same_file(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    shown = json.loads(cli("query", "brass bolts", "--store", "numpy", "--json").stdout)[0]
    assert (shown["source_id"], shown["source"]) == ("docs/guide/install.md", "guide/install.md")
    for name in ("docs/guide/install.md", "guide/install.md"):
        where = f"source == '{name}'"
        hits = json.loads(cli("query", "tides keepers lantern", "--filter", where, "--json").stdout)
        assert hits and {h["source_id"] for h in hits} == {"docs/guide/install.md"}, name
        asked = cli("ask", "What do I tighten?", "--filter", where, "--json", "--no-stream")
        assert asked.exit_code == 0, asked.stderr
        assert [row["citation"] for row in json.loads(asked.stdout)["sources"]] == ["docs/guide/install.md"]
    listed = "source IN ['docs/tides.md', 'docs/keepers.txt']"
    hits = json.loads(cli("query", "tides keepers", "--filter", listed, "--json").stdout)
    assert {h["source"] for h in hits} == {"tides.md", "keepers.txt"}
    excluded = json.loads(cli("query", "tides", "--filter", "NOT source == 'docs/tides.md'", "--json").stdout)
    assert "tides.md" not in {h["source"] for h in excluded}


def test_an_advisor_filter_on_the_shown_name_finds_the_file() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(
        [
            Document("i", "Tighten the brass bolts.", {"root": "docs", "source": "guide/install.md"}),
            Document("o", "Tighten the brass bolts.", {"root": "other", "source": "guide/install.md"}),
        ]
    )
    client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store)])
    only = QuestionAnswerAdvisor.Params(filter="source == 'docs/guide/install.md'")
    reply = client.prompt("What do I tighten?").advisors(only).call()
    assert [d.id for d in reply.response().documents] == ["i"]


@pytest.mark.parametrize("kind", ["numpy", "chroma", "pgvector"])
def test_a_folder_is_found_with_the_root_in_front_on_every_store(
    cli: Cli, docs: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = ["--store", kind]
    if kind == "pgvector":
        url = request.getfixturevalue("postgres_server_url")
        store += ["--database-url", url, "--collection", request.getfixturevalue("fresh_name")("dirs")]
    assert cli("ingest", docs, *store).exit_code == 0
    for folder in ("docs/guide", "guide"):
        where = f"dirs CONTAINS '{folder}'"
        hits = json.loads(cli("query", "tides bolts", *store, "--filter", where, "--json").stdout)
        assert hits and {h["source_id"] for h in hits} == {"docs/guide/install.md"}, folder
        outside = f"NOT dirs CONTAINS '{folder}'"
        rest = json.loads(cli("query", "tides bolts", *store, "--filter", outside, "--json").stdout)
        assert rest and "docs/guide/install.md" not in {h["source_id"] for h in rest}, folder
    missed = cli("query", "bolts", *store, "--filter", "dirs CONTAINS 'other/guide'")
    assert missed.exit_code == 0 and "no chunk matches --filter" in missed.stderr


def test_an_advisor_filter_on_a_root_prefixed_folder_keeps_to_that_root() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    meta = {"source": "guide/install.md", "dirs": ["guide"]}
    store.add(
        [
            Document("i", "Tighten the brass bolts.", {**meta, "root": "docs"}),
            Document("o", "Tighten the brass bolts.", {**meta, "root": "other"}),
        ]
    )
    client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store)])
    only = QuestionAnswerAdvisor.Params(filter="dirs CONTAINS 'docs/guide'")
    reply = client.prompt("What do I tighten?").advisors(only).call()
    assert [d.id for d in reply.response().documents] == ["i"]
