"""`detect_language`: which language a text is written in, from the stopwords it uses.

A small profile detector written for chunk metadata (`lang`), with no model and no dependency. Each
language has a list of its most frequent function words; a word found in several lists counts for each
in proportion. The best language wins when it found at least `min_hits` words and clearly more than the
runner-up; otherwise the answer is `"und"` (undetermined, the ISO 639 code), which code, tables and very
short texts get.

Covered: English (`en`), Spanish (`es`), French (`fr`), German (`de`), Portuguese (`pt`), Italian (`it`)
and Dutch (`nl`).

Example:
    >>> detect_language("The path parameters are declared in the function signature.")
    'en'
    >>> detect_language("Los parámetros de ruta se declaran en la firma de la función.")
    'es'
    >>> detect_language("x = f(y) + 1")
    'und'
"""

from __future__ import annotations

from collections import Counter, defaultdict

__all__ = ["LANGUAGES", "UNDETERMINED", "detect_language"]

UNDETERMINED = "und"
_PROFILES = {
    "en": "the of and to in is that it for was on are with as be this by not or from at have an but which "
    "you they we can has their will if would more all there these also been when its our how what your",
    "es": "el la los las de del que y en un una es por con para no se lo como más pero sus al está son "
    "este esta también fue ha entre cuando muy sin sobre ya hay donde desde puede usar a mi mis tu su "
    "cómo qué puedo hacer",
    "fr": "le la les de des du et est un une que qui dans pour pas sur au aux ce cette il elle sont avec "
    "par ne plus se ou nous vous mais été leur comme peut être votre vos à comment je mon ma mes quel "
    "quelle",
    "de": "der die das und ist ein eine zu den nicht von mit sich des auf für im dem auch es an als wird "
    "werden oder bei nach sind aus wie kann wenn noch nur über diese sie ich wie meiner mein meine füge",
    "pt": "o a os as de do da dos das que e em um uma para com não é por se na no mais como mas foi ao "
    "ele ela são seu sua pelo pela também está isso entre quando muito você minha meu eu",
    "it": "il lo la i gli le di del della che e è un una per con non si da in sono come più ma anche nel "
    "alla questo questa essere ha dei delle al cui degli sul può dal dalla viene mio mia si",
    "nl": "de het een en van is dat op te in zijn niet met voor die er aan ook als bij door om maar wordt "
    "worden deze dit naar kan nog wel uit hebben hij zij je ik mijn hoe toe wat uw",
}
LANGUAGES: tuple[str, ...] = tuple(_PROFILES)
"""The languages `detect_language` can name."""

_WEIGHTS: dict[str, dict[str, float]] = defaultdict(dict)
for _code, _words in _PROFILES.items():
    for _word in _words.split():
        _WEIGHTS[_word][_code] = 1.0
for _shares in _WEIGHTS.values():
    for _code in _shares:
        _shares[_code] = 1.0 / len(_shares)  # a word several languages use says less about each
_STOPWORDS = frozenset(_WEIGHTS)


def detect_language(
    text: str,
    *,
    min_hits: float = 1.5,
    margin: float = 1.25,
    min_share: float = 0.0,
    max_chars: int = 5_000,
) -> str:
    """The language code of `text` (see `LANGUAGES`), or `"und"` when it is unclear.

    Args:
        text: any text; only its first `max_chars` characters are read.
        min_hits: how many stopword hits the winner needs (shared words count in part).
        margin: how many times the runner-up's hits the winner needs.
        min_share: the winner's hits per word of text it needs; prose has 0.15 or more, code and
            tables that happen to hold a few stopwords far less.
        max_chars: enough text to decide; reading more changes nothing but the cost.
    """
    scores: dict[str, float] = defaultdict(float)
    # Split and keep the stopwords in C (`filter` with the set's own `__contains__`): a Python step per
    # word would cost more than reading the text. A stopword is rarely the one word a comma follows.
    words = text[:max_chars].lower().split()
    for word, count in Counter(filter(_STOPWORDS.__contains__, words)).items():
        for code, weight in _WEIGHTS[word].items():
            scores[code] += count * weight
    if not scores:
        return UNDETERMINED
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    best, score = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if score < min_hits or score < margin * runner_up or score < min_share * len(words):
        return UNDETERMINED
    return best
