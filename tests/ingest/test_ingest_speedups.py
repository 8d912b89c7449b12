"""The faster forms in splitting, chunking, reading and the manifest give exactly what the plain ones gave.

Chunk ids, offsets, fingerprints and manifest rows are stored between runs, so each shortcut is checked
against the straightforward form it replaced.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.chunking import make_chunks
from ingest.manifest import Manifest, ManifestEntry
from ingest.readers import SUPPORTED_SUFFIXES, ReaderOptions, SkippedFile, Unit, read_file
from ingest.readers.registry import readers
from ingest.splitters import _LEVELS, RecursiveSplitter, _Piece
from rag.embeddings import HashingEmbedding

_OLD_SENTENCE = re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？]+")
_PUNCTUATED = st.text(alphabet="ab .!?…。！？\"'”’)]\n\t", max_size=80)


@settings(max_examples=300, deadline=None)
@given(_PUNCTUATED, st.integers(0, 80), st.integers(0, 80))
def test_sentence_pattern_finds_what_the_two_branch_pattern_found(text: str, start: int, stop: int) -> None:
    def spans(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(text, start, stop)]

    assert spans(_LEVELS[2]) == spans(_OLD_SENTENCE)


class _Remeasuring(RecursiveSplitter):
    """The splitter as before: every piece measured, even one a finer level leaves whole."""

    def _pieces(
        self, text: str, start: int, end: int, level: int, limit: int, known_cost: int = -1
    ) -> Iterator[_Piece]:
        frames = [(_LEVELS[level].finditer(text, start, end), [start], end, level)]
        while frames:
            matches, cut, stop, depth = frames[-1]
            match = next(matches, None)
            if match is None:
                frames.pop()
            piece_end = stop if match is None else match.end()
            if piece_end <= cut[0]:
                continue
            piece_start, cut[0] = cut[0], piece_end
            cost = self.measure(text[piece_start:piece_end])
            if cost <= limit or depth == len(_LEVELS) - 1:
                yield _Piece(piece_start, piece_end, cost, depth)
            else:
                frames.append(
                    (
                        _LEVELS[depth + 1].finditer(text, piece_start, piece_end),
                        [piece_start],
                        piece_end,
                        depth + 1,
                    )
                )


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
    overlap = min(overlap, size - 1)
    fast = RecursiveSplitter(size, overlap, HashingEmbedding() if counted else None)
    plain = _Remeasuring(size, overlap, HashingEmbedding() if counted else None)
    unit = Unit(text, {"source": "a.txt"}, char_offset=5)
    assert fast.split(unit) == plain.split(unit)


def test_a_paragraph_of_one_line_is_not_measured_twice() -> None:
    sentences = " ".join(f"Sentence number {i} has six words." for i in range(40))
    fast_counter, plain_counter = _CountingCounter(), _CountingCounter()
    fast = RecursiveSplitter(50, 5, fast_counter).split(Unit(sentences, {"source": "a"}))
    plain = _Remeasuring(50, 5, plain_counter).split(Unit(sentences, {"source": "a"}))
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
