"""RecursiveSplitter: sizes, overlap, offsets, odd text, and the model's hard input limit."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.embedders import make_splitter
from ingest.readers import Unit
from ingest.splitters import Chunk, RecursiveSplitter, count_words
from rag.embeddings import SentenceTransformerEmbedding
from rag.errors import InvalidRequestError


class FakeCounter:
    """Counts words, plus `[CLS]`/`[SEP]`; `penalty` makes long texts cost more than their parts."""

    __test__ = False

    def __init__(self, max_tokens: int | None, penalty: int = 0) -> None:
        self.max_tokens = max_tokens
        self.penalty = penalty
        self.name = f"fake-{max_tokens}-{penalty}"

    def count_tokens(self, text: str) -> int:
        words = len(text.split())
        return words + (words * words // self.penalty if self.penalty else 0) + 2


def _unit(text: str, offset: int = 0) -> Unit:
    return Unit(text, {"source": "a.txt", "page": 3}, char_offset=offset)


def _check_offsets(chunks: list[Chunk], file_text: str) -> None:
    for chunk in chunks:
        assert chunk.text == file_text[chunk.char_start : chunk.char_end]
        assert chunk.text and chunk.text == chunk.text.strip()
        assert (chunk.metadata["char_start"], chunk.metadata["char_end"]) == (
            chunk.char_start,
            chunk.char_end,
        )


def _sentences(n: int, words: int = 9) -> str:
    return " ".join(" ".join(f"w{s}x{i}" for i in range(words)) + "." for s in range(n))


def test_small_text_is_one_chunk_with_unit_metadata() -> None:
    prefix = "HEADER\n"
    chunks = RecursiveSplitter().split(_unit("  Short text.  ", offset=len(prefix)))
    assert [c.text for c in chunks] == ["Short text."]
    assert chunks[0].metadata == {"source": "a.txt", "page": 3, "char_start": 9, "char_end": 20}
    _check_offsets(chunks, prefix + "  Short text.  ")


def test_chunks_respect_size_and_overlap_whole_sentences() -> None:
    text = _sentences(60)  # 60 sentences of 9 words
    chunks = RecursiveSplitter(chunk_size=50, chunk_overlap=20).split(_unit(text))
    _check_offsets(chunks, text)
    assert all(count_words(c.text) <= 50 for c in chunks)
    for before, after in itertools.pairwise(chunks):
        shared = text[after.char_start : before.char_end]
        assert after.char_start < before.char_end
        assert count_words(shared) == 18  # two whole sentences: a third would pass 20
        assert shared.startswith("w") and shared.endswith(".")
    assert chunks[-1].char_end == len(text)


def test_overlap_falls_back_to_words_inside_a_long_sentence() -> None:
    text = " ".join(f"word{i}" for i in range(100))  # one sentence, no punctuation
    chunks = RecursiveSplitter(chunk_size=30, chunk_overlap=5).split(_unit(text))
    _check_offsets(chunks, text)
    firsts = [int(c.text.split()[0][4:]) for c in chunks]
    assert firsts == [0, 25, 50, 75]
    assert all(count_words(c.text) == 30 for c in chunks[:-1])


def test_zero_overlap_tiles_the_text() -> None:
    text = "\n\n".join(f"Paragraph {i} has five words." for i in range(40))
    chunks = RecursiveSplitter(chunk_size=12, chunk_overlap=0).split(_unit(text))
    assert all(a.char_end < b.char_start for a, b in itertools.pairwise(chunks))
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_paragraphs_are_preferred_boundaries() -> None:
    text = "First para words here.\n\nSecond para words here.\n\nThird one."
    chunks = RecursiveSplitter(chunk_size=8, chunk_overlap=0).split(_unit(text))
    assert [c.text for c in chunks] == ["First para words here.\n\nSecond para words here.", "Third one."]


def test_blank_units_give_no_chunks() -> None:
    assert RecursiveSplitter().split(_unit("")) == []
    assert RecursiveSplitter().split(_unit(" \n\n\t \n")) == []


def test_unicode_text_offsets_are_exact() -> None:
    text = "Ünïcödé 🎉 emoji, naïve café.\n\n" * 50
    chunks = RecursiveSplitter(chunk_size=20, chunk_overlap=4).split(_unit(text))
    _check_offsets(chunks, text)
    assert len(chunks) > 5


def test_cjk_without_spaces_is_sized_by_characters() -> None:
    text = "检索增强生成把文档切成小块再做向量检索。" * 30 + "没有标点的长句子" * 40
    chunks = RecursiveSplitter(chunk_size=50, chunk_overlap=10).split(_unit(text))
    _check_offsets(chunks, text)
    assert all(len(c.text) <= 50 for c in chunks)
    assert chunks[1].text.startswith(chunks[0].text[-10:])  # one ten-character sentence of overlap
    assert "".join(c.text for c in chunks[:1]) in text


def test_giant_single_word_falls_back_to_character_runs() -> None:
    word = "x" * 50_000
    chunks = RecursiveSplitter(chunk_size=100, chunk_overlap=10).split(_unit(f"start {word} end"))
    assert all(len(c.text) <= 100 * 20 for c in chunks)
    assert chunks[0].text.startswith("start x")
    assert chunks[-1].text.endswith("x end")
    covered = sum(c.char_end - c.char_start for c in chunks) - sum(
        max(0, a.char_end - b.char_start) for a, b in itertools.pairwise(chunks)
    )
    assert covered == len(word) + len("start  end")


def test_max_tokens_clamps_chunk_size_and_is_never_exceeded() -> None:
    counter = FakeCounter(max_tokens=40)
    splitter = RecursiveSplitter(chunk_size=200, chunk_overlap=30, counter=counter)
    assert (splitter.chunk_size, splitter.chunk_overlap) == (40, 6)
    text = _sentences(100, words=7)
    chunks = splitter.split(_unit(text))
    _check_offsets(chunks, text)
    assert max(counter.count_tokens(c.text) for c in chunks) <= 40
    assert splitter.truncated_chunks == 0
    assert splitter.settings_key == "recursive-v1:tokens=fake-40-0:40:6"


def test_counters_whose_sizes_do_not_add_up_still_fit() -> None:
    counter = FakeCounter(max_tokens=60, penalty=10)  # 40 words cost 40 + 160 + 2 tokens
    splitter = RecursiveSplitter(chunk_size=60, chunk_overlap=5, counter=counter)
    text = " ".join(f"t{i}" for i in range(3000))
    chunks = splitter.split(_unit(text))
    assert max(counter.count_tokens(c.text) for c in chunks) <= 60
    assert splitter.truncated_chunks == 0
    assert {w for c in chunks for w in c.text.split()} == set(text.split())


def test_a_counter_without_limit_only_sizes() -> None:
    splitter = RecursiveSplitter(chunk_size=12, chunk_overlap=2, counter=FakeCounter(max_tokens=None))
    chunks = splitter.split(_unit(_sentences(10, words=4)))
    assert all(len(c.text.split()) <= 10 for c in chunks)  # 12 tokens minus [CLS] and [SEP]


def test_a_known_limit_keys_chunks_before_the_model_loads(tmp_path: Path) -> None:
    """The settings key (part of every chunk id) needs only the model's input limit, not its tokenizer.
    The folder holds no model, so any load would fail."""
    (tmp_path / "minilm").mkdir()
    model = SentenceTransformerEmbedding(str(tmp_path / "minilm"), known_dimensions=8, known_max_tokens=128)
    splitter = make_splitter(model, None, None)
    assert splitter.settings_key == "recursive-v1:tokens=minilm:128:19"  # 200 and 30, scaled to 128


def test_settings_key_changes_with_every_setting() -> None:
    keys = {
        RecursiveSplitter().settings_key,
        RecursiveSplitter(chunk_size=201).settings_key,
        RecursiveSplitter(chunk_overlap=31).settings_key,
        RecursiveSplitter(counter=FakeCounter(512)).settings_key,
    }
    assert len(keys) == 4
    assert RecursiveSplitter().settings_key == "recursive-v1:words:200:30"


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, "chunk_size must be an integer >= 1, got 0"),
        (10, -1, "chunk_overlap must be an integer >= 0, got -1"),
        (10, 10, "chunk_overlap must be smaller than chunk_size, got 10 >= 10"),
        (True, 0, "chunk_size must be an integer >= 1, got True"),
    ],
)
def test_invalid_settings(size: int, overlap: int, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        RecursiveSplitter(chunk_size=size, chunk_overlap=overlap)


def test_count_words() -> None:
    assert count_words("two words") == 2
    assert count_words("x" * 41) == 3
    assert count_words("日本語 text") == 4
    assert count_words(" \n ") == 0


_PIECES = st.sampled_from(
    ["alpha", "beta", "γάμμα", "长", "句子。", ".", "!", " ", " ", "\n", "\n\n", "x" * 30]
)


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=200),
    size=st.integers(min_value=1, max_value=30),
    overlap_ratio=st.floats(min_value=0.0, max_value=0.9),
    offset=st.integers(min_value=0, max_value=5),
)
def test_invariants_on_random_text(pieces: list[str], size: int, overlap_ratio: float, offset: int) -> None:
    text = "".join(pieces)
    file_text = "#" * offset + text
    splitter = RecursiveSplitter(chunk_size=size, chunk_overlap=min(size - 1, int(size * overlap_ratio)))
    chunks = splitter.split(_unit(text, offset))
    _check_offsets(chunks, file_text)
    assert all(count_words(c.text) <= size for c in chunks)
    covered: set[int] = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    assert all(i + offset in covered for i, ch in enumerate(text) if not ch.isspace())
    starts = [c.char_start for c in chunks]
    assert starts == sorted(set(starts))  # strictly moving forward, never a repeated chunk
