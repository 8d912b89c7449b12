"""Sweeps: one search per question, filter and mode gives the same numbers as searching each setting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rag import Document, HashingEmbedding, SearchRequest, VectorStore
from rag.documents import SearchMode
from rag.errors import ConfigError, FilterSyntaxError, InvalidRequestError
from rag.eval import METRICS, QUESTION_FILTER, EvalResults, Question, QuestionSet, Relevant, evaluate
from rag.eval.metrics import score_ranking, units_of
from rag.filters import Filter, as_filter
from stores import NumpyVectorStore
from tests.rag.recording_store import RecordingStore

_DOCS = [
    (
        "p1",
        "The pump primes itself when the reservoir valve opens.",
        {"source": "pump.md", "tags": ["water"]},
    ),
    ("p2", "Prime the pump again after draining the reservoir.", {"source": "pump.md", "tags": ["water"]}),
    ("v1", "Valves open at dawn and close at dusk in summer.", {"source": "valves.md", "tags": ["water"]}),
    ("m1", "Manual page one: the fuse is a 2.5 A slow-blow.", {"source": "m.pdf", "page": 1, "tags": ["hw"]}),
    (
        "m2",
        "Manual page two: the board takes 24 V from the supply.",
        {"source": "m.pdf", "page": 2, "tags": ["hw"]},
    ),
    ("f1", "Fog lamps warn ships near the harbour wall.", {"source": "fog.md", "tags": ["misc"]}),
]
_QUESTIONS = QuestionSet(
    (
        Question(
            "q1", "when does the pump prime", (Relevant("pump.md", grade=2), Relevant("valves.md")), None
        ),
        Question(
            "q2", "which fuse protects the board", (Relevant("m.pdf", page=1),), None, "tags CONTAINS 'hw'"
        ),
        Question("q3", "what voltage does the board take", (Relevant("m.pdf", page=2),)),
        Question("q4", "fog lamps for ships", (Relevant("fog.md"),), None, "source == 'fog.md'"),
    )
)


class CountingStore(NumpyVectorStore):
    """The numpy store, counting its searches."""

    searches = 0

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        self.searches += 1
        return super().similarity_search(request)


@pytest.fixture
def store() -> CountingStore:
    s = CountingStore(HashingEmbedding())
    s.add(Document(i, text, meta) for i, text, meta in _DOCS)  # type: ignore[arg-type]
    return s


def _direct(
    store: VectorStore, k: int, threshold: float, pick: Filter | None, per_question: bool
) -> dict[str, float]:
    totals = dict.fromkeys(METRICS, 0.0)
    for q in _QUESTIONS:
        chosen = as_filter(q.filter) if per_question else pick
        hits = store.similarity_search(
            SearchRequest(q.text, top_k=k, similarity_threshold=threshold, filter=chosen)
        )
        scores = score_ranking(units_of(hits, q.qrels()), q.qrels(), k)
        totals = {name: totals[name] + scores[name] for name in METRICS}
    return {name: value / len(_QUESTIONS) for name, value in totals.items()}


def test_sweep_matches_searching_each_setting(store: CountingStore) -> None:
    ks, thresholds = [1, 2, 3, 5], [0.0, 0.1, 0.2, 0.35]
    filters = [None, QUESTION_FILTER, "tags CONTAINS 'water'"]
    results = evaluate(store, _QUESTIONS, top_k=[5, 1, 3, 2, 3], thresholds=thresholds, filters=filters)
    assert store.searches == len(_QUESTIONS) * len(filters)  # once per question and filter setting
    assert len(results.rows) == len(ks) * len(thresholds) * len(filters)
    assert len(results.per_question) == len(results.rows) * len(_QUESTIONS)
    for row in results.rows:
        pick = None if row.filter in ("none", "question") else as_filter(row.filter)
        expected = _direct(store, row.top_k, row.threshold, pick, row.filter == "question")
        assert row.metrics == pytest.approx(expected), row
        assert row.questions == 4 and row.latency_p95_ms >= row.latency_p50_ms > 0
    labels = [(r.filter, r.threshold, r.top_k) for r in results.rows]
    assert labels[:5] == [
        ("none", 0.0, 1),
        ("none", 0.0, 2),
        ("none", 0.0, 3),
        ("none", 0.0, 5),
        ("none", 0.1, 1),
    ]
    assert {r.filter for r in results.rows} == {"none", "question", "tags CONTAINS 'water'"}


def test_a_plain_list_of_questions_and_higher_thresholds_never_help(store: CountingStore) -> None:
    results = evaluate(store, list(_QUESTIONS), top_k=[3], thresholds=[0, 0.3, 1.0])
    recalls = [r.metrics["recall"] for r in results.rows]
    assert recalls == sorted(recalls, reverse=True) and recalls[-1] == 0.0
    assert all(0.0 <= v <= 1.0 for r in results.rows for v in r.metrics.values())


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"top_k": [0, 3]}, InvalidRequestError, r"top-k values must be integers >= 1, got \[0, 3\]"),
        ({"top_k": []}, InvalidRequestError, "top-k values must be integers >= 1"),
        ({"thresholds": [1.5]}, InvalidRequestError, r"thresholds must be within \[0, 1\], got \[1.5\]"),
        ({"filters": ["tags =="]}, FilterSyntaxError, "at column"),
    ],
)
def test_bad_settings_fail_before_searching(
    store: CountingStore, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        evaluate(store, _QUESTIONS, **kwargs)  # type: ignore[arg-type]
    assert store.searches == 0
    with pytest.raises(InvalidRequestError, match="no questions"):
        evaluate(store, [])


@pytest.fixture
def results(store: CountingStore) -> EvalResults:
    return evaluate(store, _QUESTIONS, top_k=[1, 3], thresholds=[0, 0.2], filters=[None, QUESTION_FILTER])


def test_table_json_csv(results: EvalResults, tmp_path: Path) -> None:
    lines = results.table(full=True).splitlines()
    header = ["mode", "filter", "threshold", "top_k", "questions", *METRICS, "p50_ms", "p95_ms"]
    assert lines[0].split() == header
    assert len(lines) == 9 and lines[1].split()[:5] == ["vector", "none", "0", "1", "4"]
    assert len({len(line) for line in lines}) == 1  # right-aligned numbers: every line ends in one column
    short = results.table().splitlines()
    assert short[0].split() == ["mode", "filter", "thr", "k", "n", "hit", "recall", "mrr", "ndcg", "p50_ms"]
    assert short[1].split()[:5] == lines[1].split()[:5] and len({len(line) for line in short}) == 1
    payload = json.loads(results.to_json(per_question=True))
    assert payload["metrics"] == list(METRICS) and len(payload["settings"]) == 8
    assert payload["settings"][0]["recall"] == results.rows[0].metrics["recall"]
    assert len(payload["questions"]) == 32 and "questions" not in json.loads(results.to_json())
    text = results.to_csv(tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == text
    assert (
        text.splitlines()[0].startswith("mode,filter,threshold,top_k,questions,hit_rate")
        and len(text.splitlines()) == 9
    )


def test_dataframe(results: EvalResults, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = results.to_dataframe()
    assert list(frame.columns[:5]) == ["mode", "filter", "threshold", "top_k", "questions"]
    assert len(frame) == 8 and set(frame["mode"]) == {"vector"}
    assert set(results.to_dataframe(per_question=True)["question"]) == {"q1", "q2", "q3", "q4"}
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(ConfigError, match=r"needs pandas: pip install \"rag-advisors\[notebooks\]\""):
        results.to_dataframe()


def test_plot_draws_one_line_per_setting(results: EvalResults, tmp_path: Path) -> None:
    figure = results.plot(tmp_path / "eval.png")
    assert (tmp_path / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = figure.axes
    assert [ax.get_title() for ax in axes] == ["recall@k", "nDCG@k"]
    assert [ax.get_xlabel() for ax in axes] == ["k (chunks retrieved)"] * 2
    assert axes[0].get_ylabel() == "mean recall@k" and axes[1].get_ylabel() == "mean nDCG@k"
    box = axes[0].get_legend()
    assert box is not None
    legend = [t.get_text() for t in box.get_texts()]
    assert legend == [
        "threshold 0, no filter",
        "threshold 0.2, no filter",
        "threshold 0, each question's filter",
        "threshold 0.2, each question's filter",
    ]
    first = axes[1].get_lines()[0]
    points = np.asarray(first.get_xydata())
    assert list(points[:, 0]) == [1, 3]
    assert list(points[:, 1]) == [r.metrics["ndcg"] for r in results.rows[:2]]
    with pytest.raises(InvalidRequestError, match="metrics to plot must be among"):
        results.plot(metrics=["f1"])
    assert len(results.plot(metrics=["mrr"]).axes) == 1


@pytest.fixture
def recording(store: CountingStore) -> RecordingStore:
    return RecordingStore(store)


def test_modes_are_a_dimension_searched_once_per_question_filter_and_mode(recording: RecordingStore) -> None:
    base = SearchRequest("ignored", top_k=1, fusion="weighted", vector_weight=0.7, rrf_k=20, diversity=0.0)
    results = evaluate(
        recording,
        _QUESTIONS,
        top_k=[1, 3],
        filters=[None, QUESTION_FILTER],
        modes=["vector", "lexical", "hybrid", "lexical"],  # a repeat counts once
        search_request=base,
    )
    modes = ["vector", "lexical", "hybrid"]
    assert len(recording.requests) == len(_QUESTIONS) * 2 * len(modes)
    sent = [(r.mode, r.top_k, r.similarity_threshold) for r in recording.requests]
    assert sent == [(m, 3, 0.0) for m in modes for _ in range(2 * len(_QUESTIONS))]
    assert {(r.fusion, r.vector_weight, r.rrf_k, r.diversity) for r in recording.requests} == {
        ("weighted", 0.7, 20, 0.0)
    }
    assert [r.query for r in recording.requests[:4]] == [q.text for q in _QUESTIONS]
    assert [str(r.filter) for r in recording.requests[4:8]] == [str(as_filter(q.filter)) for q in _QUESTIONS]
    assert [(r.mode, r.filter, r.top_k) for r in results.rows] == [
        (m, f, k) for m in modes for f in ("none", "question") for k in (1, 3)
    ]
    assert {r.mode for r in results.per_question} == set(modes) and len(results.per_question) == 48
    assert results.table().splitlines()[5].split()[:4] == ["lexical", "none", "0", "1"]
    assert [row["mode"] for row in json.loads(results.to_json())["settings"]][::4] == modes
    assert [line.split(",")[0] for line in results.to_csv().splitlines()[1::4]] == modes


def test_the_default_mode_is_the_search_requests(recording: RecordingStore) -> None:
    assert {r.mode for r in evaluate(recording, _QUESTIONS, top_k=[2]).rows} == {"vector"}
    lexical = evaluate(recording, _QUESTIONS, top_k=[2], search_request=SearchRequest("x", mode="lexical"))
    assert {r.mode for r in lexical.rows} == {"lexical"}
    assert [r.mode for r in recording.requests] == ["vector"] * 4 + ["lexical"] * 4


@pytest.mark.parametrize(
    ("mode", "diversity", "searches"),
    [("vector", 0.0, 4), ("lexical", 0.0, 12), ("hybrid", 0.0, 12), ("vector", 0.3, 12)],
)
def test_thresholds_are_searched_when_scores_are_not_the_cosine(
    recording: RecordingStore, mode: SearchMode, diversity: float, searches: int
) -> None:
    base = SearchRequest("x", diversity=diversity)
    results = evaluate(
        recording, _QUESTIONS, top_k=[2, 4], thresholds=[0, 0.2, 0.5], modes=[mode], search_request=base
    )
    # Vector scores are cosines: one search serves every threshold. Otherwise the store applies each one.
    assert len(recording.requests) == searches
    assert sorted({r.similarity_threshold for r in recording.requests}) == (
        [0.0] if searches == 4 else [0.0, 0.2, 0.5]
    )
    assert {(r.mode, r.top_k, r.diversity) for r in recording.requests} == {(mode, 4, diversity)}
    assert len(results.rows) == 6 and all(r.latency_p50_ms > 0 for r in results.rows)


def test_bad_modes_fail_before_searching(recording: RecordingStore) -> None:
    with pytest.raises(
        InvalidRequestError, match=r"modes must be among 'vector', 'lexical', 'hybrid', got \['bm25'\]"
    ):
        evaluate(recording, _QUESTIONS, modes=["bm25"])  # type: ignore[list-item]
    with pytest.raises(InvalidRequestError, match=r"modes must be among .*got \[\]"):
        evaluate(recording, _QUESTIONS, modes=[])
    assert recording.requests == []


def test_plot_draws_one_line_per_mode(recording: RecordingStore) -> None:
    results = evaluate(recording, _QUESTIONS, top_k=[1, 3], modes=["vector", "lexical", "hybrid"])
    assert results.settings() == [("vector", "none", 0.0), ("lexical", "none", 0.0), ("hybrid", "none", 0.0)]
    axes = results.plot().axes
    box = axes[0].get_legend()
    assert box is not None and [t.get_text() for t in box.get_texts()] == ["vector", "lexical", "hybrid"]
    lines = axes[0].get_lines()
    assert len({line.get_marker() for line in lines}) == 3 and len({line.get_color() for line in lines}) == 3
    mixed = evaluate(
        recording,
        _QUESTIONS,
        top_k=[1],
        thresholds=[0, 0.2],
        filters=[None, QUESTION_FILTER],
        modes=["vector", "hybrid"],
    )
    box = mixed.plot().axes[0].get_legend()
    assert box is not None
    assert [t.get_text() for t in box.get_texts()] == [
        f"{m}, threshold {t}, {f}"
        for m in ("vector", "hybrid")
        for f in ("no filter", "each question's filter")
        for t in ("0", "0.2")
    ]
