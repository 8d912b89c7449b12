"""Postings read back exactly through every path that builds segments (adds, merges, deletes and
compaction, saves and loads), seen through the index's public searches."""

from __future__ import annotations

import doctest
import gc
import importlib
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stores.lexical import LexicalIndex
from stores.lexical.text import analyze


def _texts(count: int, seed: int) -> list[str]:
    """Zipf-like chunks over 400 words: the commonest few are in most texts, the rest rare."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}x" for i in range(400)]
    return [
        " ".join(words[min(r, 400) - 1] for r in rng.zipf(1.3, size=int(n)).tolist())
        for n in rng.integers(5, 30, size=count)
    ]


def _check(index: LexicalIndex, texts: dict[str, str]) -> None:
    """Each term finds exactly the live texts holding it, and scores as in an index built at once."""
    holders: dict[str, set[str]] = {}
    for doc_id, text in texts.items():
        for term in Counter(analyze(text)):
            holders.setdefault(term, set()).add(doc_id)
    assert index.document_frequencies() == {term: len(ids) for term, ids in holders.items()}
    for term, ids in holders.items():
        assert {doc_id for doc_id, _ in index.search(term, len(texts))} == ids, term
    fresh = LexicalIndex()
    fresh.add(list(texts), list(texts.values()))
    for query in ("w1x w7x", "w2x w300x w1x", "w399x", "w1x"):
        assert index.search(query, 50) == fresh.search(query, 50), query


def test_postings_read_back_through_adds_deletes_and_loads(tmp_path: Path) -> None:
    texts = _texts(3000, 1)
    ids = [f"d{i}" for i in range(len(texts))]
    index = LexicalIndex()
    live: dict[str, str] = {}
    for begin in range(0, 3000, 700):  # five adds: segments merge as they go
        index.add(ids[begin : begin + 700], texts[begin : begin + 700])
        live.update(zip(ids[begin : begin + 700], texts[begin : begin + 700], strict=True))
    _check(index, live)
    renumbered = index.renumberings
    index.delete(ids[:1700])  # past half: the rows are renumbered and the postings merged again
    assert index.renumberings == renumbered + 1 and index.row_count == 1300
    for doc_id in ids[:1700]:
        del live[doc_id]
    index.add(["d5", "d2999"], ["w1x w1x w399x", "w2x"])  # a new document and an upsert
    live.update({"d5": "w1x w1x w399x", "d2999": "w2x"})
    _check(index, live)
    index.save(tmp_path / "lexical")
    _check(LexicalIndex.load(tmp_path / "lexical"), live)


def test_term_ids_and_frequencies_past_narrow_types_read_back(tmp_path: Path) -> None:
    words = [f"z{i}q" for i in range(70_000)]
    index = LexicalIndex()
    index.add(["a", "b"], [" ".join(words[:35_000]), " ".join(words[35_000:]) + " z5q"])
    index.add(["c"], ["z7q " * 300])  # a frequency past one byte
    assert [doc_id for doc_id, _ in index.search("z69999q", top_k=2)] == ["b"]
    assert sorted(doc_id for doc_id, _ in index.search("z5q", top_k=2)) == ["a", "b"]
    index.save(tmp_path / "wide")
    loaded = LexicalIndex.load(tmp_path / "wide")
    for query in ("z69999q z5q", "z7q"):
        assert loaded.search(query, top_k=3) == index.search(query, top_k=3)


def test_the_lexical_index_keeps_under_five_bytes_a_posting() -> None:
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(3000)]
    texts = [
        " ".join(words[r] for r in (np.minimum(rng.zipf(1.1, size=size), 3000) - 1).tolist())
        for size in rng.integers(30, 51, size=20_000).tolist()
    ]
    gc.collect()
    tracemalloc.start()
    try:
        index = LexicalIndex()
        index.add([f"d{i}" for i in range(len(texts))], texts)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    postings = sum(index.document_frequencies().values())
    assert postings > 350_000
    # A 2-byte row offset and a 1-byte frequency a posting, a term's id and offset per segment, 2 bytes
    # of length a document, beside packed ids and vocabulary: 4.64 bytes a posting here (6.85 with
    # 4-byte rows and lengths).
    assert held / postings < 5.0


def test_a_document_of_more_terms_than_two_bytes_count_scores_exactly() -> None:
    index = LexicalIndex()
    index.add(["short"], ["storm fog"])
    index.add(["long"], ["fog " * 70_000 + "storm"])
    assert index.stats.total_length == 70_003
    # BM25 by hand with the true lengths (70,001 and 2 terms) and Lucene's idf.
    k1, b, average = index.settings.k1, index.settings.b, 70_003 / 2
    idf = np.log(1 + (2 - 2 + 0.5) / (2 + 0.5))

    def bm25(tf: int, length: int) -> float:
        return float(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)))

    scores = dict(index.search("fog", top_k=2))
    assert scores["long"] == pytest.approx(bm25(70_000, 70_001), rel=1e-12)
    assert scores["short"] == pytest.approx(bm25(1, 2), rel=1e-12)


@pytest.mark.parametrize(
    "name",
    [
        "stores.lexical.idmap",
        "stores.lexical.index",
        "stores.lexical.persist",
        "stores.lexical.segments",
        "stores.lexical.text",
        "stores.numpy.columns",
        "stores.numpy.records",
    ],
)
def test_the_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
