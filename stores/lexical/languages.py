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

import Stemmer

from rag.embeddings.tokenize import STOPWORDS, fold

__all__ = ["DEFAULT_LANGUAGE", "SNOWBALL", "Analyser", "analyser_for", "language_of", "question_stopwords"]

DEFAULT_LANGUAGE = "en"

# ISO 639-1 code -> Snowball algorithm (every one PyStemmer ships with a two-letter code).
SNOWBALL: dict[str, str] = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "eo": "esperanto",
    "es": "spanish",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nl": "dutch",
    "no": "norwegian",
    "nb": "norwegian",
    "nn": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}


def _folded(words: str) -> frozenset[str]:
    return frozenset(fold(word) for word in words.split())


# The commonest function words of each language (articles, pronouns, prepositions, conjunctions and
# auxiliaries), folded as the index folds words. English keeps the list the hashing embedder shares.
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": STOPWORDS,
    "de": _folded(
        """
        aber alle allem allen aller alles als also am an ander andere anderen auch auf aus bei beim bin bis
        bist da damit dann das dass dem den denn der des dessen die dies diese diesem diesen dieser dieses
        doch dort du durch ein eine einem einen einer eines er es etwas euch euer für gegen hat hatte
        hätte habe haben hier hin ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in ist ja jede jedem
        jeden jeder jedes jetzt kann kein keine können man mein meine mich mir mit muss nach nicht nichts
        noch nun nur ob oder ohne sehr sein seine seinem seinen seiner sich sie sind so soll sollte sonst
        über um und uns unser unter vom von vor war waren was weil welche welchem welchen welcher wenn
        wer werde werden wie wieder will wir wird wo zu zum zur zwar zwischen
        """
    ),
    "fr": _folded(
        """
        à ai aie au aux avec avoir c ce ceci cela celle celles celui ces cet cette ceux chez comme comment
        d dans de des donc dont du elle elles en est et été être eu eux il ils j je l la le les leur leurs
        lui m ma mais me même mes moi mon n ne ni nos notre nous on ont ou où par pas peu peut plus pour
        qu quand que quel quelle quelles quels qui s sa sans se ses si son sont sous sur ta te tes toi
        ton tous tout toute toutes tu un une vos votre vous y
        """
    ),
    "es": _folded(
        """
        a al algo algunas algunos ante antes como con contra cual cuando de del desde donde dos e el él
        ella ellas ellos en entre era es esa esas ese eso esos esta está están estas este esto estos fue
        ha han hasta hay la las le les lo los más me mi mis muy ni no nos o os otra otro para pero poco
        por porque qué que quien se sea ser si sí sin sobre son su sus también te tiene tu tus un una
        uno unos y ya yo
        """
    ),
    "pt": _folded(
        """
        a ao aos aquela aquele aquilo as até com como da das de dela dele deles do dos e é ela elas ele
        eles em entre era essa esse esta está estão este eu foi for há isso isto já lhe lhes mais mas me
        mesmo meu minha muito na nas não nem no nos nós num numa o os ou para pela pelas pelo pelos por
        qual quando que quem se sem ser seu seus só sua suas também te tem ter teu tu um uma umas uns
        você vocês
        """
    ),
    "it": _folded(
        """
        a ad agli ai al alla alle allo altra altre altri altro anche c che chi ci come con contro cui da
        dagli dai dal dalla dalle degli dei del della delle dello di dove e è ed era essere gli ha hanno
        ho i il in io l la le lei
        lo loro lui ma mi mia mio ne negli nei nel nella nelle no noi non o per perché più qual quale
        quando questa queste questi questo se sei si sia siamo sono su sua sue sul sulla suo suoi ti
        tra tu tua tuo un una uno voi
        """
    ),
    "nl": _folded(
        """
        aan al alle als bij dan dat de der deze die dit door een en er haar had heb hebben heeft hem het
        hier hij hoe hun ik in is je kan kon maar me men met mijn na naar niet nog nu of om ons ook op
        over te toch tot u uit uw van veel voor want was wat we wel werd wie wij wil worden wordt zal ze
        zij zich zijn zo zou
        """
    ),
    "ru": _folded(
        """
        а без более бы был была были было быть в вам вас весь во вот все всё всех вы где да даже для до
        его ее её если есть еще ещё же за и из или им их к как ко когда кто ли либо мне может мы на над
        надо не него нее неё нет ни них но ну о об однако он она они оно от очень по под при с со так
        также такой там те тем то того тоже той только том ты у уже хотя чего чей чем что чтобы чье эта
        эти это этого этой этом этот я
        """
    ),
    "ar": _folded(
        """
        أن أو أي إلى إن إذا التي الذي الذين ثم حتى على عن عند في قد كان كانت كل لا لم لن له لها ما مع
        من منذ هذا هذه هل هو هي و وهو وهي يا بين بعد قبل ذلك تلك كما لكن أيضا غير فيه فيها منه منها
        عليه عليها به بها هناك
        """
    ),
}


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
        self._stemmer = Stemmer.Stemmer(SNOWBALL[name], 0)
        self._stopwords = _STOPWORDS.get(name, frozenset())
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
        ((sum(w in stops for w in folded), code) for code, stops in _STOPWORDS.items()), reverse=True
    )
    (best, code), (runner_up, _) = hits[0], hits[1]
    return _STOPWORDS[code] if best >= _QUESTION_HITS and best > runner_up else frozenset()


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
