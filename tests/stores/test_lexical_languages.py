"""The lexical index analyses each document in its `lang` and each query in every language it holds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stores.lexical import LexicalIndex
from stores.lexical.languages import analyser_for, language_of
from stores.lexical.text import analyze, query_idfs, query_terms

# Per language: a document, a query with another inflected form of one of its words (and a stop word),
# and a document of the same language without that word.
CASES = {
    "en": ("The studies were published in spring.", "the study", "Results were shown in autumn."),
    "de": ("Das Haus steht am See.", "und die Häuser", "Der Wagen steht am Weg."),
    "fr": ("La maison est grande.", "les maisons", "La voiture est rouge."),
    "es": ("Escribió una canción nueva.", "las canciones", "Escribió una carta nueva."),
    "pt": ("A cidade é bonita.", "as cidades", "A praia é bonita."),
    "it": ("Ho letto il libro ieri.", "gli libri", "Ho visto il film ieri."),
    "nl": ("Het boek ligt op tafel.", "de boeken", "De kat ligt op tafel."),
    "ru": ("Он читал книгу вечером.", "с книгами", "Он читал газету вечером."),
    "ar": ("زار الطالب المكتبات في المدينة", "في مكتبة", "زار الطالب المتحف في المدينة"),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_query_finds_another_inflected_form_in_its_language(lang: str) -> None:
    document, query, other = CASES[lang]
    index = LexicalIndex()
    index.add(["hit", "other"], [document, other], [{"lang": lang}, {"lang": lang}])
    assert [doc_id for doc_id, _ in index.search(query, 5)] == ["hit"]


@pytest.mark.parametrize("lang", sorted(CASES))
def test_stop_words_of_each_language_are_dropped(lang: str) -> None:
    _, query, _ = CASES[lang]
    stop_word, word = query.split(" ", 1)[0], query.split(" ")[-1]
    assert analyze(query, lang) == analyze(word, lang) != []
    assert analyze(stop_word, lang) == []
    index = LexicalIndex()
    index.add(["a"], [CASES[lang][0]], [{"lang": lang}])
    assert index.search(stop_word, 5) == []  # a stop word matches nothing, though the text holds it


def test_each_document_keeps_its_own_language_in_one_index() -> None:
    index = LexicalIndex()
    index.add(
        ["de", "en", "ru"],
        ["Die Häuser am Fluss", "The houses by the river", "Дома у реки"],
        [{"lang": "de"}, {"lang": "en-GB"}, {"lang": "ru"}],
    )
    assert index.languages() == ["de", "en", "ru"]
    assert index.search("Haus", 5)[0][0] == "de"
    assert index.search("house", 5)[0][0] == "en"
    assert index.search("дом", 5)[0][0] == "ru"
    assert index.search("Flüsse", 5)[0][0] == "de"
    index.delete(["ru"])
    assert index.languages() == ["de", "en"]


def test_each_document_is_scored_with_the_query_in_its_own_language() -> None:
    # "Häuser" is "haus" to the German analysis and "hauser" to the English one; each document meets
    # the query word in its own language, and its idf counts both (df 2 of N 2: ln(1 + 0.5 / 2.5);
    # length 2 each, so K(d) = k1 and the score is idf).
    index = LexicalIndex()
    index.add(["de", "en"], ["Die Häuser am Fluss", "Hauser river"], [{"lang": "de"}, {"lang": "en"}])
    found = dict(index.search("Häuser", 5))
    assert found == pytest.approx({"de": math.log(1.2), "en": math.log(1.2)})
    # The German stop word "die" is an English word: it is a term of English documents only.
    assert query_terms("die Häuser", "de") == [None, "haus"]
    assert query_terms("die Häuser", "en") == ["die", "hauser"]


def test_a_stop_word_counts_as_held_by_every_document_of_the_language_that_drops_it() -> None:
    # "de" is a term of one English document in two, and a stop word of eight French documents:
    # df 1 + 8 of N 10. "maison" is held by one French document and no English one: df 1.
    analysed: list[tuple[str, list[str | None]]] = [("en", ["de", "maison"]), ("fr", [None, "maison"])]
    found = query_idfs(analysed, {("en", "de"): 1, ("fr", "maison"): 1}, {"en": 2, "fr": 8})
    assert {(language, term): idf for language, term, idf in found} == pytest.approx(
        {("en", "de"): math.log(1 + 1.5 / 9.5), ("fr", "maison"): math.log(1 + 9.5 / 1.5)}
    )


def test_an_index_without_lang_metadata_analyses_english() -> None:
    index = LexicalIndex()
    index.add(["a"], ["Running the studies"])
    assert index.languages() == ["en"]
    assert index.search("study runs", 5)[0][0] == "a"
    assert [language_of(code) for code in ("und", None, "xx", "pt-BR", "de_AT", 3)] == [
        "en",
        "en",
        "en",
        "pt",
        "de",
        "en",
    ]
    assert analyser_for("nb").term("bøkene") == analyser_for("no").term("bøker")


def test_languages_survive_a_save_and_load(tmp_path: Path) -> None:
    index = LexicalIndex()
    index.add(["de", "fr"], ["Die Häuser", "Les maisons"], [{"lang": "de"}, {"lang": "fr"}])
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert loaded.languages() == ["de", "fr"]
    assert loaded.search("Haus", 5) == index.search("Haus", 5)
    assert loaded.search("maison", 5)[0][0] == "fr"
    assert "haus" in loaded.document_frequencies() and all(
        " " not in t for t in loaded.document_frequencies()
    )


def test_title_headings_and_path_outweigh_mentions_in_passing() -> None:
    index = LexicalIndex()
    index.add(
        ["page", "notes", "setup"],
        [
            "Declare them with the same structure as query values.",
            "Fixed: cookies were dropped. Cookies now keep their order; cookies sent twice are merged.",
            "Run the command below, then check the version it prints.",
        ],
        [
            {
                "title": "Cookie Parameters",
                "headings": ["Declare cookies"],
                "source": "tutorial/cookie-params.md",
            },
            {"title": "Release Notes", "source": "release-notes.md"},
            {"source": "guide/install.md"},
        ],
    )
    assert [doc_id for doc_id, _ in index.search("cookies", 3)] == ["page", "notes"]
    assert [doc_id for doc_id, _ in index.search("how do I install it", 3)] == ["setup"]  # path words
