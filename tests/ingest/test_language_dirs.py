"""Chunk metadata for a docs tree: `dirs`, a detected `lang`, and the embedding input with its context."""

from __future__ import annotations

import pytest

from ingest.chunking import embedding_input, make_chunks
from ingest.language import LANGUAGES, detect_language
from ingest.readers import Unit
from ingest.splitters import RecursiveSplitter

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


def _chunks(source: str, units: list[Unit], **kwargs: object) -> list[dict[str, object]]:
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
