"""Maximal marginal relevance: hand-made cases and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import InvalidRequestError
from rag.retrieval import mmr

# Two near-duplicates along x, one vector along y, one in between.
VECTORS = np.array([[1.0, 0.0], [0.995, 0.0998], [0.0, 1.0], [0.7071, 0.7071]])
RELEVANCE = [0.9, 0.89, 0.3, 0.6]


def test_diversity_zero_is_the_relevance_order() -> None:
    assert mmr(None, VECTORS, RELEVANCE, 4, 0.0) == [0, 1, 3, 2]
    assert mmr(None, VECTORS, [0.5, 0.5, 0.7, 0.5], 4, 0.0) == [2, 0, 1, 3]  # ties by index


def test_diversity_skips_near_duplicates() -> None:
    # Relevance rescales to [1, 0.983, 0, 0.5]. After 0, with cosines to it 0.995, 0 and 0.707:
    # 1 -> 0.5 * 0.983 - 0.5 * 0.995 < 0, 2 -> 0, 3 -> 0.25 - 0.354 < 0: the orthogonal 2 wins.
    assert mmr(None, VECTORS, RELEVANCE, 3, 0.5) == [0, 2, 1]
    assert mmr(None, VECTORS, RELEVANCE, 4, 0.2) == [0, 1, 3, 2]
    assert mmr(None, VECTORS, RELEVANCE, 2, 1.0) == [0, 2]  # novelty alone: the orthogonal one


def test_raw_relevance_follows_the_langchain_formula() -> None:
    # lambda = 0.3: 0.3 * rel - 0.7 * max_sim. After 0: 1 -> 0.267-0.697 < 0; 3 -> 0.18-0.495; 2 -> 0.09.
    assert mmr(None, VECTORS, RELEVANCE, 2, 0.7, normalize=False) == [0, 2]


def test_relevance_defaults_to_cosine_with_the_query() -> None:
    query = np.array([0.0, 2.0])
    assert mmr(query, VECTORS, None, 4, 0.0) == [2, 3, 1, 0]
    assert mmr(query, VECTORS, None, 2, 0.6) == [2, 0]


def test_sizes_and_validation() -> None:
    assert sorted(mmr(None, VECTORS, RELEVANCE, 10, 0.3)) == [0, 1, 2, 3]
    assert mmr(None, VECTORS, RELEVANCE, 0, 0.5) == []
    assert mmr(None, np.zeros((0, 2)), [], 3, 0.5) == []
    with pytest.raises(InvalidRequestError, match="diversity must be within"):
        mmr(None, VECTORS, RELEVANCE, 2, 1.5)
    with pytest.raises(InvalidRequestError, match="top_k must be an integer >= 0, got -1"):
        mmr(None, VECTORS, RELEVANCE, -1, 0.5)
    with pytest.raises(InvalidRequestError, match="one score per candidate"):
        mmr(None, VECTORS, [1.0], 2, 0.5)
    with pytest.raises(InvalidRequestError, match="needs a query_vector or relevance"):
        mmr(None, VECTORS, None, 2, 0.5)
    with pytest.raises(InvalidRequestError, match="finite"):
        mmr(None, VECTORS, [1.0, float("nan"), 0.0, 0.0], 2, 0.5)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 30),
    st.integers(0, 35),
    st.floats(0, 1),
    st.integers(0, 2**31),
)
def test_mmr_properties(count: int, top_k: int, diversity: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, 5))
    relevance = rng.choice([0.1, 0.5, 0.9], size=count) if seed % 2 else rng.random(count)
    picked = mmr(None, vectors, relevance, top_k, diversity)
    assert len(picked) == min(top_k, count) and len(set(picked)) == len(picked)
    order = np.argsort(-relevance, kind="stable").tolist()
    if picked:
        assert picked[0] == order[0]  # the most relevant always comes first
    assert mmr(None, vectors, relevance, top_k, 0.0) == order[:top_k]
    assert mmr(None, vectors, relevance, top_k, diversity) == picked  # deterministic
