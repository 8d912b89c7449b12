"""Cutting units into chunks that fit an embedding model: `RecursiveSplitter`.

The splitter cuts a unit's text at the coarsest boundary that makes the pieces small enough: blank
lines (paragraphs), then line breaks, then sentence ends, then spaces, then runs of at most 20
characters (a single CJK character each), then single characters. It then packs consecutive pieces
into chunks of at most `chunk_size`, and starts each chunk after the first with up to `chunk_overlap` of
the previous chunk's end, taken as whole sentences or words where they fit, so that text cut at a
boundary stays findable from either side. Each step is linear in the text's length.

Sizes are measured in the embedding model's own tokens when a `TokenCounter` is given, otherwise in
words: a run of non-space characters counts one word per 20 characters (a URL is several words, as
tokenizers make it several tokens), and each CJK character counts as a word, so text without spaces
is sized sensibly too.

Example:
    >>> from ingest.readers import Unit
    >>> splitter = RecursiveSplitter(chunk_size=4, chunk_overlap=1)
    >>> unit = Unit("One two three four. Five six seven.", {"source": "a.txt"})
    >>> [c.text for c in splitter.split(unit)]
    ['One two three four.', 'four. Five six seven.']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ingest.readers.base import MetadataValue, Unit
from rag.embeddings.base import TokenCounter
from rag.errors import InvalidRequestError

__all__ = ["DEFAULT_CHUNK_OVERLAP", "DEFAULT_CHUNK_SIZE", "Chunk", "RecursiveSplitter", "count_words"]

DEFAULT_CHUNK_SIZE = 200
DEFAULT_CHUNK_OVERLAP = 30

_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_WORD_UNIT = re.compile(rf"[{_CJK}]|[^\s{_CJK}]{{1,20}}")
# Each pattern marks where a piece ends (at the end of a match); the separator stays with the piece before.
_LEVELS = (
    re.compile(r"\n[ \t\f\v]*\n\s*"),  # paragraphs
    re.compile(r"\n\s*"),  # lines
    # Sentences: ". ", "?) " or a run of "。！？". One leading class rather than two alternatives lets the
    # regex engine skip ahead to the next candidate character, several times faster on long paragraphs.
    re.compile(r"[.!?…。！？](?:(?<=[。！？])[。！？]*|[\"'”’)\]]*\s+)"),
    re.compile(r"\s+"),  # words
    _WORD_UNIT,  # runs of at most 20 characters, or one CJK character
    re.compile(r".", re.DOTALL),  # characters
)
_LAST = len(_LEVELS) - 1


def count_words(text: str) -> int:
    """The word-mode size of `text` (see the module docstring)."""
    return len(_WORD_UNIT.findall(text))


@dataclass(frozen=True)
class Chunk:
    """A piece of a unit, ready to embed.

    `char_start`/`char_end` are offsets into the file's extracted text (see each reader), and `text` is
    exactly `file_text[char_start:char_end]`: chunks are trimmed of outer whitespace by moving the
    offsets, never by changing the text. `metadata` is the unit's plus `char_start` and `char_end`.

    Example:
        >>> Chunk("Hello", {"source": "a.txt", "char_start": 3, "char_end": 8}, 3, 8).char_end
        8
    """

    text: str
    metadata: dict[str, MetadataValue]
    char_start: int
    char_end: int

    __hash__ = None  # type: ignore[assignment]  # metadata is a dict


class _Piece(NamedTuple):
    start: int
    end: int
    cost: int
    level: int  # the level that produced it; a finer cut uses level + 1


class RecursiveSplitter:
    """Recursive splitting with overlap, sized in model tokens or in words.

    Defaults: 200 words (or tokens) with an overlap of 30. 200 words is a long paragraph: enough context
    for an answer to be recognisable, small enough that one chunk is about one thing, and (at ~1.3
    tokens per English word) within the 256-512 token inputs of common sentence-embedding models. The 15%
    overlap keeps a sentence cut at a chunk boundary whole in one of the two chunks. With a counter whose
    `max_tokens` is smaller, `chunk_size` is clamped to it (the overlap shrinks in proportion), and
    every chunk is checked against it: `truncated_chunks` counts chunks that would still exceed it, and
    stays 0 unless a single character is longer than the model's input.

    Example:
        >>> from ingest.readers import Unit
        >>> splitter = RecursiveSplitter(chunk_size=100, chunk_overlap=10)
        >>> chunks = splitter.split(Unit("A short text.", {"source": "a.txt"}, char_offset=7))
        >>> chunks[0].char_start, chunks[0].char_end, splitter.settings_key
        (7, 20, 'recursive-v1:words:100:10')
    """

    def __init__(
        self,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        counter: TokenCounter | None = None,
    ) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise InvalidRequestError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
        if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int) or chunk_overlap < 0:
            raise InvalidRequestError(f"chunk_overlap must be an integer >= 0, got {chunk_overlap!r}")
        if chunk_overlap >= chunk_size:
            raise InvalidRequestError(
                f"chunk_overlap must be smaller than chunk_size, got {chunk_overlap!r} >= {chunk_size!r}"
            )
        self._counter = counter
        self._max_tokens = counter.max_tokens if counter is not None else None
        size = chunk_size
        if self._max_tokens is not None and size > self._max_tokens:
            size = self._max_tokens
            chunk_overlap = chunk_overlap * size // chunk_size
        self.chunk_size = size
        self.chunk_overlap = chunk_overlap
        self.truncated_chunks = 0

    @functools.cached_property
    def _overhead(self) -> int:
        """The special tokens the counter adds once per input, measured when first needed (a model
        counts tokens only once it is loaded, and a run whose files are unchanged splits nothing)."""
        return self._counter.count_tokens("") if self._counter is not None else 0

    @property
    def settings_key(self) -> str:
        """Every setting that changes the chunks, as a short string (part of chunk ids)."""
        if self._counter is None:
            unit = "words"
        else:
            unit = f"tokens={getattr(self._counter, 'name', type(self._counter).__name__)}"
        return f"recursive-v1:{unit}:{self.chunk_size}:{self.chunk_overlap}"

    def measure(self, text: str) -> int:
        """The size of `text` in this splitter's unit (tokens without special tokens, or words)."""
        if self._counter is None:
            return count_words(text)
        return max(0, self._counter.count_tokens(text) - self._overhead)

    def split(self, unit: Unit) -> list[Chunk]:
        """The chunks of one unit, in order; none when the unit is blank."""
        text = unit.text
        # Pieces are measured without the special tokens a tokenizer adds once per input.
        budget = max(1, self.chunk_size - self._overhead)
        spans = self._split_span(text, 0, len(text), budget, self.chunk_overlap)
        chunks = []
        for start, end in spans:
            if self._max_tokens is not None:
                for sub_start, sub_end in self._fit(text, start, end, budget):
                    chunks.append(self._chunk(unit, sub_start, sub_end))
            else:
                chunks.append(self._chunk(unit, start, end))
        return chunks

    def _chunk(self, unit: Unit, start: int, end: int) -> Chunk:
        begin, finish = unit.char_offset + start, unit.char_offset + end
        metadata = {**unit.metadata, "char_start": begin, "char_end": finish}
        return Chunk(unit.text[start:end], metadata, begin, finish)

    def _fit(self, text: str, start: int, end: int, budget: int) -> Iterator[tuple[int, int]]:
        """The span itself when the model takes it whole, else smaller spans that fit (no overlap)."""
        assert self._counter is not None and self._max_tokens is not None
        tokens = self._counter.count_tokens(text[start:end])
        if tokens <= self._max_tokens:
            yield start, end
            return
        # Piece sizes do not add up exactly to the chunk's (tokens merge or split across piece
        # boundaries): retry with the budget scaled down by the overshoot. It always shrinks, so this ends.
        budget = min(budget - 1, budget * self._max_tokens // tokens)
        if budget < 1 or end - start <= 1:
            self.truncated_chunks += 1
            yield start, end
            return
        for sub_start, sub_end in self._split_span(text, start, end, budget, 0):
            yield from self._fit(text, sub_start, sub_end, budget)

    def _split_span(
        self, text: str, start: int, end: int, budget: int, overlap: int
    ) -> list[tuple[int, int]]:
        """Chunk spans of `text[start:end]`, trimmed of outer whitespace, packed up to `budget`."""
        spans: list[tuple[int, int]] = []
        current: list[_Piece] = []
        total = 0
        for piece in self._pieces(text, start, end, 0, budget):
            if current and total + piece.cost > budget:
                spans.append(_trim(text, current[0].start, current[-1].end))
                current = self._tail(text, current, min(overlap, budget - piece.cost))
                total = sum(p.cost for p in current)
            current.append(piece)
            total += piece.cost
        if current:
            spans.append(_trim(text, current[0].start, current[-1].end))
        return [(s, e) for s, e in spans if s < e]

    def _pieces(
        self, text: str, start: int, end: int, level: int, limit: int, known_cost: int = -1
    ) -> Iterator[_Piece]:
        """Consecutive pieces tiling `text[start:end]`, each cut finer until it costs at most `limit`.

        `known_cost`, when >= 0, is the measured size of `text[start:end]`.
        """
        # An explicit stack rather than nested generators: a long run of words would otherwise pass each
        # word up through one generator frame per level. A frame is (matches, [cut], begin, stop, depth,
        # cost of text[begin:stop] or -1).
        frames: list[tuple[Iterator[re.Match[str]], list[int], int, int, int, int]] = [
            (_LEVELS[level].finditer(text, start, end), [start], start, end, level, known_cost)
        ]
        while frames:
            matches, cut, begin, stop, depth, span_cost = frames[-1]
            match = next(matches, None)
            if match is None:
                frames.pop()
            piece_end = stop if match is None else match.end()
            if piece_end <= cut[0]:
                continue
            piece_start, cut[0] = cut[0], piece_end
            if span_cost >= 0 and piece_start == begin and piece_end == stop:
                # A finer level found no cut (a paragraph of one line, say): the span was measured already.
                cost = span_cost
            else:
                cost = self.measure(text[piece_start:piece_end])
            if cost <= limit or depth == _LAST:
                yield _Piece(piece_start, piece_end, cost, depth)
            else:
                finer = _LEVELS[depth + 1].finditer(text, piece_start, piece_end)
                frames.append((finer, [piece_start], piece_start, piece_end, depth + 1, cost))

    def _tail(self, text: str, pieces: list[_Piece], limit: int) -> list[_Piece]:
        """The last pieces costing at most `limit` in all: whole ones, else the end of the last one."""
        if limit <= 0:
            return []
        kept: list[_Piece] = []
        total = 0
        for piece in reversed(pieces):
            if total + piece.cost > limit:
                break
            kept.append(piece)
            total += piece.cost
        if kept:
            return kept[::-1]
        last = pieces[-1]
        if last.level == _LAST:
            return []
        # Finer pieces have a higher level, so this recursion ends at single characters.
        finer = self._pieces(text, last.start, last.end, last.level + 1, limit, last.cost)
        return self._tail(text, list(finer), limit)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
