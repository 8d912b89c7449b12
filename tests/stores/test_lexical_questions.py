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


def test_a_word_common_in_the_questions_language_stays_common_on_an_untranslated_page() -> None:
    # Every French page holds "fichiers" and "compte"; the one English page holds them too (a section
    # left half translated). Counted among the English pages alone they would look rare there, and
    # that page would outscore the French page that also holds the rare word "supprimer".
    index = LexicalIndex()
    french = [
        "Supprimer les fichiers du compte.",
        "Lister les fichiers du compte.",
        "Copier les fichiers du compte.",
    ]
    english = ["Files: fichiers du compte.", "Prints the version and exits.", "Shows who is logged in."]
    index.add(
        ["fr-delete", "fr-list", "fr-copy", "en-files", "en-version", "en-who"],
        french + english,
        [{"lang": "fr"}] * 3 + [{"lang": "en"}] * 3,
    )
    assert index.search("supprimer les fichiers du compte", 1)[0][0] == "fr-delete"
    found = dict(index.search("les fichiers du compte", 6))
    assert found["en-files"] <= min(found[doc] for doc in ("fr-list", "fr-copy"))


def test_a_question_shows_its_language_by_two_function_words_or_none() -> None:
    assert "des" in question_stopwords(["la", "liste", "des", "groupes"])
    assert "und" in question_stopwords(["die", "und", "Häuser"])
    assert question_stopwords(["die", "casting", "process"]) == frozenset()  # one word says too little
    assert question_stopwords(["groups", "of", "users"]) == frozenset()
