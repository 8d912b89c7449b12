"""`--mode`, `--fusion`, `--vector-weight`, `--diversity` and `RAG_SEARCH_MODE` reach the store's search.

The numpy store's `similarity_search` is wrapped (still doing the real search) to record the requests
the commands send; ranking quality per mode is the stores' and the benchmarks' business.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from rag import Document, SearchRequest
from rag.advisors.memory_vector import MEMORY_MARKER
from rag.config import DEFAULT_FUSION, DEFAULT_SEARCH_MODE, DEFAULT_VECTOR_WEIGHT
from stores import NumpyVectorStore

RunCli = Callable[..., Result]
_SEARCH_ENV = ("RAG_SEARCH_MODE", "RAG_FUSION", "RAG_VECTOR_WEIGHT", "RAG_DIVERSITY", "RAG_CHAT_MODEL")


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SearchRequest]]:
    for name in _SEARCH_ENV:
        monkeypatch.delenv(name, raising=False)
    seen: list[SearchRequest] = []
    real = NumpyVectorStore.similarity_search

    def recording(self: NumpyVectorStore, request: SearchRequest | str) -> list[Document]:
        seen.append(request if isinstance(request, SearchRequest) else SearchRequest(request))
        return real(self, request)

    monkeypatch.setattr(NumpyVectorStore, "similarity_search", recording)
    yield seen


@pytest.fixture
def ingested(cli: RunCli, docs: Path) -> RunCli:
    result = cli("ingest", docs, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    return cli


def _settings(request: SearchRequest) -> tuple[str, str, float, float]:
    return request.mode, request.fusion, request.vector_weight, request.diversity


def test_query_and_ask_send_the_options(ingested: RunCli, searches: list[SearchRequest]) -> None:
    result = ingested("query", "brass bolts", "--store", "numpy", "--json")
    assert result.exit_code == 0, result.stderr
    options = ("--mode", "hybrid", "--fusion", "weighted", "--vector-weight", "0.8", "--diversity", "0.3")
    # --keep-duplicates: the store sees the page size itself (by default the CLI searches 3x deeper).
    result = ingested(
        "query", "brass bolts tides", "--store", "numpy", "-k", "2", *options, "--json", "--keep-duplicates"
    )
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == 2
    result = ingested("ask", "Who logs fog signals?", "--store", "numpy", "--mode", "LEXICAL", "--json")
    assert result.exit_code == 0, result.stderr
    assert [_settings(s) for s in searches] == [
        (DEFAULT_SEARCH_MODE, DEFAULT_FUSION, DEFAULT_VECTOR_WEIGHT, 0.0),
        ("hybrid", "weighted", 0.8, 0.3),
        ("lexical", DEFAULT_FUSION, DEFAULT_VECTOR_WEIGHT, 0.0),
    ]
    assert (searches[1].query, searches[1].top_k) == ("brass bolts tides", 2)
    assert searches[2].query == "Who logs fog signals?"


def test_environment_sets_the_defaults_and_options_win(
    ingested: RunCli, searches: list[SearchRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_SEARCH_MODE", "lexical")
    monkeypatch.setenv("RAG_FUSION", "weighted")
    monkeypatch.setenv("RAG_VECTOR_WEIGHT", "0.25")
    monkeypatch.setenv("RAG_DIVERSITY", "0.1")
    assert ingested("query", "tides", "--store", "numpy").exit_code == 0
    assert (
        ingested("query", "tides", "--store", "numpy", "--mode", "vector", "--diversity", "0").exit_code == 0
    )
    assert [_settings(s) for s in searches] == [
        ("lexical", "weighted", 0.25, 0.1),
        ("vector", "weighted", 0.25, 0.0),
    ]
    monkeypatch.setenv("RAG_SEARCH_MODE", "bm25")
    result = ingested("query", "tides", "--store", "numpy")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: search mode (RAG_SEARCH_MODE) must be one of vector, lexical, hybrid; got 'bm25'"
    )
    monkeypatch.setenv("RAG_SEARCH_MODE", "vector")
    monkeypatch.setenv("RAG_DIVERSITY", "lots")
    result = ingested("ask", "tides", "--store", "numpy")
    assert result.exit_code == 2 and "RAG_DIVERSITY must be a number, got 'lots'" in result.stderr


def test_chat_sends_the_options_every_turn(ingested: RunCli, searches: list[SearchRequest]) -> None:
    script = "Who logs fog signals?\nWhen do spring tides flood?\n/exit\n"
    result = ingested("chat", "--store", "numpy", "--mode", "lexical", "--diversity", "0.4", input=script)
    assert result.exit_code == 0, result.stderr
    # The document searches (which always exclude chat memory); long-term chat memory lives in its own
    # store and searches by vector.
    documents = [s for s in searches if s.filter == ~MEMORY_MARKER]
    # The second question is a follow-up: searched alone and after the first one, with the same options.
    assert [(s.query, s.mode, s.diversity) for s in documents] == [
        ("Who logs fog signals?", "lexical", 0.4),
        ("When do spring tides flood?", "lexical", 0.4),
        ("Who logs fog signals?\nWhen do spring tides flood?", "lexical", 0.4),
    ]


def test_eval_compares_modes_side_by_side(
    ingested: RunCli, searches: list[SearchRequest], tmp_path: Path
) -> None:
    questions = tmp_path / "questions.jsonl"
    labelled = [
        {"question": "Who logs fog signals?", "relevant": [{"source": "keepers.txt"}]},
        {"question": "When do spring tides flood the causeway?", "relevant": [{"source": "tides.md"}]},
    ]
    questions.write_text("".join(json.dumps(q) + "\n" for q in labelled), encoding="utf-8")
    png, csv = tmp_path / "modes.png", tmp_path / "modes.csv"
    args = (
        "eval",
        questions,
        "--store",
        "numpy",
        "-k",
        "1,3",
        "--fusion",
        "weighted",
        "--vector-weight",
        "0.6",
    )
    result = ingested(*args, "--mode", "vector, lexical,hybrid", "--json", "--plot", png, "--csv", csv)
    assert result.exit_code == 0, result.stderr
    assert "x 3 mode(s) (vector, lexical, hybrid)" in result.stderr
    rows = json.loads(result.stdout)["settings"]
    assert [(r["mode"], r["top_k"]) for r in rows] == [
        (m, k) for m in ("vector", "lexical", "hybrid") for k in (1, 3)
    ]
    # eval reads what query shows (copies left out), which searches 3x the deepest top-k
    assert [(s.mode, s.top_k, s.fusion, s.vector_weight) for s in searches] == [
        (m, 9, "weighted", 0.6) for m in ("vector", "lexical", "hybrid") for _ in labelled
    ]
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert [line.split(",")[0] for line in csv.read_text(encoding="utf-8").splitlines()] == [
        "mode",
        "vector",
        "vector",
        "lexical",
        "lexical",
        "hybrid",
        "hybrid",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("query", "x", "--mode", "bm25"), "'bm25' is not one of 'vector', 'lexical', 'hybrid'"),
        (("ask", "x", "--fusion", "max"), "'max' is not one of 'rrf', 'weighted'"),
        (("query", "x", "--vector-weight", "1.5"), "1.5 is not in the range 0.0<=x<=1.0"),
        (("chat", "--diversity", "-1"), "-1.0 is not in the range 0.0<=x<=1.0"),
        (
            ("eval", "q.jsonl", "--mode", "vector,bm25"),
            "expected a comma-separated list of vector, lexical, hybrid; got 'vector,bm25'",
        ),
    ],
)
def test_bad_options_are_usage_errors(
    cli: RunCli, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "q.jsonl").write_text('{"question": "Q", "relevant": [{"source": "a"}]}\n', encoding="utf-8")
    result = cli(*(tmp_path / a if a == "q.jsonl" else a for a in args))
    assert result.exit_code == 2 and message in result.stderr


def test_help_texts_show_examples(cli: RunCli) -> None:
    for command in ("query", "ask", "chat"):
        text = cli(command, "--help").stdout
        assert "--mode [vector|lexical|hybrid]" in text and "--vector-weight 0..1" in text, command
        assert "e.g. --mode lexical" in text and "RAG_SEARCH_MODE" in text
    text = cli("eval", "--help").stdout
    assert (
        "--mode MODE,..." in text
        and "--mode vector,lexical,hybrid" in text
        and "--fusion [rrf|weighted]" in text
    )
