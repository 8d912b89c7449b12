"""Chunk metadata for a docs tree: `dirs`, a detected `lang`, and the embedding input with its context."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from ingest import IngestPipeline
from ingest.chunking import embedding_input, make_chunks
from ingest.language import LANGUAGES, detect_language
from ingest.readers import Unit
from ingest.splitters import RecursiveSplitter
from rag import HashingEmbedding
from stores import NumpyVectorStore

SAMPLES = {
    "en": "How do I add CORS middleware to my application?",
    "es": "¿Cómo puedo añadir el middleware de CORS a mi aplicación?",
    "fr": "Comment ajouter le middleware CORS à votre application ?",
    "de": "Wie füge ich die CORS-Middleware zu meiner Anwendung hinzu?",
    "pt": "Como eu adiciono o middleware de CORS na minha aplicação?",
    "it": "Come si aggiunge il middleware CORS alla propria applicazione?",
    "nl": "Hoe voeg ik de CORS-middleware toe aan mijn applicatie?",
}
SENTENCES = {
    "en": "The request body is read from the JSON sent by the client.",
    "es": "El cuerpo de la solicitud se lee desde el JSON que envía el cliente.",
    "fr": "Le corps de la requête est lu depuis le JSON envoyé par le client.",
    "de": "Der Körper der Anfrage wird aus dem JSON gelesen, das der Client sendet.",
    "pt": "O corpo da requisição é lido do JSON enviado pelo cliente.",
    "it": "Il corpo della richiesta viene letto dal JSON inviato dal client.",
    "nl": "De body van het verzoek wordt gelezen uit de JSON die de client stuurt.",
}


@pytest.mark.parametrize("code", sorted(SAMPLES))
def test_short_questions_and_sentences_are_detected(code: str) -> None:
    assert code in LANGUAGES
    assert detect_language(SAMPLES[code]) == code
    assert detect_language(SENTENCES[code]) == code


@pytest.mark.parametrize("text", ["", "x = f(y) + 1", "pip install fastapi", "FastAPI", "a"])
def test_code_and_fragments_are_undetermined(text: str) -> None:
    assert detect_language(text) == "und"


def test_a_margin_and_a_share_of_words_make_detection_stricter() -> None:
    mixed = f"{SENTENCES['en']} {SENTENCES['fr']}"
    assert detect_language(mixed) == "en"
    assert detect_language(mixed, margin=2.0) == "und"
    code = "readonly i Nice = ...; " + "x = f(y) + 1; " * 10
    assert detect_language(code, min_hits=1) == "it"
    assert detect_language(code, min_hits=1, min_share=0.1) == "und"


def _chunks(source: str, units: list[Unit], **kwargs: object) -> list[Mapping[str, object]]:
    chunks = make_chunks(source, units, RecursiveSplitter(50, 5), root="site", **kwargs)  # type: ignore[arg-type]
    return [c.metadata for c in chunks]


def test_chunks_record_their_folders_and_language() -> None:
    [meta] = _chunks("docs/es/tutorial/cors.md", [Unit(SENTENCES["es"], {"source": "x"})])
    assert meta["dirs"] == ["docs", "docs/es", "docs/es/tutorial"]
    assert meta["lang"] == "es"
    [top] = _chunks("README.md", [Unit(SENTENCES["en"], {"source": "x"})])
    assert "dirs" not in top and top["lang"] == "en"


def test_a_declared_language_wins_and_records_are_detected_alone() -> None:
    [meta] = _chunks("a.md", [Unit(SENTENCES["en"], {"source": "a.md", "lang": "fr"})])
    assert meta["lang"] == "fr"
    records = [Unit(SENTENCES["de"], {}, 0, "r1"), Unit(SENTENCES["it"], {}, 0, "r2")]
    assert [m["lang"] for m in _chunks("c.jsonl", records)] == ["de", "it"]


def test_embedding_context_changes_the_ids_and_reads_title_and_headings() -> None:
    unit = Unit("Declare it with Path().", {"title": "FastAPI", "headings": ["Path Parameters"]})
    plain = make_chunks("p.md", [unit], RecursiveSplitter(50, 5))
    context = make_chunks("p.md", [unit], RecursiveSplitter(50, 5), embed_context=True)
    assert plain[0].text == context[0].text and plain[0].id != context[0].id
    assert embedding_input(unit.text, unit.metadata) == "FastAPI > Path Parameters: Declare it with Path()."
    assert embedding_input("FastAPI\n\nBody.", {"title": "FastAPI"}) == "FastAPI\n\nBody."
    assert embedding_input("Body.", {}) == "Body."


FRENCH = (
    "Cette page décrit la commande et les fichiers de configuration qu'elle lit au démarrage. "
    "Les options sont lues dans le fichier système, puis dans le fichier de l'utilisateur, et la "
    "dernière valeur lue est celle qui est retenue par le programme."
)
ENGLISH = (
    "This section has not been translated yet. The command reads the system file first and then the "
    "file in the home directory of the user, and the last value that is read is the one that the "
    "program keeps. When the file is missing, the built-in defaults are used and a warning is written "
    "to the log."
)


def test_a_partly_translated_page_gives_each_section_its_own_language(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    sections = {
        "Description": FRENCH,
        "Fichiers": FRENCH,
        "Options": FRENCH,
        "Configuration": ENGLISH,
        "Exit status": "Zero on success.",
        "Exemples": "    commande --verbose /etc/commande.conf",
    }
    page = "# Commande\n\n" + "".join(f"## {heading}\n\n{text}\n\n" for heading, text in sections.items())
    (docs / "commande.md").write_text(page, encoding="utf-8")
    store = NumpyVectorStore(HashingEmbedding())
    IngestPipeline(store, RecursiveSplitter(60, 0)).run([docs])
    langs = {doc.metadata["headings"][-1]: doc.metadata["lang"] for doc in store.get()}  # type: ignore[index]
    # The English section is English; the heading-and-one-line section and the code keep the file's French.
    assert langs == {
        "Description": "fr",
        "Fichiers": "fr",
        "Options": "fr",
        "Configuration": "en",
        "Exit status": "fr",
        "Exemples": "fr",
    }
    assert store.count("lang == 'en'") == 1


def test_short_or_code_chunks_keep_the_file_language() -> None:
    # An English heading with a one-line section, and code where Italian's "i" is frequent.
    units = [
        Unit(f"{FRENCH}\n\n{FRENCH}", {"source": "x"}),
        Unit("## See also the manual\n\nThe end.", {"source": "x"}),
        Unit(
            "readonly i Nice = ...;\n@org.freedesktop.DBus.Property.EmitsChangedSignal(false)\n"
            "readonly s KillMode = '...';\n@org.freedesktop.DBus.Property.EmitsChangedSignal(const)\n"
            "readonly b SendSIGKILL = ...;\n@org.freedesktop.DBus.Property.EmitsChangedSignal(const)\n" * 4,
            {"source": "x"},
        ),
    ]
    chunks = make_chunks("page.md", units, RecursiveSplitter(60, 0))
    assert "## See also the manual\n\nThe end." in [c.text for c in chunks]
    assert {c.metadata["lang"] for c in chunks} == {"fr"}


def test_a_record_chunk_falls_back_to_its_records_language() -> None:
    records = [
        Unit(f"{FRENCH}\n\n{FRENCH}\n\n{ENGLISH}", {}, 0, "r1"),
        Unit("Voir aussi : commande(1), commande.conf(5).", {}, 0, "r2"),
    ]
    chunks = make_chunks("c.jsonl", records, RecursiveSplitter(60, 0))
    assert [(c.metadata["doc_id"], c.metadata["lang"]) for c in chunks] == [
        ("r1", "fr"),
        ("r1", "fr"),
        ("r1", "en"),
        ("r2", "und"),
    ]
