"""Word-level text analysis shared by the hashing embedder and anything that counts words.

Deterministic and dependency-free: Unicode case folding, accent stripping for Latin, Greek and Cyrillic,
character bigrams for scripts written without spaces (Chinese, Japanese, Korean, Thai and neighbours),
a small English stopword list, and a light English suffix stripper.

Example:
    >>> from rag.embeddings.tokenize import STOPWORDS, count_words, stem, terms
    >>> terms("The Cafés were RUNNING")
    ['the', 'cafes', 'were', 'running']
    >>> [stem(t) for t in terms("The Cafés were RUNNING") if t not in STOPWORDS]
    ['cafe', 'run']
    >>> count_words("向量数据库 stores vectors")
    7
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["COMMON_WORDS", "STOPWORDS", "count_words", "fold", "split_words", "stem", "terms"]

# Scripts written without spaces between words: each character counts as a word and terms are
# overlapping character bigrams (the usual choice for CJK search when no dictionary is at hand).
_UNSPACED = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
)
# Combining marks that are part of a word (Indic vowel signs, Hebrew and Arabic points): `\w` excludes them,
# which would otherwise cut words such as Hindi ones into pieces.
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u0900-\u0dff"
# ASCII text, the common case, splits fastest with a translation table and str.split. For ASCII input, case
# folding is lower-casing, so one table does both in a single pass. Text that becomes ASCII only once folded
# keeps its case: folding lower-cases before NFKD, which can bring capitals back ("™" -> "TM").
_ASCII_TERMS = str.maketrans({c: c.lower() if c.isalnum() else " " for c in map(chr, range(128))})
_ASCII_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isascii() and c.isalnum())})
# Counting needs no list of words: bytes.translate (faster than str.translate) marks word characters "a" and
# the rest " ", and each word starts where an "a" follows a " ".
_ASCII_MARKS = bytes(ord("a") if chr(b).isascii() and chr(b).isalnum() else ord(" ") for b in range(256))
_PLAIN_WORD = re.compile(r"[^\W_]+")
_NEEDS_FULL = re.compile(f"[{_UNSPACED}{_MARKS}]")
_WORD = re.compile(rf"([{_UNSPACED}]+)|((?:[^\W_]|[{_MARKS}])+)")
_ACCENTS = re.compile(r"[\u0300-\u036f]+")


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: frozenset[str] = _word_set(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each either else etc few for from
    further had has have having he her here hers herself him himself his how however i if in into is it its
    itself just may me might more most must my myself neither no nor not now of off on once only or other
    our ours ourselves out over own per same she should since so some such than that the their theirs them
    themselves then there therefore these they this those though through thus to too under until up upon
    us very via was we were what when where whether which while who whom whose why will with within without
    would yet you your yours yourself yourselves
    b c d e f g h j k l m n o p q r s t u v w x y z
    """
)

# Frequent content words of general and academic English: kept, but at half weight, as a fixed stand-in for
# the low idf a corpus would give them (measured on SciFact: +0.01 to +0.02 nDCG@10 across hash seeds).
COMMON_WORDS: frozenset[str] = (
    _word_set(
        """
    able across actually add added adding after already always among analyses analysis another approach
    around back based become becomes began begin best better big bring brought call called came case cases
    certain change changes come comes common consider considered could current data day days different does
    due during early easy effect effects end enough even ever every evidence example factor factors find
    finding findings first five following found four full general get gets give given gives go going good
    great group half help high higher however important include included includes including increase
    increased instead kind know known large larger last later least less let level levels like likely
    little long look low lower made main make makes making many mean means method methods might more most
    much need needed needs new next number observed often old one ones order overall part particular per
    place point possible potential present previously provide provided provides put range rate rates rather
    real really related report reported respectively result results right role run same say second see seem
    seems seen set several show showed shown shows side significant significantly similar simple since
    small so some something still studied studies study such suggest suggested suggests take taken tell ten
    thing things think third three time times today together took total true try turn two type types under
    use used uses using usually various way ways well went whole within work works world year years yes
    """
    )
    - STOPWORDS
)


def fold(text: str) -> str:
    """Case-fold `text` and strip Latin, Greek and Cyrillic accents ("Émile" -> "emile")."""
    text = text.casefold()
    if text.isascii():
        return text
    # NFKD splits accents off their letters (and expands ligatures such as "ﬁ"); NFC afterwards rebuilds
    # what NFKD took apart in other scripts (Hangul syllables, Indic vowel signs).
    return unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFKD", text)))


def terms(text: str) -> list[str]:
    """Folded words in order; runs of unspaced scripts become overlapping character bigrams."""
    if text.isascii():
        return text.translate(_ASCII_TERMS).split()
    text = fold(text)
    if text.isascii():
        return text.translate(_ASCII_SEPARATORS).split()
    if _NEEDS_FULL.search(text) is None:
        return _PLAIN_WORD.findall(text)
    return _split_full(text)


def split_words(text: str) -> list[str]:
    """The words of `terms`, case-folded but with their accents: for stemmers whose rules read them.

    `fold` of each word gives `terms(text)` (a test holds them equal), so a caller can stem first and
    strip accents afterwards.
    """
    if text.isascii():
        return text.translate(_ASCII_TERMS).split()
    text = unicodedata.normalize("NFKC", text.casefold())
    if text.isascii():
        return text.translate(_ASCII_SEPARATORS).split()
    if _NEEDS_FULL.search(text) is None:
        return _PLAIN_WORD.findall(text)
    return _split_full(text)


def _split_full(text: str) -> list[str]:
    out: list[str] = []
    for unspaced, word in _WORD.findall(text):
        if word:
            out.append(word)
        elif len(unspaced) == 1:
            out.append(unspaced)
        else:
            out.extend(unspaced[i : i + 2] for i in range(len(unspaced) - 1))
    return out


def count_words(text: str) -> int:
    """Number of words in `text`, counting each character of an unspaced script as one word."""
    if not text.isascii():
        text = fold(text)
    if text.isascii():
        return (b" " + text.encode("ascii").translate(_ASCII_MARKS)).count(b" a")
    if _NEEDS_FULL.search(text) is None:
        return len(_PLAIN_WORD.findall(text))
    return sum(len(unspaced) or 1 for unspaced, _ in _WORD.findall(text))


_VOWELS = frozenset("aeiouy")
_UNDOUBLE = frozenset("bdfgkmnprt")
# Derivational endings folded together, longest first; each needs a stem of at least four letters left.
_DERIVATIONAL = (
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
)
_DERIVATIONAL_SUFFIXES = tuple(suffix for suffix, _ in _DERIVATIONAL)


# Stems already computed: the hashing embedder and the lexical index each map a word to its term once, but
# both see the same words, so sharing the stems halves the stemming. The bound keeps the memory small.
@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light English suffix stripper: the same stem for "study", "studies" and "studied".

    Stems are hash keys, not dictionary words ("running" -> "run", "computing" and "computed" -> "comput").
    Words that are not plain ASCII letters, and words of three letters or fewer, come back unchanged.
    """
    return _stem(word)


def _stem(word: str) -> str:
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    word = _strip_plural(word)
    word = _strip_verb_ending(word)
    if word.endswith(_DERIVATIONAL_SUFFIXES):  # one test rules out most words before the loop
        for suffix, replacement in _DERIVATIONAL:
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)] + replacement
                break
    # A final "e" or "y" varies between forms of one word (compute/computing, study/studies).
    if len(word) > 4 and word[-1] == "e":
        word = word[:-1]
    elif len(word) > 3 and word[-1] == "y" and word[-2] not in _VOWELS:
        word = word[:-1] + "i"
    return word


def _strip_plural(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _strip_verb_ending(word: str) -> str:
    for suffix in ("ing", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and not _VOWELS.isdisjoint(base):
            # "stopped" -> "stop", "running" -> "run"; "falling" keeps its double "l".
            if base[-1] == base[-2] and base[-1] in _UNDOUBLE:
                return base[:-1]
            return base
    return word
