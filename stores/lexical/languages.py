"""Per-language analysis for the lexical index: a Snowball stemmer and stop words for each language.

A chunk's `lang` metadata (ISO 639-1, set by ingest) chooses its `Analyser`; a code without a Snowball
stemmer, `"und"` and a missing `lang` take English, the analysis every chunk had before languages were
told apart. Stemming is PyStemmer's (the Snowball algorithms, in C); stop words are short lists of each
language's function words, written for this project, compared after case and accent folding. Words are
stemmed before their accents are stripped (Russian "й" and French "é" steer the suffix rules), and the
stem is folded afterwards, so "Häuser" and "Haus" both give "haus".

Example:
    >>> analyser_for("de").term("Häuser"), analyser_for("de").term("und")
    ('haus', None)
    >>> analyser_for("und").name, analyser_for("ru").term("книгами")
    ('en', 'книг')
"""

from __future__ import annotations

import functools
import threading
from importlib import resources

import Stemmer

from rag.embeddings.tokenize import STOPWORDS, fold

__all__ = ["DEFAULT_LANGUAGE", "SNOWBALL", "Analyser", "analyser_for", "language_of", "question_stopwords"]

DEFAULT_LANGUAGE = "en"

_CODES = "ar ca cs da de el en eo es et eu fa fi fr ga hi hu hy id it lt nb ne nl nn no pl pt ro ru sr sv ta "
_CODES += "tr yi"
SNOWBALL = frozenset(_CODES.split())
"""The ISO 639-1 codes with a Snowball stemmer (PyStemmer takes the code; Norwegian "nb"/"nn" as "no")."""


@functools.cache
def _stopwords() -> dict[str, frozenset[str]]:
    """Each language's stop words (`stopwords.txt`, read at first use), folded as the index folds words."""
    lists: dict[str, set[str]] = {"en": set(STOPWORDS)}
    words: set[str] = set()
    for line in resources.files("stores.lexical").joinpath("stopwords.txt").read_text("utf-8").splitlines():
        if line.startswith("["):
            words = lists.setdefault(line.strip("[]"), set())
        elif not line.startswith("#"):
            words.update(fold(word) for word in line.split())
    return {code: frozenset(found) for code, found in lists.items()}


_QUESTION_HITS = 2  # function words of one language that make a question's language known


class Analyser:
    """One language's stop words and stemmer, applied to a case-folded word (accents kept).

    PyStemmer's stemmers are not safe to share between threads, so each call takes a lock; the
    lexical index caches terms by word, so a word is stemmed once per index (PyStemmer's own cache is
    off: it would hold a second copy of every word).

    Example:
        >>> analyser_for("fr").term("Maisons"), analyser_for("fr").term("les")
        ('maison', None)
    """

    def __init__(self, name: str) -> None:
        self.name = name
        # No stemmer cache: the index maps each word to its term once already.
        self._stemmer = Stemmer.Stemmer({"nb": "no", "nn": "no"}.get(name, name), 0)
        self._stopwords = _stopwords().get(name, frozenset())
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Analyser({self.name!r})"

    def term(self, word: str) -> str | None:
        """The index term of `word` (folded stem), or None for a stop word."""
        folded = fold(word)
        if folded in self._stopwords:
            return None
        with self._lock:
            stem = self._stemmer.stemWord(word.casefold())
        return fold(stem)

    def terms(self, words: list[str]) -> list[str | None]:
        """`term` of each of `words`, stemmed in one call."""
        folded = [fold(word) for word in words]
        with self._lock:
            stems = self._stemmer.stemWords([word.casefold() for word in words])
        return [
            None if plain in self._stopwords else fold(stem)
            for plain, stem in zip(folded, stems, strict=True)
        ]


def question_stopwords(words: list[str]) -> frozenset[str]:
    """The stop words of the language a question is written in, when its words say so: at least two
    of them are function words of one language, and more than of any other ("lister le contenu des
    répertoires": French). Otherwise none.

    A question is scored against each passage with the passage's analyser, so a French question meets
    an English passage (a page left untranslated) through the English analyser, which would keep "le"
    and "des" as rare, decisive words. Dropping the question's own function words first avoids that.

    Example:
        >>> sorted(question_stopwords(["lister", "le", "contenu", "des", "fichiers"]))[:3]
        ['a', 'ai', 'aie']
        >>> question_stopwords(["die", "casting"])
        frozenset()
    """
    folded = [fold(word) for word in words]
    hits = sorted(
        ((sum(w in stops for w in folded), code) for code, stops in _stopwords().items()), reverse=True
    )
    (best, code), (runner_up, _) = hits[0], hits[1]
    return _stopwords()[code] if best >= _QUESTION_HITS and best > runner_up else frozenset()


def language_of(code: object) -> str:
    """The analyser name a `lang` metadata value chooses: its two-letter code when Snowball has a
    stemmer for it ("de", "pt-BR" -> "pt"), else `DEFAULT_LANGUAGE`."""
    if not isinstance(code, str):
        return DEFAULT_LANGUAGE
    base = code.strip().lower().replace("_", "-").split("-", 1)[0]
    return base if base in SNOWBALL else DEFAULT_LANGUAGE


def analyser_for(code: object) -> Analyser:
    """The shared analyser of a `lang` value (see `language_of`)."""
    return _analyser(language_of(code))


@functools.cache
def _analyser(name: str) -> Analyser:
    return Analyser(name)
