"""Reciprocal rank fusion and weighted fusion: hand-computed cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import InvalidRequestError
from rag.retrieval import reciprocal_rank_fusion, weighted_fusion


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    assert [doc_id for doc_id, _ in fused] == ["a", "c", "b"]
    assert dict(fused) == pytest.approx({"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62})


def test_rrf_weights_counts_first_position_of_repeats_and_breaks_ties_by_id() -> None:
    assert reciprocal_rank_fusion([["x"], ["y"]], k=1, weights=[1.0, 3.0]) == [("y", 1.5), ("x", 0.5)]
    assert reciprocal_rank_fusion([["b", "a", "b"]], k=1) == [("b", 0.5), ("a", 1 / 3)]
    assert reciprocal_rank_fusion([["b", "a"], ["a", "b"]], k=5) == [
        ("a", 1 / 6 + 1 / 7),
        ("b", 1 / 6 + 1 / 7),
    ]
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []


def test_rrf_rejects_bad_arguments() -> None:
    with pytest.raises(InvalidRequestError, match="rrf k must be an integer >= 1, got 0"):
        reciprocal_rank_fusion([["a"]], k=0)
    with pytest.raises(InvalidRequestError, match=r"one finite number >= 0 per ranking \(2\), got \[1.0\]"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])
    with pytest.raises(InvalidRequestError, match="not a str: 'abc'"):
        reciprocal_rank_fusion(["abc"])


_ids = st.lists(st.sampled_from("abcdefgh"), max_size=8)


@given(st.lists(_ids, max_size=4), st.integers(1, 100))
def test_rrf_properties(rankings: list[list[str]], k: int) -> None:
    fused = reciprocal_rank_fusion(rankings, k=k)
    assert [doc_id for doc_id, _ in fused] == sorted(
        {doc_id for ranking in rankings for doc_id in ranking}, key=lambda d: (-dict(fused)[d], d)
    )
    assert reciprocal_rank_fusion(list(reversed(rankings)), k=k) == fused  # order-independent
    if len(rankings) == 1:  # one ranking: its own order, repeats removed
        assert [doc_id for doc_id, _ in fused] == list(dict.fromkeys(rankings[0]))


def test_weighted_fusion_blends_scores_scaled_by_each_lists_best() -> None:
    vector = [("a", 0.8), ("b", 0.6), ("c", 0.4)]
    lexical = [("c", 12.0), ("d", 6.0), ("a", 3.0)]
    # scaled: vector a 1, b 0.75, c 0.5; lexical c 1, d 0.5, a 0.25.
    fused = weighted_fusion(vector, lexical, 0.25)
    assert [doc_id for doc_id, _ in fused] == ["c", "a", "d", "b"]
    assert dict(fused) == pytest.approx({"c": 0.875, "a": 0.4375, "d": 0.375, "b": 0.1875})
    assert [doc_id for doc_id, _ in weighted_fusion(vector, lexical, 1.0)] == ["a", "b", "c", "d"]
    assert [doc_id for doc_id, _ in weighted_fusion(vector, lexical, 0.0)] == ["c", "d", "a", "b"]


def test_close_cosines_do_not_outvote_a_clear_bm25_lead() -> None:
    # A hundred candidates' cosines often lie close together. Min-max stretched 0.31 against 0.30 to
    # 1 against 0, so a sliver of cosine beat a BM25 score three times higher; scaling keeps them close.
    vector = [("sliver", 0.31), ("lead", 0.30)]
    lexical = [("lead", 9.0), ("sliver", 3.0), ("other", 1.0)]
    fused = weighted_fusion(vector, lexical, 0.5)
    assert [doc_id for doc_id, _ in fused] == ["lead", "sliver", "other"]
    assert dict(fused) == pytest.approx(
        {"lead": 0.5 * 0.30 / 0.31 + 0.5, "sliver": 0.5 + 0.5 / 3, "other": 0.5 / 9}
    )


def test_a_flat_bm25_head_leaves_the_choice_to_the_cosines() -> None:
    # Forty documents hold the question's common words: BM25 scores 10 for "echo" and 6 for the rest.
    # Each counts by its lead over the 40th best (6), divided by the best: "echo" 0.4, the rest 0.
    lexical = [("echo", 10.0), *((f"common{i:02}", 6.0) for i in range(39))]
    vector = [("answer", 0.8), ("echo", 0.4)]
    fused = weighted_fusion(vector, lexical, 0.5)
    assert [doc_id for doc_id, _ in fused[:3]] == ["answer", "echo", "common00"]
    assert dict(fused)["answer"] == pytest.approx(0.5)
    assert dict(fused)["echo"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.4)
    assert dict(fused)["common38"] == 0.0
    # One document fewer and the list is exhausted: the floor is 0, every score counts whole.
    short = weighted_fusion(vector, lexical[:39], 0.5)
    assert [doc_id for doc_id, _ in short[:3]] == ["echo", "answer", "common00"]
    assert dict(short)["common00"] == pytest.approx(0.5 * 0.6)


def test_the_bm25_floor_is_the_fortieth_distinct_document() -> None:
    lexical = [(f"d{i:02}", 50.0 - i) for i in range(40)]  # the 40th best scores 11
    repeated = [lexical[0], *lexical]  # a repeated id counts once: the floor stays 11
    for hits in (lexical, repeated):
        fused = dict(weighted_fusion([], hits, 0.0))
        assert fused["d00"] == pytest.approx((50.0 - 11.0) / 50.0)
        assert fused["d38"] == pytest.approx(1.0 / 50.0)
        assert fused["d39"] == 0.0


def test_a_vector_floor_measures_cosines_from_their_fortieth_best() -> None:
    # A trained embedder's cosines sit close together: 0.62 for "answer", 0.60 down to 0.50 for the rest.
    vector = [("answer", 0.62), *((f"near{i:02}", 0.60 - i / 380) for i in range(39))]  # 40th: 0.50
    lexical = [("echo", 9.0), ("answer", 3.0)]
    plain = dict(weighted_fusion(vector, lexical, 0.7))
    floored = dict(weighted_fusion(vector, lexical, 0.7, vector_floor=True))
    assert plain["answer"] == pytest.approx(0.7 + 0.3 / 3)
    assert floored["answer"] == pytest.approx(0.7 * 0.12 / 0.62 + 0.3 / 3)
    assert floored["near00"] == pytest.approx(0.7 * 0.10 / 0.62)
    assert floored["near38"] == 0.0  # the 40th best: at the floor
    # Scaled by the best alone, every near-tie scores at least 0.8 of the best and outvotes BM25's
    # clear lead; measured from the floor, the cosines' small lead counts for as little as it is.
    assert max(plain, key=lambda doc_id: plain[doc_id]) == "answer"
    assert sorted(floored, key=lambda doc_id: -floored[doc_id])[:2] == ["echo", "answer"]
    assert plain["echo"] < plain["near38"]
    # Fewer than 40 cosines: no floor, as without it.
    assert weighted_fusion(vector[:39], lexical, 0.7, vector_floor=True) == weighted_fusion(
        vector[:39], lexical, 0.7
    )


def test_weighted_fusion_edge_cases() -> None:
    assert weighted_fusion([], [], 0.5) == []
    assert weighted_fusion([("only", -0.3)], [], 0.5) == [("only", 0.0)]  # a negative cosine counts 0
    assert weighted_fusion([("b", 0.4), ("a", 0.4)], [], 1.0) == [("a", 1.0), ("b", 1.0)]
    assert weighted_fusion([("a", 0.8), ("a", 0.1), ("b", 0.4)], [], 1.0) == [("a", 1.0), ("b", 0.5)]
    assert weighted_fusion([("a", 0.5), ("b", -0.5)], [("b", 2.0)], 0.5) == [("a", 0.5), ("b", 0.5)]
    with pytest.raises(InvalidRequestError, match="vector_weight must be within"):
        weighted_fusion([], [], 1.5)
    with pytest.raises(InvalidRequestError, match="lexical score of 'x' is not finite: nan"):
        weighted_fusion([], [("x", float("nan"))], 0.5)


_hits = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(-1, 50, allow_nan=False)),
    max_size=8,
    unique_by=lambda h: h[0],
)


@given(_hits, _hits, st.floats(0, 1))
def test_weighted_fusion_properties(
    vector: list[tuple[str, float]], lexical: list[tuple[str, float]], weight: float
) -> None:
    fused = weighted_fusion(vector, lexical, weight)
    assert {doc_id for doc_id, _ in fused} == {doc_id for doc_id, _ in vector + lexical}
    assert all(-1e-12 <= score <= 1 + 1e-12 for _, score in fused)
    assert fused == sorted(fused, key=lambda pair: (-pair[1], pair[0]))
    assert weighted_fusion(list(reversed(vector)), list(reversed(lexical)), weight) == fused
