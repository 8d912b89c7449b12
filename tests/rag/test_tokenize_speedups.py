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

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.embeddings import HashingEmbedding, tokenize
from stores.lexical.text import Vocabulary, analyze

_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})
_ALNUM_RUN = re.compile(r"[^\W_]+")

# Letters, digits, ASCII punctuation, accents, compatibility characters ("™", "ﬁ", "½"), Greek, CJK,
# Thai, Hindi and odd spaces: each takes a different branch of `terms` and `count_words`.
_ALPHABET = "aZ9 _-.,'\n\tÉéßΣσς™ﬁ½²µ±–向量数据ไทยहिंदी\u00a0\u3000"
_TEXTS = st.text(alphabet=_ALPHABET, max_size=60) | st.text(max_size=30)


def _reference_terms(text: str) -> list[str]:
    """`terms` as first written: fold, then split (the slow but obvious order)."""
    folded = tokenize.fold(text)
    if folded.isascii():
        return folded.translate(_SEPARATORS).split()
    if re.search(f"[{tokenize._UNSPACED}{tokenize._MARKS}]", folded) is None:
        return _ALNUM_RUN.findall(folded)
    out: list[str] = []
    for unspaced, word in tokenize._WORD.findall(folded):
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
    return sum(len(unspaced) or 1 for unspaced, _ in tokenize._WORD.findall(folded))


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


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefilnorstuyzé", min_size=1, max_size=16))
def test_derivational_precheck_changes_no_stem(word: str) -> None:
    expected = word
    # The reference: every suffix tried in order, as before the one-call precheck.
    if len(word) > 3 and word.isascii() and word.isalpha():
        expected = tokenize._strip_verb_ending(tokenize._strip_plural(word))
        for suffix, replacement in tokenize._DERIVATIONAL:
            if expected.endswith(suffix) and len(expected) - len(suffix) >= 4:
                expected = expected[: -len(suffix)] + replacement
                break
        if len(expected) > 4 and expected[-1] == "e":
            expected = expected[:-1]
        elif len(expected) > 3 and expected[-1] == "y" and expected[-2] not in tokenize._VOWELS:
            expected = expected[:-1] + "i"
    assert tokenize._stem(word) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(_TEXTS, max_size=6))
def test_hashing_bag_keeps_first_occurrence_order_without_stopwords(texts: list[str]) -> None:
    model = HashingEmbedding(dimensions=64)
    for text in texts:
        keys = model._keys
        reference = Counter(key for key in map(keys.__getitem__, tokenize.terms(text)) if key)
        assert list(model._bag(text).items()) == list(reference.items())


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
    bags = repr([list(model._bag(text).items()) for text in _PINNED_TEXTS]).encode()
    assert hashlib.sha256(bags).hexdigest() == _PINNED_BAGS[model.name]


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
    assert list(vocabulary.encode_query("studying mice")) == [
        vocabulary.terms.index("studi"),
        vocabulary.terms.index("mice"),
    ]


def test_fold_is_unchanged_by_the_fast_paths() -> None:
    text = "Émile’s naïve ﬁle"
    assert tokenize.fold(text) == unicodedata.normalize(
        "NFC", re.sub("[\u0300-\u036f]+", "", unicodedata.normalize("NFKD", text.casefold()))
    )
