"""The faster forms in splitting, chunking, reading and the manifest give exactly what the plain ones gave.

Chunk ids, offsets, fingerprints and manifest rows are stored between runs, so each shortcut is checked
against the straightforward form it replaced.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.chunking import make_chunks
from ingest.manifest import Manifest, ManifestEntry
from ingest.readers import SUPPORTED_SUFFIXES, ReaderOptions, SkippedFile, Unit, read_file
from ingest.readers.registry import readers
from ingest.splitters import RecursiveSplitter
from rag.embeddings import HashingEmbedding

_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
# The boundaries of the splitter's module docstring, coarsest first, with the sentence end as first
# written: two alternatives, where the splitter has one leading class.
_OLD_LEVELS = (
    re.compile(r"\n[ \t\f\v]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？]+"),
    re.compile(r"\s+"),
    re.compile(rf"[{_CJK}]|[^\s{_CJK}]{{1,20}}"),
    re.compile(r".", re.DOTALL),
)
_Piece = tuple[int, int, int, int]  # start, end, cost, level


Measure = Callable[[str], int]


def _reference_pieces(
    text: str, measure: Measure, start: int, end: int, level: int, limit: int
) -> Iterator[_Piece]:
    """Pieces of `text[start:end]` cut finer until each costs at most `limit`, every one measured."""
    cut = start
    for match in [*_OLD_LEVELS[level].finditer(text, start, end), None]:
        piece_end = end if match is None else match.end()
        if piece_end <= cut:
            continue
        piece_start, cut = cut, piece_end
        cost = measure(text[piece_start:piece_end])
        if cost <= limit or level == len(_OLD_LEVELS) - 1:
            yield piece_start, piece_end, cost, level
        else:
            yield from _reference_pieces(text, measure, piece_start, piece_end, level + 1, limit)


def _reference_tail(text: str, measure: Measure, current: list[_Piece], limit: int) -> list[_Piece]:
    """The last pieces costing at most `limit` in all: whole ones, else the end of the last one."""
    if limit <= 0:
        return []
    kept: list[_Piece] = []
    for piece in reversed(current):
        if sum(p[2] for p in kept) + piece[2] > limit:
            break
        kept.append(piece)
    start, end, _, level = current[-1]
    if kept or level == len(_OLD_LEVELS) - 1:
        return kept[::-1]
    return _reference_tail(
        text, measure, list(_reference_pieces(text, measure, start, end, level + 1, limit)), limit
    )


def _reference_spans(text: str, size: int, overlap: int, measure: Measure) -> list[tuple[int, int]]:
    """The chunk spans as the plain splitter cut them: pieces packed up to `size`, then trimmed."""
    groups: list[list[_Piece]] = [[]]
    for piece in _reference_pieces(text, measure, 0, len(text), 0, size):
        if groups[-1] and sum(p[2] for p in groups[-1]) + piece[2] > size:
            groups.append(_reference_tail(text, measure, groups[-1], min(overlap, size - piece[2])))
        groups[-1].append(piece)
    spans = []
    for group in filter(None, groups):
        start, end = group[0][0], group[-1][1]
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))
    return spans


def _spans(splitter: RecursiveSplitter, text: str) -> list[tuple[int, int]]:
    return [
        (c.char_start - 5, c.char_end - 5) for c in splitter.split(Unit(text, {"source": "a"}, char_offset=5))
    ]


# Words, each followed by what may end a sentence, close it and space it: each cut of the sentence
# pattern shows in the chunks once the chunks are a few words long.
_ENDING = st.tuples(
    st.sampled_from(["", *".!?…。！？", "。！"]),
    st.text(alphabet="\"'”’)]", max_size=2),
    st.sampled_from(["", " ", "  ", "\n", "\t", " \n"]),
)
_PUNCTUATED = st.lists(
    st.tuples(st.sampled_from(["ab", "b", "ab b", "b ab b"]), _ENDING).map(lambda p: p[0] + "".join(p[1])),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(_PUNCTUATED, st.integers(1, 4), st.integers(0, 2))
def test_sentence_pattern_cuts_where_the_two_branch_pattern_cut(text: str, size: int, overlap: int) -> None:
    splitter = RecursiveSplitter(size, min(overlap, size - 1))
    assert _spans(splitter, text) == _reference_spans(text, size, splitter.chunk_overlap, splitter.measure)


class _CountingCounter:
    """Counts words like the hashing model, and how many texts it measured."""

    __test__ = False
    max_tokens = None
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        self.calls += 1
        return HashingEmbedding().count_tokens(text)


_PROSE = st.text(alphabet="ab c. \n!?。向-", max_size=300)


@settings(max_examples=150, deadline=None)
@given(_PROSE, st.integers(2, 12), st.integers(0, 4), st.booleans())
def test_reusing_known_costs_leaves_the_chunks_unchanged(
    text: str, size: int, overlap: int, counted: bool
) -> None:
    fast = RecursiveSplitter(size, min(overlap, size - 1), HashingEmbedding() if counted else None)
    assert _spans(fast, text) == _reference_spans(text, size, fast.chunk_overlap, fast.measure)


def test_a_paragraph_of_one_line_is_not_measured_twice() -> None:
    sentences = " ".join(f"Sentence number {i} has six words." for i in range(40))
    fast_counter, plain_counter = _CountingCounter(), _CountingCounter()
    fast = _spans(RecursiveSplitter(50, 5, fast_counter), sentences)
    plain = _reference_spans(sentences, 50, 5, RecursiveSplitter(50, 5, plain_counter).measure)
    assert fast == plain and len(fast) > 4
    # Before, the paragraph was measured a second time as its single line; the rest (sentences, and the
    # words of each overlap) is measured once either way.
    assert plain_counter.calls - fast_counter.calls == 1


def test_an_overlap_smaller_than_the_last_piece_is_the_end_of_that_piece() -> None:
    # Sentences of three words fill chunks of six; the overlap of two is the end of the second sentence.
    text = "One two three. Four five six. Seven eight nine."
    chunks = RecursiveSplitter(6, 2).split(Unit(text, {"source": "a"}))
    assert [(c.text, c.char_start, c.char_end) for c in chunks] == [
        ("One two three. Four five six.", 0, 29),
        ("five six. Seven eight nine.", 20, 47),
    ]


def test_chunk_fingerprints_are_the_json_dumps_ones() -> None:
    unit = Unit("Alpha beta. Gamma delta.", {"source": "a.jsonl", "title": "Ü", "tags": ["x", "y"]}, 0, "d1")
    chunks = make_chunks("a.jsonl", [unit], RecursiveSplitter(3, 1), {"team": "rag"})
    assert len(chunks) == 2
    for chunk in chunks:
        dumped = json.dumps([chunk.id, sorted(chunk.metadata.items())], default=str).encode()
        assert chunk.digest == hashlib.blake2b(dumped, digest_size=12).hexdigest()


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT * FROM files ORDER BY source").fetchall()


def test_batched_manifest_writes_leave_the_rows_one_by_one_writes_leave(tmp_path: Path) -> None:
    old = ManifestEntry("a.md", "/r", 3, 7, "h", "k", ("1", "2"), ("d1", "d2"))
    pending = [("a.md", "/r", ["2", "3"]), ("new.md", "/r2", ["9"]), ("b.md", "/r", [])]
    done = [
        ManifestEntry("a.md", "/r", 4, 8, "h2", "k", ("2", "3"), ("e2", "e3")),
        ManifestEntry("new.md", "/r2", 1, 1, "h3", "k", ("9",), ("e9",)),
    ]
    one, many = tmp_path / "one.sqlite", tmp_path / "many.sqlite"
    with Manifest(one) as a, Manifest(many) as b:
        a.put(old)
        b.put_many([old])
        for source, root, ids in pending:
            a.mark_pending(source, root, ids)
        b.mark_pending_many(pending)
        a.commit()
        b.commit()
        assert _rows(one) == _rows(many)
        assert a.reconcile() == b.reconcile() == 3
        for entry in done:
            a.put(entry)
        b.put_many(done)
        a.commit()
        b.commit()
    assert _rows(one) == _rows(many)
    assert [row[0] for row in _rows(many)] == ["a.md", "b.md", "new.md"]


def test_read_file_takes_a_known_source_name(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "a.txt"
    path.parent.mkdir()
    path.write_text("Some text.", encoding="utf-8")
    computed = read_file(path, root=tmp_path)
    given_name = read_file(path, root=tmp_path, source="sub/a.txt")
    assert computed == given_name and computed.units[0].metadata["source"] == "sub/a.txt"
    assert readers() is readers() and set(readers()) == SUPPORTED_SUFFIXES  # built once
    assert read_file(path, root=tmp_path, options=ReaderOptions(), source="x.txt").units[0].metadata == {
        "source": "x.txt"
    }


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (b"plain ASCII text without NUL bytes", "plain ASCII text without NUL bytes"),
        ("UTF-16 text".encode("utf-16-le"), "UTF-16 text"),
        ("UTF-16 text".encode("utf-16-be"), "UTF-16 text"),
        (b"\x00\x00\x00\x00\x00\x00", None),  # NULs alone are no UTF-16 text: a binary file
    ],
    ids=["ascii", "utf-16-le", "utf-16-be", "nul"],
)
def test_utf16_guess_without_a_bom(tmp_path: Path, sample: bytes, expected: str | None) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(sample)
    if expected is None:
        with pytest.raises(SkippedFile, match="binary file"):
            read_file(path, root=tmp_path)
    else:
        assert read_file(path, root=tmp_path).text == expected
