"""The Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980), written for this project.

The classic English stemmer of search engines (Lucene's `PorterStemFilter`, Anserini's BM25 baselines):
five steps of suffix rules, each allowed only when the stem left behind is long enough, measured in
vowel-consonant sequences ("measure" m). It conflates more than `rag.embeddings.tokenize.stem`
("generalization", "generalize" and "general" all become "gener"), which suits a lexical index: on BEIR
SciFact it ranks better than the light stemmer (see docs/retrieval.md).

Words that are not plain ASCII letters, and words of two letters or fewer, come back unchanged.

Example:
    >>> [porter_stem(w) for w in ["caresses", "ponies", "relational", "generalization", "running"]]
    ['caress', 'poni', 'relat', 'gener', 'run']
"""

from __future__ import annotations

import functools

__all__ = ["porter_stem", "porter_stem_uncached"]

_VOWELS = frozenset("aeiou")

_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),  # the published implementation's departure from the paper ("abli" -> "able")
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _consonant(word: str, i: int) -> bool:
    """Whether `word[i]` is a consonant: not a vowel, and "y" only when it follows a vowel."""
    letter = word[i]
    if letter in _VOWELS:
        return False
    if letter == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: how many vowel-then-consonant transitions `stem` has."""
    count = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            count += 1
        previous_vowel = vowel
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y ("hop", not "snow")."""
    if len(word) < 3 or word[-1] in "wxy":
        return False
    n = len(word)
    return _consonant(word, n - 3) and not _consonant(word, n - 2) and _consonant(word, n - 1)


def _step1ab(word: str) -> str:
    if word.endswith(("sses", "ies")):  # "caresses" -> "caress", "ponies" -> "poni"
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return _after_ed_ing(word[: -len(suffix)])
    return word


def _after_ed_ing(stem: str) -> str:
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _cvc(stem):
        return stem + "e"
    return stem


def _replace(word: str, rules: tuple[tuple[str, str], ...], minimum: int) -> str:
    """Apply the first rule whose suffix `word` ends with, if the stem's measure exceeds `minimum`."""
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > minimum else word
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                return stem
            return word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


# Stems already computed, shared by every index in the process: stemming in Python costs ~40 us a word,
# and each batch written to pgvector analyses its words afresh. The bound keeps the memory small.
@functools.lru_cache(maxsize=200_000)
def porter_stem(word: str) -> str:
    """The Porter stem of a lower-case word ("connections" -> "connect")."""
    return _stem(word)


def porter_stem_uncached(word: str) -> str:
    """`porter_stem` without its cache, for callers that keep their own map from words to stems (the
    lexical index's vocabulary): the cache would hold every word a second time."""
    return _stem(word)


def _stem(word: str) -> str:
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    word = _step1ab(word)
    if word.endswith("y") and _has_vowel(word[:-1]):  # step 1c
        word = word[:-1] + "i"
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    return _step5(_step4(word))
