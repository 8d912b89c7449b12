"""The pieces of the keyed ranking: equal scores by id, exact order from float32 scores, BM25 by rows.

Each is checked against the plain way of doing the same thing (sorting (score, id) pairs in Python,
scoring every candidate exactly, summing BM25 over every row), on inputs crowded with ties.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt
import pytest

from stores.lexical import LexicalIndex
from stores.lexical.segments import build, postings_of
from stores.lexical.text import analyze
from stores.ties import best_first


def _names(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(32):08x}" for _ in range(count)]


def test_best_first_orders_by_score_then_id_and_reads_only_tied_ids() -> None:
    names = _names(200, 1)
    rng = np.random.default_rng(1)
    keys = rng.permutation(200)
    scores = rng.integers(0, 40, 200).astype(np.float64) / 7  # about five keys share each score
    scores[:20] = np.arange(100.0, 120.0)  # and twenty scores are unique
    asked: list[int] = []

    def ids_of(tied: npt.NDArray[np.int64]) -> list[str]:
        asked.extend(tied.tolist())
        return [names[k] for k in tied.tolist()]

    for limit in (None, 1, 25, 200):
        asked.clear()
        ranked, ranked_scores = best_first(keys, scores, ids_of, limit)
        expected = sorted(
            zip(scores.tolist(), keys.tolist(), strict=True), key=lambda p: (-p[0], names[p[1]])
        )
        assert list(zip(ranked_scores.tolist(), ranked.tolist(), strict=True)) == expected[:limit]
        assert not set(asked) & set(keys[:20].tolist())  # the unique scores' ids were never read


def test_best_first_of_distinct_scores_reads_no_id() -> None:
    def no_ids(tied: npt.NDArray[np.int64]) -> list[str]:
        raise AssertionError(f"read the ids of {tied}")

    ranked, _ = best_first(np.array([3, 1, 2]), np.array([0.1, 0.3, 0.2]), no_ids)
    assert ranked.tolist() == [1, 2, 3]


def test_postings_of_many_terms_equals_one_term_at_a_time() -> None:
    rng = np.random.default_rng(5)
    segments = []
    for first in (0, 40, 90):
        count = 30
        terms = rng.integers(0, 25, 200).astype(np.int32)
        segments.append(build(terms, rng.integers(0, count, 200), count, first))
    segments.append(build(np.zeros(0, np.int32), np.zeros(0, np.int64), 5, 120))  # no postings
    wanted = [0, 3, 3, 24, 25, 1000, 7]  # repeated, absent, past every segment's terms
    found = postings_of(segments, wanted)
    for term, (rows, tfs) in zip(wanted, found, strict=True):
        parts = [
            (s.absolute_rows[s.starts[i] : s.starts[i + 1]], s.tfs[s.starts[i] : s.starts[i + 1]])
            for s in segments
            for i in np.flatnonzero(s.terms == term).tolist()
        ]
        expected_rows = np.concatenate([r for r, _ in parts]) if parts else np.zeros(0, np.int32)
        expected_tfs = np.concatenate([t for _, t in parts]) if parts else np.zeros(0, np.uint8)
        assert rows.tolist() == expected_rows.tolist() and tfs.tolist() == expected_tfs.tolist()


WORDS = [
    a + b for a in ("ka", "lo", "mi", "ne", "ru") for b in ("lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe")
]


def _index(seed: int) -> tuple[LexicalIndex, list[str]]:
    """An index of several segments with dead rows, over short texts of few words (ties abound)."""
    rng = random.Random(seed)
    index = LexicalIndex()
    names = _names(900, seed)
    start = 0
    for size in (600, 150, 100, 40, 10):  # sizes that geometric merging keeps in separate segments
        batch = names[start : start + size]
        index.add(batch, [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in batch])
        start += size
    index.delete(names[::5])
    return index, [name for i, name in enumerate(names) if i % 5]


QUERIES = {"kalo": "sparse", "kami kami kane": "sparse", " ".join(WORDS[:12]): "dense"}


@pytest.mark.parametrize("query", [*QUERIES, "absent"])
def test_bm25_search_sums_like_the_dense_scores_bit_for_bit(query: str) -> None:
    """`search` sums over the hits (or, for a query with many postings, over every row): the same sums."""
    index, live = _index(2)
    assert index.segment_count > 1
    df = index.document_frequencies()
    postings = sum(df.get(term, 0) for term in set(analyze(query)))
    if postings:  # each way of summing is taken by some query
        assert ("dense" if 4 * postings >= index.row_count else "sparse") == QUERIES[query]
    dense = dict(zip(live, index.scores_for(query, live).tolist(), strict=True))
    expected = sorted(((i, s) for i, s in dense.items() if s > 0), key=lambda hit: (-hit[1], hit[0]))
    for top_k in (1, 10, 1000):
        assert index.search(query, top_k) == expected[:top_k]
        rows, scores = index.search_rows(query, top_k)
        assert list(zip(index.ids_at(rows.tolist()), scores.tolist(), strict=True)) == expected[:top_k]
    if query != "absent":
        assert len(expected) - len({score for _, score in expected}) > 20  # ties to break by id


def test_search_rows_honours_the_row_mask() -> None:
    index, live = _index(3)
    mask = np.zeros(index.row_count, np.bool_)
    kept = live[::3]
    mask[index.rows_of(kept)] = True
    rows, _ = index.search_rows("lamp stone", 50, row_mask=mask)
    assert set(index.ids_at(rows.tolist())) <= set(kept)
    assert index.ids_at(rows.tolist()) == [i for i, _ in index.search("lamp stone", 50, allowed=set(kept))]
