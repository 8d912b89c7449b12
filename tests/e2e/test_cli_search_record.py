"""The vector weight fits the embedder and is recorded in the home; old homes keep working (issue 16.3).

Searches are observed by wrapping the numpy store's `similarity_search` (the real search still runs), as
tests/e2e/test_cli_search_modes.py does; rankings are compared with explicit `--vector-weight` runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag import Document, SearchRequest
from rag.advisors.memory_vector import MEMORY_MARKER
from stores import NumpyVectorStore
from tests.rag.tiny_bert import build_tiny_bert

RunCli = Callable[..., Result]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("st-model"))


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[SearchRequest]:
    seen: list[SearchRequest] = []
    real = NumpyVectorStore.similarity_search

    def recording(self: NumpyVectorStore, request: SearchRequest | str) -> list[Document]:
        seen.append(request if isinstance(request, SearchRequest) else SearchRequest(request))
        return real(self, request)

    monkeypatch.setattr(NumpyVectorStore, "similarity_search", recording)
    return seen


def _records(home: Path) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads((home / "stores.json").read_text(encoding="utf-8"))
    return data


def _ids(result: Result) -> list[str]:
    assert result.exit_code == 0, result.stderr
    return [hit["id"] for hit in json.loads(result.stdout)]


def test_a_new_home_records_the_weight_that_suits_its_embedder(
    cli: RunCli, docs: Path, rag_home: Path, tiny_bert: Path
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli(
        "ingest", docs, "--store", "numpy", "--collection", "semantic", "--embedder", f"st:{tiny_bert}"
    )
    assert result.exit_code == 0, result.stderr
    records = _records(rag_home)
    assert records["numpy:rag"]["search"] == {"vector_weight": 0.15}
    assert records["numpy:semantic"]["search"] == {"vector_weight": 0.7, "language": "en"}
    info = cli("info", "--store", "numpy", "--collection", "semantic", "--json")
    assert json.loads(info.stdout)["search"] == {
        "mode": "hybrid",
        "vector_weight": 0.7,
        "origin": "default for embedder st, text mostly in 'en'",
        "recorded": {"vector_weight": 0.7, "language": "en"},
    }
    text = cli("info", "--store", "numpy").stdout
    assert "search:          hybrid, vector weight 0.15 (default for embedder hashing)\n" in text
    # Ingesting again keeps the record as it is.
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    assert _records(rag_home)["numpy:rag"]["search"] == {"vector_weight": 0.15}


def test_query_ask_and_chat_search_with_the_recorded_weight(
    cli: RunCli, docs: Path, tiny_bert: Path, searches: list[SearchRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    st = ("--store", "numpy", "--collection", "semantic")
    assert cli("ingest", docs, *st, "--embedder", f"st:{tiny_bert}").exit_code == 0
    recorded = _ids(cli("query", "brass bolts for the lantern", *st, "--json"))
    explicit = _ids(cli("query", "brass bolts for the lantern", *st, "--json", "--vector-weight", "0.7"))
    assert recorded == explicit
    assert cli("ask", "Who logs fog signals?", *st, "--json").exit_code == 0
    result = cli("chat", *st, input="When do tides flood?\n/exit\n")
    assert result.exit_code == 0, result.stderr
    # Chat's long-term memory searches a store of its own, by vector: leave those out.
    documents = [s for s in searches if s.filter is None or s.filter == ~MEMORY_MARKER]
    assert [(s.mode, s.vector_weight) for s in documents] == [("hybrid", 0.7)] * 4
    # An option or the environment still wins over the record.
    searches.clear()
    assert cli("query", "tides", *st, "--vector-weight", "0.9").exit_code == 0
    monkeypatch.setenv("RAG_VECTOR_WEIGHT", "0.3")
    monkeypatch.setenv("RAG_SEARCH_MODE", "lexical")
    assert cli("query", "tides", *st).exit_code == 0
    assert [(s.mode, s.vector_weight) for s in searches] == [("hybrid", 0.9), ("lexical", 0.3)]


def test_a_home_written_before_the_record_uses_the_embedders_default(
    cli: RunCli, docs: Path, rag_home: Path, tiny_bert: Path, searches: list[SearchRequest]
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    st = ("--store", "numpy", "--collection", "semantic")
    assert cli("ingest", docs, *st, "--embedder", f"st:{tiny_bert}").exit_code == 0
    records = _records(rag_home)
    for record in records.values():
        del record["search"]  # as written before search settings were recorded
    (rag_home / "stores.json").write_text(json.dumps(records), encoding="utf-8")
    assert cli("query", "tides", "--store", "numpy").exit_code == 0
    assert cli("query", "tides", *st).exit_code == 0
    assert [s.vector_weight for s in searches] == [0.15, 0.7]
    assert [s.vector_floor for s in searches] == [False, True]  # cosines floored for the trained model
    info = json.loads(cli("info", *st, "--json").stdout)["search"]
    assert info["vector_weight"] == 0.7 and info["recorded"] is None
    assert info["origin"] == "default for embedder st; not recorded: the home predates search records"
    assert cli("ingest", docs, *st).exit_code == 0  # ingesting again does not invent a record
    assert "search" not in _records(rag_home)["numpy:semantic"]


def test_an_older_default_in_the_record_gives_way_to_this_releases_default(
    cli: RunCli, docs: Path, rag_home: Path, searches: list[SearchRequest]
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    assert cli("ingest", docs, "--store", "numpy", "--collection", "tuned").exit_code == 0
    records = _records(rag_home)
    records["numpy:rag"]["search"] = {"vector_weight": 0.05}  # an earlier release's default, not tuned
    tuned = {"vector_weight": 0.05, "mode": "hybrid", "tuned_on": "q.jsonl", "tuned_at": "2026-01-01T00:00Z"}
    records["numpy:tuned"]["search"] = tuned
    (rag_home / "stores.json").write_text(json.dumps(records), encoding="utf-8")
    assert cli("query", "tides", "--store", "numpy").exit_code == 0
    info = json.loads(cli("info", "--store", "numpy", "--json").stdout)["search"]
    assert (info["vector_weight"], info["recorded"]) == (0.15, {"vector_weight": 0.05})
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0  # the record catches up
    assert _records(rag_home)["numpy:rag"]["search"] == {"vector_weight": 0.15}
    # A tuned weight is the user's measurement: it stays.
    assert cli("query", "tides", "--store", "numpy", "--collection", "tuned").exit_code == 0
    assert [s.vector_weight for s in searches] == [0.15, 0.05]


def test_a_broken_record_is_named(cli: RunCli, docs: Path, rag_home: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    records = _records(rag_home)
    records["numpy:rag"]["search"] = {"vector_weight": 1.5}
    (rag_home / "stores.json").write_text(json.dumps(records), encoding="utf-8")
    result = cli("query", "tides", "--store", "numpy")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: search record in 'stores.json': vector_weight must be within [0, 1], got 1.5\n"
    )


FRENCH = (
    "Le phare se trouve au bout de la jetée. Les gardiens allument la lanterne chaque soir et "
    "la surveillent pendant toute la nuit, quand le vent souffle sur la mer."
)
ENGLISH = (
    "The lighthouse stands at the end of the pier. The keepers light the lantern every evening and "
    "watch it through the night, when the wind blows over the sea."
)


def test_an_english_only_embedder_gets_a_smaller_share_over_text_in_another_language(
    cli: RunCli, tmp_path: Path, rag_home: Path, tiny_bert: Path
) -> None:
    folder = tmp_path / "phare"
    folder.mkdir()
    for n in range(3):
        (folder / f"page{n}.md").write_text(f"# Page {n}\n\n{FRENCH}\n", encoding="utf-8")
    semantic = ("--store", "numpy", "--embedder", f"st:{tiny_bert}")
    assert cli("ingest", folder, *semantic).exit_code == 0
    assert _records(rag_home)["numpy:rag"]["search"] == {"vector_weight": 0.55, "language": "fr"}
    info = json.loads(cli("info", "--store", "numpy", "--json").stdout)["search"]
    assert (info["vector_weight"], info["origin"]) == (0.55, "default for embedder st, text mostly in 'fr'")
    # The collection turns mostly English (more chunks in English): the English default comes back.
    for n in range(6):
        (folder / f"english{n}.md").write_text(f"# Page {n}\n\n{ENGLISH}\n", encoding="utf-8")
    assert cli("ingest", folder, "--store", "numpy").exit_code == 0
    assert _records(rag_home)["numpy:rag"]["search"] == {"vector_weight": 0.7, "language": "en"}
    # The hashing embedder reads every language alike: its weight does not follow the language.
    assert cli("ingest", folder, "--store", "numpy", "--collection", "offline").exit_code == 0
    assert _records(rag_home)["numpy:offline"]["search"] == {"vector_weight": 0.15}


def test_a_tuned_weight_is_kept_whatever_the_language(
    cli: RunCli, tmp_path: Path, rag_home: Path, tiny_bert: Path
) -> None:
    folder = tmp_path / "phare"
    folder.mkdir()
    (folder / "phare.md").write_text(f"# Phare\n\n{FRENCH}\n", encoding="utf-8")
    assert cli("ingest", folder, "--store", "numpy", "--embedder", f"st:{tiny_bert}").exit_code == 0
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"question": "gardiens lanterne", "relevant": [{"source": "phare/phare.md"}]}) + "\n",
        encoding="utf-8",
    )
    assert cli("eval", questions, "--store", "numpy", "--top-k", "1", "--tune").exit_code == 0
    tuned = _records(rag_home)["numpy:rag"]["search"]
    assert tuned["tuned_on"] == str(questions)
    (folder / "second.md").write_text(f"# Second\n\n{FRENCH}\n", encoding="utf-8")
    assert cli("ingest", folder, "--store", "numpy").exit_code == 0
    assert _records(rag_home)["numpy:rag"]["search"] == tuned
