"""A question's own function words, in its own language, never decide a match in another language."""

from __future__ import annotations

from stores.lexical.index import LexicalIndex
from stores.lexical.languages import question_stopwords


def test_a_french_question_matches_an_untranslated_page_by_its_content_words() -> None:
    index = LexicalIndex()
    index.add(
        ["groups", "places", "maisons"],
        [
            "The groups command prints the groups a user belongs to, one per line.",
            "La Jolla and Des Moines: a list of places to visit.",
            "Les maisons de la ville et les jardins.",
        ],
        [{"lang": "en"}, {"lang": "en"}, {"lang": "fr"}],
    )
    # Analysed in English, "la" and "des" would be rare words that "places" holds twice.
    assert [doc for doc, _ in index.search("afficher la liste des groupes", 3)] == ["groups", "places"]
    assert index.search("les maisons de la ville", 1)[0][0] == "maisons"


def test_a_question_shows_its_language_by_two_function_words_or_none() -> None:
    assert "des" in question_stopwords(["la", "liste", "des", "groupes"])
    assert "und" in question_stopwords(["die", "und", "Häuser"])
    assert question_stopwords(["die", "casting", "process"]) == frozenset()  # one word says too little
    assert question_stopwords(["groups", "of", "users"]) == frozenset()
