"""SentenceTransformerEmbedding against a real (tiny, untrained) BERT model built in a temp folder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag.embeddings.base import EmbeddingModel, TokenCounter
from rag.embeddings.sentence_transformers import SentenceTransformerEmbedding
from rag.errors import EmbeddingError, InvalidRequestError, MissingDependencyError
from tests.rag.tiny_bert import build_tiny_bert, vocabulary

TEXTS = [
    "the cat sat on the mat",
    "chroma keeps vectors on disk",
    "the dog found a bird in the tree",
    "numpy stores embeddings in memory",
    "a gene study of blood cells",
]


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("st-models"))


@pytest.fixture(scope="session")
def model(tiny_bert: Path) -> Iterator[SentenceTransformerEmbedding]:
    yield SentenceTransformerEmbedding(str(tiny_bert), batch_size=2)


def test_the_tiny_tokenizer_kept_its_vocabulary(tiny_bert: Path, model: SentenceTransformerEmbedding) -> None:
    tokenizer = model.tokenizer
    assert len(tokenizer) == len(vocabulary())
    tokens = tokenizer.tokenize("the cats sat on vectors zebra")
    assert tokens[:4] == ["the", "cats", "sat", "on"]
    assert "[UNK]" not in tokens
    assert tokens[-5:] == ["z", "##e", "##b", "##r", "##a"]


def test_shape_dtype_and_unit_rows(model: SentenceTransformerEmbedding) -> None:
    vectors = model.embed(TEXTS)
    assert model.dimensions == 32
    assert vectors.shape == (len(TEXTS), 32)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert model.embed([]).shape == (0, 32)


def test_deterministic_and_identical_texts_coincide(model: SentenceTransformerEmbedding) -> None:
    first = model.embed(TEXTS)
    np.testing.assert_array_equal(first, model.embed(TEXTS))
    again = model.embed([TEXTS[0], TEXTS[0], TEXTS[1]])
    assert float(again[0] @ again[1]) == pytest.approx(1.0, abs=1e-6)
    assert float(again[0] @ again[2]) < 0.999
    cosines = first @ first.T
    assert np.all(cosines[~np.eye(len(TEXTS), dtype=bool)] < 0.999), "different texts, different vectors"


def test_batch_size_does_not_change_vectors(tiny_bert: Path, model: SentenceTransformerEmbedding) -> None:
    one_batch = SentenceTransformerEmbedding(str(tiny_bert), batch_size=64).embed(TEXTS)
    np.testing.assert_allclose(model.embed(TEXTS), one_batch, atol=1e-5)


def test_token_counting_matches_the_tokenizer(model: SentenceTransformerEmbedding) -> None:
    assert isinstance(model, EmbeddingModel)
    assert isinstance(model, TokenCounter)
    assert model.max_tokens == 64
    assert model.count_tokens("the cat sat") == 5  # [CLS] the cat sat [SEP]
    long_text = " ".join(["vector"] * 100)
    assert model.count_tokens(long_text) == 102, "counted before truncation, so splitters see the overflow"
    for text in TEXTS:
        assert model.count_tokens(text) == len(model.tokenizer(text)["input_ids"])


def test_name_is_the_folder_name(tiny_bert: Path) -> None:
    assert SentenceTransformerEmbedding(str(tiny_bert)).name == "tiny-bert"
    assert SentenceTransformerEmbedding(tiny_bert).name == "tiny-bert"
    assert SentenceTransformerEmbedding("sentence-transformers/all-MiniLM-L6-v2").name == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )
    assert "tiny-bert" in repr(SentenceTransformerEmbedding(str(tiny_bert)))


def test_without_normalising(tiny_bert: Path) -> None:
    raw = SentenceTransformerEmbedding(str(tiny_bert), normalize=False)
    assert raw.name == "tiny-bert-raw"
    norms = np.linalg.norm(raw.embed(TEXTS), axis=1)
    assert not np.allclose(norms, 1.0)


def test_missing_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbeddingError, match=f"folder {str(missing)!r} does not exist"):
        SentenceTransformerEmbedding(str(missing))


def test_folder_that_is_not_a_model_is_named(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "config.json").write_text("{not json", encoding="utf-8")
    broken = SentenceTransformerEmbedding(str(tmp_path / "junk"))
    with pytest.raises(EmbeddingError, match=r"cannot load sentence-transformers model .*junk'") as info:
        broken.embed(["hello"])
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model_name_or_path": ""}, "model_name_or_path must be a non-empty name or path, got ''"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
        ({"batch_size": "8"}, "got '8'"),
        ({"device": ""}, "device must be a non-empty string"),
        ({"known_dimensions": 0}, "known_dimensions must be an integer >= 1, got 0"),
        ({"known_dimensions": True}, "known_dimensions must be an integer >= 1, got True"),
        ({"known_max_tokens": 0}, "known_max_tokens must be an integer >= 1, got 0"),
        ({"known_max_tokens": "256"}, "known_max_tokens must be an integer >= 1, got '256'"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        SentenceTransformerEmbedding(**kwargs)  # type: ignore[arg-type]


def test_known_values_answer_without_loading_the_model(tmp_path: Path) -> None:
    """The length and input limit a home recorded are the answers: a folder holding no model is not read
    until embedding (`isinstance` on Python 3.11 reads `max_tokens` too)."""
    (tmp_path / "junk").mkdir()
    model = SentenceTransformerEmbedding(str(tmp_path / "junk"), known_dimensions=384, known_max_tokens=128)
    assert model.dimensions == 384
    assert isinstance(model, TokenCounter) and model.max_tokens == 128
    with pytest.raises(EmbeddingError, match="cannot load sentence-transformers model"):
        model.embed(["hello"])


def test_single_string_is_refused(model: SentenceTransformerEmbedding) -> None:
    with pytest.raises(InvalidRequestError, match="not a single string: 'hello'"):
        model.embed("hello")


def test_missing_package_names_the_extra(tiny_bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import raise ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "rag-advisors\[st\]"'):
        _ = SentenceTransformerEmbedding(str(tiny_bert)).dimensions


def test_import_and_construction_do_not_load_torch(tiny_bert: Path) -> None:
    code = (
        "import sys, rag, rag.embeddings\n"
        "from rag.embeddings.sentence_transformers import SentenceTransformerEmbedding\n"
        f"m = SentenceTransformerEmbedding({str(tiny_bert)!r})\n"
        "m.name\n"
        "print(sorted(k for k in ('torch', 'sentence_transformers', 'transformers') if k in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
