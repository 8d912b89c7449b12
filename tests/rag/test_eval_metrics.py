"""Metrics: hand-computed cases, document-level de-duplication, and a randomized check against trec_eval."""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import Document
from rag.documents import MetadataValue
from rag.errors import InvalidRequestError
from rag.eval import METRICS, score_ranking
from rag.eval.metrics import dedupe, latency_percentiles, units_of


def test_hand_computed_graded_case() -> None:
    # b (grade 1) at rank 1, an unjudged x, a (grade 2) at rank 3.
    scores = score_ranking(["b", "x", "a"], {"a": 2, "b": 1}, k=3)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert scores["hit_rate"] == 1.0
    assert scores["recall"] == 1.0
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["mrr"] == 1.0
    assert scores["ndcg"] == pytest.approx((1 + 2 / 2) / ideal)  # 2 / log2(4) = 1
    assert scores["map"] == pytest.approx((1 / 1 + 2 / 3) / 2)


def test_cutoff_one_of_the_same_ranking() -> None:
    scores = score_ranking(["b", "x", "a"], {"a": 2, "b": 1}, k=1)
    assert scores == {"hit_rate": 1.0, "recall": 0.5, "precision": 1.0, "mrr": 1.0, "ndcg": 0.5, "map": 0.5}


def test_first_relevant_at_rank_three_of_three_relevant() -> None:
    scores = score_ranking(["x", "y", "a", "b", "z"], {"a": 1, "b": 1, "c": 1}, k=4)
    assert scores["mrr"] == pytest.approx(1 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["map"] == pytest.approx((1 / 3 + 2 / 4) / 3)
    dcg = 1 / math.log2(4) + 1 / math.log2(5)
    assert scores["ndcg"] == pytest.approx(dcg / (1 + 1 / math.log2(3) + 1 / math.log2(4)))
    assert score_ranking(["x", "y", "a"], {"a": 1}, k=2) == dict.fromkeys(METRICS, 0.0)


def test_short_and_empty_rankings() -> None:
    # Precision divides by k even when fewer units came back (as trec_eval's P).
    one = score_ranking(["a"], {"a": 1}, k=5)
    assert one == {"hit_rate": 1.0, "recall": 1.0, "precision": 0.2, "mrr": 1.0, "ndcg": 1.0, "map": 1.0}
    assert score_ranking([], {"a": 1}, k=3) == dict.fromkeys(METRICS, 0.0)


def test_grade_zero_labels_are_not_relevant() -> None:
    assert score_ranking(["n", "a"], {"a": 1, "n": 0}, k=2) == score_ranking(["n", "a"], {"a": 1}, k=2)


@pytest.mark.parametrize(
    ("ranking", "qrels", "k", "message"),
    [
        (["a"], {"a": 1}, 0, "cutoff k must be an integer >= 1, got 0"),
        (["a", "a"], {"a": 1}, 2, "ranking repeats a unit"),
        (["a"], {"a": 0}, 1, "no relevant unit (grade >= 1) in {'a': 0}"),
    ],
)
def test_bad_input_is_named(ranking: list[str], qrels: dict[str, int], k: int, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        score_ranking(ranking, qrels, k)


def _chunk(doc_id: str, source: str, page: int | None = None) -> Document:
    meta: dict[str, MetadataValue] = {"source": source}
    if page is not None:
        meta["page"] = page
    return Document(doc_id, "text", meta)


def test_units_of_maps_chunks_to_labelled_units_once() -> None:
    chunks = [
        _chunk("1", "m.pdf", 1),
        _chunk("2", "m.pdf", 2),
        _chunk("3", "g.md"),
        _chunk("4", "m.pdf", 1),
        _chunk("5", "g.md"),
        Document("6", "no source"),
    ]
    qrels = {("m.pdf", 1): 2, ("g.md", None): 1}
    units = units_of(chunks, qrels)
    assert units == [("m.pdf", 1), ("m.pdf", 2), ("g.md", None), ("\x00chunk:6", None)]
    # A label without a page covers every page of its source.
    assert units_of(chunks[:2], {("m.pdf", None): 1}) == [("m.pdf", None)]
    # Two chunks of one relevant source score like one: nDCG stays within [0, 1].
    assert score_ranking(units_of(chunks[2:5:2] * 3, qrels), qrels, k=3)["ndcg"] <= 1.0


def test_units_of_uses_the_given_field() -> None:
    chunks = [Document("c1", "t", {"source": "corpus.jsonl", "doc_id": "42"})]
    assert units_of(chunks, {("42", None): 1}, unit_field="doc_id") == [("42", None)]


def test_dedupe_and_latency() -> None:
    assert dedupe(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert latency_percentiles([0.001, 0.002, 0.003]) == pytest.approx((2.0, 2.9))
    assert all(math.isnan(v) for v in latency_percentiles([]))


_TREC = {
    "hit_rate": "success_{k}",
    "recall": "recall_{k}",
    "precision": "P_{k}",
    "ndcg": "ndcg_cut_{k}",
    "map": "map_cut_{k}",
    "mrr": "recip_rank",
}


def _reference(ranking: list[str], qrels: dict[str, int], k: int) -> dict[str, float]:
    """trec_eval (via pytrec_eval) on the top k, scored in strictly falling order so ties cannot reorder."""
    top = ranking[:k]
    if not top:
        return dict.fromkeys(METRICS, 0.0)  # trec_eval skips a query that retrieved nothing
    run = {"q": {unit: float(len(top) - rank) for rank, unit in enumerate(top)}}
    measures = {f"success.{k}", f"recall.{k}", f"P.{k}", f"ndcg_cut.{k}", f"map_cut.{k}", "recip_rank"}
    found = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures).evaluate(run)["q"]
    return {name: found[pattern.format(k=k)] for name, pattern in _TREC.items()}


_POOL = [f"d{i}" for i in range(12)]


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[str], dict[str, int], int]:
    judged = draw(st.lists(st.sampled_from(_POOL), min_size=1, max_size=8, unique=True))
    grades = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
    grades[0] = max(grades[0], 1)  # at least one relevant unit: unjudged questions are never scored
    ranking = draw(st.permutations(_POOL))[: draw(st.integers(0, len(_POOL)))]
    return ranking, dict(zip(judged, grades, strict=True)), draw(st.integers(1, 15))


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_random_rankings_match_trec_eval(case: tuple[list[str], dict[str, int], int]) -> None:
    ranking, qrels, k = case
    ours = score_ranking(ranking, qrels, k)
    expected = _reference(ranking, qrels, k)
    for name in METRICS:
        assert ours[name] == pytest.approx(expected[name], abs=1e-9), name
        assert 0.0 <= ours[name] <= 1.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "c.md", "d.md"]), st.integers(1, 3)), max_size=15),
    st.integers(1, 10),
)
def test_chunk_rankings_match_trec_eval_on_best_chunk_per_unit(chunks: list[tuple[str, int]], k: int) -> None:
    # Chunks of one labelled unit collapse to it; the reference sees one entry per unit, at its best rank.
    qrels = {("a.md", None): 2, ("b.md", 2): 1, ("c.md", 1): 1}
    docs = [_chunk(f"c{i}", source, page) for i, (source, page) in enumerate(chunks)]
    units = units_of(docs[:k], qrels)
    names = {unit: f"{unit[0]}#{unit[1]}" for unit in [*units, *qrels]}
    reference = _reference([names[u] for u in units], {names[u]: g for u, g in qrels.items()}, k)
    ours = score_ranking(units, qrels, k)
    assert ours == pytest.approx(reference, abs=1e-9)
