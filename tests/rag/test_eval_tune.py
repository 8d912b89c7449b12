"""The per-embedder vector weight, the search record's checks, and `tune`'s sweep and choice (issue 16.3)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from ingest.search_record import SearchRecord, resolve_search, search_origin
from rag import Document, HashingEmbedding, SearchRequest
from rag.config import VECTOR_WEIGHT_BY_EMBEDDER, Settings, default_vector_weight, embedder_family
from rag.errors import ConfigError, InvalidRequestError
from rag.eval import parse_questions, tune
from rag.eval.tune import TuneRow, pick_best
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore


def test_the_weight_table_is_keyed_by_embedder_family() -> None:
    assert dict(VECTOR_WEIGHT_BY_EMBEDDER) == {"hashing": 0.15, "st": 0.7, "openai": 0.7}
    assert [embedder_family(s) for s in ("Hashing:2048", "sentence-transformers:m", "openai:e3", None)] == [
        "hashing",
        "st",
        "openai",
        "hashing",
    ]
    assert default_vector_weight("st:/models/all-MiniLM-L6-v2") == 0.7
    assert default_vector_weight("openai:text-embedding-3-small") == 0.7
    assert default_vector_weight("hashing:1024") == 0.15
    assert default_vector_weight("someday:model") == 0.15  # an unknown family: the general default


def test_unset_settings_take_the_embedders_default() -> None:
    env = Settings.from_env({})
    assert (env.search_mode, env.vector_weight) == (None, None)
    assert Settings(embedder="st:m").search_request().vector_weight == 0.7
    assert Settings().search_request().vector_weight == 0.15
    assert Settings(embedder="st:m", vector_weight=0.0).search_request().vector_weight == 0.0
    chosen = Settings.from_env({"RAG_VECTOR_WEIGHT": "0.7", "RAG_SEARCH_MODE": "Vector"})
    assert (chosen.search_mode, chosen.vector_weight) == ("vector", 0.7)


def test_the_weighted_fusion_floors_cosines_for_every_embedder_but_hashing() -> None:
    assert Settings(embedder="st:m").search_request().vector_floor is True
    assert Settings(embedder="openai:text-embedding-3-small").search_request().vector_floor is True
    assert Settings(embedder="hashing:1024").search_request().vector_floor is False
    assert Settings().search_request().vector_floor is False  # no embedder chosen: hashing
    # A store opened without `--embedder` searches as the embedder it was built with.
    assert resolve_search(Settings(), "st:m", None).search_request().vector_floor is True
    assert resolve_search(Settings(), "hashing", SearchRecord(0.3)).search_request().vector_floor is False
    assert default_vector_weight("st:m", "fr") == 0.55
    with pytest.raises(InvalidRequestError, match="vector_floor must be True or False, got 'yes'"):
        SearchRequest("q", vector_floor="yes")  # type: ignore[arg-type]


def test_resolution_order_option_then_record_then_embedder() -> None:
    tuned = SearchRecord(0.8, "vector", "q.jsonl", "2026-01-01T00:00Z", 10, 0.5)
    assert resolve_search(Settings(), "st:m", None).search_request().vector_weight == 0.7
    resolved = resolve_search(Settings(), "st:m", tuned)
    assert (resolved.search_mode, resolved.vector_weight) == ("vector", 0.8)
    given = resolve_search(Settings(search_mode="lexical", vector_weight=0.1), "st:m", tuned)
    assert (given.search_mode, given.vector_weight) == ("lexical", 0.1)
    # `--embedder` given on the command line decides the default for a store with no record.
    assert resolve_search(Settings(embedder="st:m"), "hashing", None).vector_weight == 0.7
    assert search_origin("openai:e", SearchRecord(0.5)) == "default for embedder openai"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([0.5], "search record in 'stores.json' must be an object, got [0.5]"),
        (
            {"vector_weight": 0.5, "colour": "red"},
            "search record in 'stores.json' has unknown field(s) colour",
        ),
        ({"mode": "hybrid"}, "vector_weight must be within [0, 1], got None"),
        ({"vector_weight": True}, "vector_weight must be within [0, 1], got True"),
        ({"vector_weight": 0.5, "mode": "bm25"}, "mode must be one of vector, lexical, hybrid, got 'bm25'"),
    ],
)
def test_a_bad_search_record_is_named(raw: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SearchRecord.from_dict(raw)
    assert message in str(caught.value)


def test_the_record_round_trips_without_unset_fields() -> None:
    record = SearchRecord(0.3, "hybrid", "q.jsonl", "2026-01-01T00:00Z", 5, 0.61)
    assert SearchRecord.from_dict(record.to_dict()) == record
    assert SearchRecord(0.2).to_dict() == {"vector_weight": 0.2}


def _row(mode: str, weight: float | None, ndcg: float) -> TuneRow:
    return TuneRow(mode, weight, {"ndcg": ndcg})  # type: ignore[arg-type]  # modes spelled right


def test_ties_go_to_the_simpler_mode_then_to_the_current_weight() -> None:
    rows = [_row("vector", None, 0.6), _row("hybrid", 0.3, 0.6), _row("lexical", None, 0.6)]
    assert pick_best(rows, 0.2).mode == "lexical"
    assert pick_best(rows[:2], 0.2).mode == "vector"
    hybrids = [_row("hybrid", w, 0.7) for w in (0.0, 0.4, 0.7, 0.9)] + [_row("lexical", None, 0.69)]
    assert pick_best(hybrids, 0.5).vector_weight == 0.4
    assert pick_best(hybrids, 0.8).vector_weight == 0.7  # 0.7 and 0.9 are as far: the lower one
    assert pick_best([*hybrids, _row("hybrid", 0.2, 0.7 + 1e-12)], 0.5).vector_weight == 0.4  # float noise
    assert pick_best([*hybrids, _row("hybrid", 0.2, 0.71)], 0.5).vector_weight == 0.2
    with pytest.raises(InvalidRequestError, match="no settings"):
        pick_best([], 0.2)


def test_tune_searches_each_setting_once_per_question_and_keeps_the_request_settings() -> None:
    inner = NumpyVectorStore(HashingEmbedding())
    inner.add(
        [
            Document("1", "the pump primes itself at dawn", {"source": "pump.md"}),
            Document("2", "valves open when the tide turns", {"source": "valves.md"}),
            Document("3", "the lamp is polished with vinegar", {"source": "lamp.md"}),
        ]
    )
    store = RecordingStore(inner)
    questions = parse_questions(
        [
            '{"question": "when do valves open", "relevant": [{"source": "valves.md"}]}',
            '{"question": "what primes the pump", "relevant": [{"source": "pump.md"}]}',
        ]
    )
    base = Settings(fusion="rrf", vector_weight=0.6, diversity=0.0).search_request()
    result = tune(store, questions, top_k=2, weights=[0.5, 0.0, 1.0], search_request=base)
    assert [row.label for row in result.rows] == ["vector", "lexical", "hybrid 0", "hybrid 0.5", "hybrid 1"]
    assert len(store.requests) == 2 * 5
    assert {(r.top_k, r.fusion) for r in store.requests} == {(2, "rrf")}
    assert sorted({r.vector_weight for r in store.requests if r.mode == "hybrid"}) == [0.0, 0.5, 1.0]
    assert result.best.mode == "lexical" and result.best.metrics["ndcg"] == 1.0
    assert result.current_weight == result.chosen_weight == 0.6
    assert result.table().splitlines()[2].startswith("* lexical")
    only_hybrid = tune(store, questions, top_k=2, weights=[0.0, 1.0], modes=["hybrid"], search_request=base)
    assert [row.label for row in only_hybrid.rows] == ["hybrid 0", "hybrid 1"]
    assert only_hybrid.chosen_weight == only_hybrid.best.vector_weight


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"weights": [0.5, 1.5]}, r"vector weights must be within \[0, 1\], got \[0.5, 1.5\]"),
        ({"weights": []}, r"vector weights must be within \[0, 1\], got \[\]"),
        ({"modes": []}, "modes must be among"),
        ({"top_k": 0}, "top-k values must be integers >= 1"),
    ],
)
def test_bad_sweeps_are_named(options: dict[str, object], message: str) -> None:
    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document("1", "the pump", {"source": "pump.md"})])
    questions = parse_questions(['{"question": "pump", "relevant": [{"source": "pump.md"}]}'])
    with pytest.raises(InvalidRequestError, match=message):
        tune(store, questions, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["rag.eval.tune", "ingest.search_record"])
def test_the_examples_run(name: str) -> None:
    # By name: `rag.eval.tune` as an attribute is the function the package exports, not the module.
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
