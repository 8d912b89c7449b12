"""HashingEmbedding and the shared tokenizer: determinism, ranking, validation, token counting."""

from __future__ import annotations

import gc
import hashlib
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.embeddings import hashing
from rag.embeddings.base import EmbeddingModel, TokenCounter
from rag.embeddings.hashing import HashingEmbedding
from rag.embeddings.tokenize import COMMON_WORDS, STOPWORDS, count_words, fold, stem, terms
from rag.errors import InvalidRequestError

PASSAGES = [
    "Chroma persists vectors in a local SQLite database under the .rag folder.",
    "The numpy store keeps every embedding in memory and saves it atomically.",
    "Mitochondrial dysfunction in neurons accelerates the progression of Alzheimer disease.",
    "Photosynthesis converts sunlight, water and carbon dioxide into glucose.",
    "Insulin resistance in adipose tissue precedes type 2 diabetes.",
]


def rank(model: HashingEmbedding, query: str, passages: list[str]) -> list[int]:
    vectors = model.embed(passages)
    scores = vectors @ model.embed([query])[0]
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def test_shape_dtype_and_unit_rows() -> None:
    model = HashingEmbedding(256)
    vectors = model.embed(PASSAGES)
    assert vectors.shape == (len(PASSAGES), 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_empty_inputs() -> None:
    model = HashingEmbedding(64)
    assert model.embed([]).shape == (0, 64)
    rows = model.embed(["", "the of and", "!!! ---"])
    assert rows.shape == (3, 64)
    assert not rows.any(), "texts without kept words give zero rows"


def test_pinned_buckets_and_weights() -> None:
    # Pins the hash, the tokenizer and the weighting: a change here changes every stored vector, so it
    # must come with a new version in `name`.
    vector = HashingEmbedding(1024).embed(["Hello world, hello vectors"])[0]
    nonzero = np.flatnonzero(vector)
    assert nonzero.tolist() == [344, 679, 806]
    # "hello" twice: 1 + ln 2; "vectors" -> "vector": 1; "world" is a common word: 0.5.
    expected = np.array([0.5, -(1 + np.log(2)), -1.0])
    np.testing.assert_allclose(vector[nonzero], expected / np.linalg.norm(expected), rtol=1e-6)


def test_same_vectors_in_another_process_with_another_hash_seed() -> None:
    code = (
        "import hashlib; from rag.embeddings.hashing import HashingEmbedding; "
        "v = HashingEmbedding(512).embed(['Vector stores keep embeddings', 'Zürich 東京 データベース']); "
        "print(hashlib.sha256(v.tobytes()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    local = HashingEmbedding(512).embed(["Vector stores keep embeddings", "Zürich 東京 データベース"])
    assert digests == {hashlib.sha256(local.tobytes()).hexdigest()}


def test_batch_does_not_change_a_row() -> None:
    model = HashingEmbedding(128)
    together = model.embed(PASSAGES)
    alone = np.vstack([model.embed([p]) for p in PASSAGES])
    np.testing.assert_array_equal(together, alone)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where does chroma persist the vectors", 0),
        ("saving embeddings from the numpy store atomically", 1),
        ("does mitochondrial dysfunction affect Alzheimer's?", 2),
        ("glucose from sunlight", 3),
        ("diabetes and insulin resistance", 4),
    ],
)
def test_distinctive_words_rank_their_passage_first(query: str, expected: int) -> None:
    assert rank(HashingEmbedding(), query, PASSAGES)[0] == expected


def test_stemming_case_and_accents_match() -> None:
    model = HashingEmbedding(512)
    a, b = model.embed(["Studies of the CAFÉ", "studied a cafe"])
    assert float(a @ b) == pytest.approx(1.0)
    plain = HashingEmbedding(512, stem=False)
    a, b = plain.embed(["Studies of the CAFÉ", "studied a cafe"])
    assert float(a @ b) < 0.99


def test_chinese_and_japanese_queries_find_their_passage() -> None:
    passages = ["向量数据库存储文本的嵌入向量", "今天的天气很好适合散步", "東京の図書館で本を読みました"]
    model = HashingEmbedding(512)
    assert rank(model, "向量数据库", passages)[0] == 0
    assert rank(model, "天气", passages)[0] == 1
    assert rank(model, "図書館", passages)[0] == 2


def test_name_encodes_every_setting() -> None:
    assert HashingEmbedding().name == "hashing-v2-d384-logtf-stem-stop"
    assert HashingEmbedding(384).dimensions == 384
    names = {
        HashingEmbedding(384).name,
        HashingEmbedding(384, stem=False).name,
        HashingEmbedding(384, stopwords=False).name,
        HashingEmbedding(384, sublinear_tf=False).name,
        HashingEmbedding(512).name,
    }
    assert len(names) == 5
    assert "HashingEmbedding(dimensions=384" in repr(HashingEmbedding(384))


@pytest.mark.parametrize("bad", [0, 1, -5, 1 << 25, 3.0, "1024", True, None])
def test_bad_dimensions_are_named(bad: object) -> None:
    with pytest.raises(InvalidRequestError, match=repr(bad).replace("(", r"\(").replace(".", r"\.")):
        HashingEmbedding(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("flag", ["stem", "stopwords", "sublinear_tf"])
def test_bad_flags_are_named(flag: str) -> None:
    with pytest.raises(InvalidRequestError, match=rf"{flag} must be True or False, got 'yes'"):
        HashingEmbedding(64, **{flag: "yes"})  # type: ignore[arg-type]


def test_bad_texts() -> None:
    model = HashingEmbedding(64)
    with pytest.raises(InvalidRequestError, match="not a single string: 'hello'"):
        model.embed("hello")
    with pytest.raises(InvalidRequestError, match="got int: 42"):
        model.embed(["fine", 42])  # type: ignore[list-item]


def test_protocols_and_token_counting() -> None:
    model = HashingEmbedding(64)
    assert isinstance(model, EmbeddingModel)
    assert isinstance(model, TokenCounter)
    assert model.max_tokens is None
    assert model.count_tokens("The quick, brown fox's den") == 6
    assert model.count_tokens("向量数据库 stores") == 6
    assert model.count_tokens("") == 0


def test_word_cache_reset_keeps_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"word{i} other{i} shared" for i in range(500)]
    expected = HashingEmbedding(128).embed(texts)  # also stems every word: the shared stem cache is full
    monkeypatch.setattr(hashing, "CACHE_LIMIT", 7)
    model = HashingEmbedding(128)
    gc.collect()
    tracemalloc.start()
    try:
        found = model.embed(texts)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - found.nbytes
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(found, expected)
    assert held < 10_000  # at most seven cached words (~700 bytes); all 1,001 of them take ~120 KB


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=5))
def test_any_text_gives_finite_unit_or_zero_rows(texts: list[str]) -> None:
    vectors = HashingEmbedding(32).embed(texts)
    assert vectors.shape == (len(texts), 32)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.all(np.isclose(norms, 1.0, rtol=1e-5) | (norms == 0.0))


# --- the tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "stemmed"),
    [
        (["study", "studies", "studied"], "studi"),
        (["run", "running", "runs"], "run"),
        (["compute", "computed", "computing", "computes", "computation"], "comput"),
        (["process", "processes"], "process"),
        (["cell", "cells"], "cell"),
        (["falling", "falls", "fall"], "fall"),
    ],
)
def test_stem_folds_word_forms(words: list[str], stemmed: str) -> None:
    assert {stem(w) for w in words} == {stemmed}


@pytest.mark.parametrize("word", ["analysis", "corpus", "this", "gas", "bring", "covid19", "über"])
def test_stem_leaves_short_foreign_and_protected_words(word: str) -> None:
    assert stem(word) == word


def test_fold_and_terms() -> None:
    assert fold("Ĉu ŒUVRE Straße ﬁne") == "cu œuvre strasse fine"
    assert terms("snake_case, don't; α-helix") == ["snake", "case", "don", "t", "α", "helix"]
    assert terms("向量数据库 and 東") == ["向量", "量数", "数据", "据库", "and", "東"]
    assert terms("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"], "Indic vowel signs stay inside words"
    assert count_words("नमस्ते दुनिया, 東京!") == 4


def test_word_lists_are_folded_and_disjoint() -> None:
    assert all(w == fold(w) for w in STOPWORDS | COMMON_WORDS)
    assert not STOPWORDS & COMMON_WORDS
