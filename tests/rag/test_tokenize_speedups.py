"""The fast paths of word analysis give exactly what the plain forms they replaced give.

Stored hashing vectors and lexical indexes depend on every word and count, so each shortcut (one
translation table for ASCII, counting words without building them, the shared stem cache, counting
term keys before dropping stopwords) is checked against a straightforward reference written here.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.embeddings import HashingEmbedding, tokenize
from rag.embeddings.base import normalize_rows
from stores.lexical.text import Vocabulary, analyze

_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})
_ALNUM_RUN = re.compile(r"[^\W_]+")

# Letters, digits, ASCII punctuation, accents, compatibility characters ("™", "ﬁ", "½"), Greek, CJK,
# Thai, Hindi and odd spaces: each takes a different branch of `terms` and `count_words`.
_ALPHABET = "aZ9 _-.,'\n\tÉéßΣσς™ﬁ½²µ±–向量数据ไทยहिंदी\u00a0\u3000"
_TEXTS = st.text(alphabet=_ALPHABET, max_size=60) | st.text(max_size=30)


# The scripts written without spaces, and the combining marks that belong to words, as documented in
# `rag.embeddings.tokenize`: written out here so the reference does not share the module's patterns.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
)
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u0900-\u0dff"
_WORD = re.compile(rf"([{_UNSPACED}]+)|((?:[^\W_]|[{_MARKS}])+)")


def _reference_terms(text: str) -> list[str]:
    """`terms` as first written: fold, then split (the slow but obvious order)."""
    folded = tokenize.fold(text)
    if folded.isascii():
        return folded.translate(_SEPARATORS).split()
    if re.search(f"[{_UNSPACED}{_MARKS}]", folded) is None:
        return _ALNUM_RUN.findall(folded)
    out: list[str] = []
    for unspaced, word in _WORD.findall(folded):
        if word:
            out.append(word)
        else:
            out.extend(
                [unspaced] if len(unspaced) == 1 else [unspaced[i : i + 2] for i in range(len(unspaced) - 1)]
            )
    return out


def _reference_count(text: str) -> int:
    folded = tokenize.fold(text)
    if folded.isascii():
        return len(folded.translate(_SEPARATORS).split())
    return sum(len(unspaced) or 1 for unspaced, _ in _WORD.findall(folded))


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_terms_and_counts_match_the_reference(text: str) -> None:
    assert tokenize.terms(text) == _reference_terms(text)
    assert tokenize.count_words(text) == _reference_count(text)


def test_text_ascii_only_once_folded_keeps_its_capitals() -> None:
    # Folding lower-cases before NFKD, so "™" becomes "TM": kept as it was, since stored vectors hash it.
    assert tokenize.terms("ACAM2000™ Trial") == ["acam2000TM", "trial"]
    assert tokenize.terms("ACAM2000 Trial") == ["acam2000", "trial"]
    assert tokenize.count_words("ACAM2000™ a-b_c") == 4


def test_ascii_fast_path_agrees_with_unicode_case_folding() -> None:
    every_ascii = "".join(map(chr, range(128)))
    assert tokenize.terms(every_ascii) == _reference_terms(every_ascii)
    letters = "abcdefghijklmnopqrstuvwxyz"
    assert tokenize.terms(every_ascii) == ["0123456789", letters, letters]
    assert tokenize.count_words(every_ascii) == 3


def test_stem_cache_returns_the_computed_stem_and_stays_bounded() -> None:
    words = ["studies", "studied", "running", "nationalization", "cafe", "hopefully"]
    expected = ["studi", "studi", "run", "nationaliz", "cafe", "hopeful"]
    assert [tokenize.stem(w) for w in words] == expected
    assert [tokenize.stem(w) for w in words] == expected  # now from the cache
    info = tokenize.stem.cache_info()
    assert info.hits >= len(words) and info.maxsize == 200_000


_DERIVATIONAL = [
    ("ational", ""),
    ("ization", "ize"),
    ("fulness", "ful"),
    ("iveness", "ive"),
    ("ousness", "ous"),
    ("ations", ""),
    ("ation", ""),
    ("ness", ""),
    ("ment", ""),
    ("ity", ""),
    ("ally", "al"),
    ("ly", ""),
]


def _reference_stem(word: str) -> str:
    """`stem` as first written: every derivational suffix tried in order, without a precheck."""
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and set(base) & set("aeiouy"):
            word = base[:-1] if base[-1] == base[-2] and base[-1] in "bdfgkmnprt" else base
            break
    for suffix, replacement in _DERIVATIONAL:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 4 and word[-1] == "e":
        word = word[:-1]
    elif len(word) > 3 and word[-1] == "y" and word[-2] not in "aeiouy":
        word = word[:-1] + "i"
    return word


_ENDINGS = ["", "s", "es", "ies", "sses", "ing", "ed", "e", "y", *(suffix for suffix, _ in _DERIVATIONAL)]


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="abdefgilmnoprstuyzé", min_size=1, max_size=12),
    st.lists(st.sampled_from(_ENDINGS), max_size=2),
)
def test_derivational_precheck_changes_no_stem(start: str, endings: list[str]) -> None:
    word = start + "".join(endings)
    assert tokenize.stem(word) == _reference_stem(word)


def test_the_reference_stemmer_is_the_documented_one() -> None:
    expected = {
        "studies": "studi",
        "studied": "studi",
        "running": "run",
        "tagged": "tag",
        "falling": "fall",
        "nationalization": "nationaliz",
        "hopefully": "hopeful",
        "cafe": "cafe",
    }
    assert {word: _reference_stem(word) for word in expected} == expected
    assert {word: tokenize.stem(word) for word in expected} == expected


_COMMON_STEMS = {tokenize.stem(word) for word in tokenize.COMMON_WORDS}
_HALF = 1 << 61


def _reference_key(model: HashingEmbedding, word: str) -> int:
    """A word's term key as `rag.embeddings.hashing` documents it: 63 bits of BLAKE2b-64 of the term (never
    0), bit 62 the sign, bit 61 set for half-weight terms; 0 for a dropped stopword."""
    stop = model.name.endswith("-stop")
    if stop and word in tokenize.STOPWORDS:
        return 0
    term = tokenize.stem(word) if "-stem-" in model.name else word
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    key = int.from_bytes(digest, "little") & ((1 << 63) - 1) or 1
    half = stop and (term in _COMMON_STEMS or word in tokenize.COMMON_WORDS or word.isdigit())
    return key | _HALF if half else key & ~_HALF


def _reference_bag(model: HashingEmbedding, text: str) -> list[tuple[int, int]]:
    """(term key, count) of each kept term of `text`, in order of first occurrence."""
    bag = Counter(key for key in (_reference_key(model, word) for word in tokenize.terms(text)) if key)
    return list(bag.items())


def _reference_vector(model: HashingEmbedding, bag: list[tuple[int, int]]) -> np.ndarray:
    """The bag summed into signed buckets in the order given, with 1 + ln tf weights, as a unit row."""
    assert "-logtf-" in model.name
    out = np.zeros((1, model.dimensions), np.float32)
    for key, count in bag:
        weight = np.float32(1.0) + np.log(np.float32(count))
        weight *= np.float32(0.5 if key & _HALF else 1.0) * np.float32(-1.0 if key >> 62 & 1 else 1.0)
        out[0, (key & (_HALF - 1)) % model.dimensions] += weight
    return normalize_rows(out, model=model.name)


def _reference_vectors(model: HashingEmbedding, texts: list[str]) -> np.ndarray:
    return np.concatenate([_reference_vector(model, _reference_bag(model, text)) for text in texts])


@settings(max_examples=100, deadline=None)
@given(st.lists(_TEXTS, max_size=6))
def test_hashing_bag_keeps_first_occurrence_order_without_stopwords(texts: list[str]) -> None:
    model = HashingEmbedding(dimensions=64)
    for text in texts:  # text by text, as the model's word cache fills
        np.testing.assert_array_equal(model.embed([text]), _reference_vectors(model, [text]))


def test_hashing_sums_terms_in_order_of_first_occurrence() -> None:
    model = HashingEmbedding(dimensions=2)  # every bucket shared: the order of the sum shows in its last bits
    text = " ".join(f"w{i} " * (1 + i % 5) for i in range(40))
    bag = _reference_bag(model, text)
    in_order = _reference_vector(model, bag)
    assert not np.array_equal(in_order, _reference_vector(model, sorted(bag)))
    np.testing.assert_array_equal(model.embed([text]), in_order)


# Term keys and counts of these texts as computed before the fast paths (integers from BLAKE2b, so the
# same on every platform): the vectors are a fixed function of them.
_PINNED_TEXTS = [
    "Studies of T-cells: 12 mice, ACAM2000™, the cafés",
    "向量数据库 stores vectors",
    "running RUNS ran",
    "",
    "ﬁnal ½ µg ±3 Σίσυφος",
]
_PINNED_BAGS = {
    "hashing-v2-d384-logtf-stem-stop": "0e653a45b5dd5cda2ad6bbd5feb8acd1cc626607ba125da331372ee61d56a2fb",
    "hashing-v2-d384-logtf-nostem-nostop": "3bb6688acbaee605e3bb5234e73fe25c5514abe61d0cb4c4900625fd07a0524a",
}


@pytest.mark.parametrize("model", [HashingEmbedding(), HashingEmbedding(stem=False, stopwords=False)])
def test_hashing_term_keys_are_pinned(model: HashingEmbedding) -> None:
    bags = repr([_reference_bag(model, text) for text in _PINNED_TEXTS]).encode()
    assert hashlib.sha256(bags).hexdigest() == _PINNED_BAGS[model.name]
    np.testing.assert_array_equal(model.embed(_PINNED_TEXTS), _reference_vectors(model, _PINNED_TEXTS))


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=8))
def test_lexical_ids_match_the_analysis_of_each_text(texts: list[str]) -> None:
    vocabulary = Vocabulary()
    ids, owners, lengths = vocabulary.encode_many(texts)
    for row, text in enumerate(texts):
        found = sorted(vocabulary.terms[i] for i in ids[owners == row].tolist())
        assert found == sorted(analyze(text))
        assert lengths[row] == len(analyze(text))


def test_lexical_terms_keep_their_ids_across_batches() -> None:
    # Term ids are assigned as before the batched lookup of new words (pinned from the earlier code).
    vocabulary = Vocabulary()
    vocabulary.encode_many(["studies of mice", "running mice"])
    assert vocabulary.terms == ["mice", "studi", "run"]
    vocabulary.encode_many(["mice studied again", "café"])  # "again" is a stopword
    assert vocabulary.terms == ["mice", "studi", "run", "cafe"]
    assert vocabulary.encode_query("studying mice") == [
        vocabulary.terms.index("studi"),
        vocabulary.terms.index("mice"),
    ]


def test_fold_is_unchanged_by_the_fast_paths() -> None:
    text = "Émile’s naïve ﬁle"
    assert tokenize.fold(text) == unicodedata.normalize(
        "NFC", re.sub("[\u0300-\u036f]+", "", unicodedata.normalize("NFKD", text.casefold()))
    )
