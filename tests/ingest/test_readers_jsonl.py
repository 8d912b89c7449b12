"""JSON Lines: BEIR-style corpora, chosen fields, and the records a corpus should not contain."""

from __future__ import annotations

import json

import pytest

from rag.errors import IngestError
from tests.ingest.conftest import Read


def _lines(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


BEIR = _lines(
    {
        "_id": "4983",
        "title": "Microstructural development",
        "text": "Alterations of the architecture.",
        "metadata": {"year": 2001, "tags": ["a"]},
    },
    {"_id": 5836, "title": "", "text": "Only text here.", "score": 1.5, "flag": True, "none": None},
)


def test_beir_corpus_with_title_and_text(read: Read) -> None:
    result = read("corpus.jsonl", BEIR, text_field="title,text", id_field="_id")
    first, second = result.units
    assert (first.id, first.text) == (
        "4983",
        "Microstructural development\n\nAlterations of the architecture.",
    )
    assert first.metadata == {
        "title": "Microstructural development",
        "metadata.year": 2001,
        "metadata.tags": ["a"],
        "source": "corpus.jsonl",
        "line": 1,
    }
    assert (second.id, second.text) == ("5836", "Only text here.")  # an empty title is left out
    assert second.metadata == {"score": 1.5, "flag": True, "source": "corpus.jsonl", "line": 2}
    assert all(u.char_offset == 0 for u in result.units)


def test_chosen_metadata_fields_only(read: Read) -> None:
    result = read("corpus.jsonl", BEIR, text_field="text", metadata_fields=("score", "missing"))
    assert [u.metadata for u in result.units] == [
        {"source": "corpus.jsonl", "line": 1},
        {"score": 1.5, "source": "corpus.jsonl", "line": 2},
    ]
    assert [u.id for u in result.units] == [None, None]


def test_bad_json_line_is_named_and_the_rest_is_read(read: Read) -> None:
    data = _lines({"text": "ok"}) + "\n" + '{"text": "broken\n' + _lines({"text": "after"})
    result = read("bad.jsonl", data)
    assert [(u.text, u.metadata["line"]) for u in result.units] == [("ok", 1), ("after", 4)]
    assert len(result.errors) == 1
    assert result.errors[0].startswith("'bad.jsonl' line 3: invalid JSON")


def test_a_record_that_is_not_an_object_is_a_bad_line(read: Read) -> None:
    result = read("list.jsonl", '[1, 2]\n{"text": "kept"}\n')
    assert [u.text for u in result.units] == ["kept"]
    assert result.errors == ["'list.jsonl' line 1: expected a JSON object, got list"]


def test_missing_and_duplicate_ids_are_bad_lines(read: Read) -> None:
    result = read("ids.jsonl", _lines({"_id": "a", "text": "x"}, {"text": "y"}), id_field="_id")
    assert [u.id for u in result.units] == ["a"]
    assert len(result.errors) == 1 and "line 2: id field '_id' is missing" in result.errors[0]
    records = _lines({"_id": "a", "text": "x"}, {"_id": "b", "text": "y"}, {"_id": "a", "text": "z"})
    result = read("ids.jsonl", records, id_field="_id")
    assert [(u.id, u.text) for u in result.units] == [("a", "x"), ("b", "y")]
    assert result.errors == ["'ids.jsonl' line 3: id 'a' already used on line 1"]


def test_records_without_text_are_skipped_with_one_warning(read: Read) -> None:
    data = _lines({"text": "kept"}, {"text": ""}, {"body": "other field"}, {"text": None})
    result = read("sparse.jsonl", data)
    assert [u.text for u in result.units] == ["kept"]
    assert result.warnings == ["3 records without text in 'text' skipped"]


def test_bom_and_blank_lines_and_non_string_text(read: Read) -> None:
    data = b"\xef\xbb\xbf" + b'{"text": 42}\n\n  \n{"text": "two"}'
    result = read("misc.ndjson", data)
    assert [(u.text, u.metadata["line"]) for u in result.units] == [("42", 1), ("two", 4)]


def test_empty_text_field_option_is_an_error(read: Read) -> None:
    with pytest.raises(IngestError, match="no text field given"):
        read("x.jsonl", _lines({"text": "a"}), text_field=" , ")
