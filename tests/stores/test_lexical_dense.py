"""The rows of common terms kept as bitmaps: every posting reads back exactly, through every path
that builds segments (adds, merges, deletes and compaction, splits, saves and loads)."""

from __future__ import annotations

import doctest
import importlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stores.lexical import LexicalIndex
from stores.lexical.dense import split_dense
from stores.lexical.segments import NARROW_SPAN, postings
from stores.lexical.text import analyze


def _texts(count: int, seed: int) -> list[str]:
    """Zipf-like chunks over 400 words: the commonest few are in most texts (dense), the rest sparse."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}x" for i in range(400)]
    return [
        " ".join(words[min(r, 400) - 1] for r in rng.zipf(1.3, size=int(n)).tolist())
        for n in rng.integers(5, 30, size=count)
    ]


def _check(index: LexicalIndex, texts: dict[str, str]) -> None:
    """Each term's postings (row and frequency) equal those counted from the live texts."""
    expected: dict[str, dict[str, int]] = {}
    for doc_id, text in texts.items():
        for term, tf in Counter(analyze(text)).items():
            expected.setdefault(term, {})[doc_id] = tf
    vocabulary = index._vocabulary
    live = index._live
    for term, by_id in expected.items():
        [term_id] = vocabulary.encode_query(term)
        rows, tfs = postings(index._segments, term_id)
        held = {
            index.id_at(row): tf for row, tf in zip(rows.tolist(), tfs.tolist(), strict=True) if live[row]
        }
        assert held == by_id, term
        assert rows.tolist() == sorted(rows.tolist()), term
    assert index.document_frequencies() == {term: len(by_id) for term, by_id in expected.items()}


def test_dense_terms_read_back_through_adds_deletes_and_loads(tmp_path: Path) -> None:
    texts = _texts(3000, 1)
    ids = [f"d{i}" for i in range(len(texts))]
    index = LexicalIndex()
    live: dict[str, str] = {}
    for begin in range(0, 3000, 700):  # five adds: segments merge as they go
        index.add(ids[begin : begin + 700], texts[begin : begin + 700])
        live.update(zip(ids[begin : begin + 700], texts[begin : begin + 700], strict=True))
    assert any(segment.dense.at.size for segment in index._segments)
    assert any(segment.sparse.size for segment in index._segments)
    _check(index, live)
    index.delete(ids[:1700])  # past half: the rows are renumbered and the postings merged again
    for doc_id in ids[:1700]:
        del live[doc_id]
    index.add(["d5", "d2999"], ["w1x w1x w399x", "w2x"])  # a new document and an upsert
    live.update({"d5": "w1x w1x w399x", "d2999": "w2x"})
    _check(index, live)
    index.save(tmp_path / "lexical")
    loaded = LexicalIndex.load(tmp_path / "lexical")
    assert any(segment.dense.at.size for segment in loaded._segments)
    _check(loaded, live)
    for query in ("w1x w7x", "w2x w300x w1x", "w399x"):
        assert loaded.search(query, top_k=50) == index.search(query, top_k=50)


def test_bitmaps_cover_segments_of_every_row_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    # Segments of 1,000 rows (scaled down from 65,536): bitmaps of 125 bytes, split over several
    # segments, and the last bit of a segment set.
    monkeypatch.setattr("stores.lexical.segments.NARROW_SPAN", 1000)
    texts = _texts(3500, 2)
    texts[999] = texts[1999] = texts[3499] = "w1x w2x"
    index = LexicalIndex()
    index.add([f"d{i}" for i in range(len(texts))], texts)
    assert len(index._segments) == 4 and all(s.dense.at.size for s in index._segments)
    _check(index, {f"d{i}": text for i, text in enumerate(texts)})


def test_each_term_takes_the_smaller_form() -> None:
    # 16 rows: a bitmap takes 2 bytes (+ 12 of bookkeeping), offsets 2 bytes each.
    starts = np.array([0, 8, 15, 16])
    local = np.array([*range(0, 16, 2), *range(1, 15, 2), 3], np.uint16)
    dense, sparse = split_dense(starts, local, span=16, itemsize=2)
    assert dense.at.tolist() == [0] and sparse.tolist() == [*range(1, 15, 2), 3]
    assert dense.bits.tolist() == [[0b01010101, 0b01010101]]
    assert dense.expand(starts, sparse, 16).tolist() == local.tolist()
    assert split_dense(starts, local, span=16, itemsize=1)[0].at.size == 0
    assert NARROW_SPAN == 1 << 16


def test_term_ids_past_two_bytes_keep_four_byte_terms(tmp_path: Path) -> None:
    words = [f"z{i}q" for i in range(70_000)]
    index = LexicalIndex()
    index.add(["a", "b"], [" ".join(words[:35_000]), " ".join(words[35_000:]) + " z5q"])
    assert [segment.terms.dtype for segment in index._segments] == [np.int32]
    assert [doc_id for doc_id, _ in index.search("z69999q", top_k=2)] == ["b"]
    assert sorted(doc_id for doc_id, _ in index.search("z5q", top_k=2)) == ["a", "b"]
    index.save(tmp_path / "wide")
    loaded = LexicalIndex.load(tmp_path / "wide")
    assert loaded.search("z69999q z5q", top_k=2) == index.search("z69999q z5q", top_k=2)
    small = LexicalIndex()
    small.add(["a"], ["z1q z2q"])
    assert [segment.terms.dtype for segment in small._segments] == [np.uint16]


@pytest.mark.parametrize(
    "name",
    ["stores.lexical.dense", "stores.lexical.segments", "stores.numpy.columns", "stores.numpy.records"],
)
def test_the_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
