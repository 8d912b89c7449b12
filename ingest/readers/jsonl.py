"""JSON Lines: one unit per record, with the text, id and metadata fields the user chooses.

- Text: `ReaderOptions.text_field`, or several fields separated by commas, joined by a blank line in
  that order (`"title,text"` for BEIR corpora, whose titles carry meaning). Missing, null or empty
  fields are left out; a record with no text at all is skipped and counted in one warning.
- Id: `ReaderOptions.id_field` (`"_id"` for BEIR); a string or an integer. A record without it, or
  with an id an earlier line already used, is a bad line (below): ids are what the store keys on, and
  guessing would merge or lose records.
- Metadata: `ReaderOptions.metadata_fields`, or by default every other field whose value is a scalar
  or a list of scalars (plus `title`, even when it is a text field, unless empty); nested objects are
  flattened into dotted keys. `line` is the record's line
  number (1-based). A record's own `source` or `line` field is dropped: the reader sets those.
- A bad line (not valid JSON, nested deeper than Python's recursion limit allows, not a JSON object,
  or a missing or repeated id) is left out and named,
  with the file and its line number, in `ReadResult.errors`; every other record is read. The pipeline
  reports the file with its errors and the run exits 1, so a broken line is never lost silently.
  Blank lines are ignored.
- Encoding: UTF-8 (a BOM is allowed), as the JSON Lines format requires.
- Chunk offsets count in each record's own text (`char_offset` is 0): a record is its own document.

Example:
    >>> line = b'{"_id": "d1", "title": "Aspirin", "text": "Reduces fever.", "year": 2001}\\n'
    >>> options = ReaderOptions(text_field="title,text", id_field="_id")
    >>> unit = read_jsonl(line, "corpus.jsonl", options).units[0]
    >>> unit.id, unit.text, unit.metadata["year"]
    ('d1', 'Aspirin\\n\\nReduces fever.', 2001)
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult, Unit
from ingest.readers.fields import flatten_fields
from rag.errors import IngestError

__all__ = ["read_jsonl"]


def _text(record: Mapping[str, object], fields: tuple[str, ...]) -> str:
    parts = []
    for name in fields:
        value = record.get(name)
        if value is None:
            continue
        part = (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).strip()
        if part:
            parts.append(part)
    return "\n\n".join(parts)


def _record_id(record: Mapping[str, object], field: str, where: str, source: str) -> str:
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise IngestError(
            f"{where}: id field {field!r} is missing or not a string/integer: {value!r}", path=source
        )
    return str(value)


def _metadata(record: Mapping[str, object], options: ReaderOptions) -> dict[str, MetadataValue]:
    if options.metadata_fields is not None:
        chosen = {name: record[name] for name in options.metadata_fields if name in record}
    else:
        # A `title` stays metadata even when it is also text: every reader gives `title` where known.
        used = {*options.text_fields, options.id_field} - {"title"}
        chosen = {name: value for name, value in record.items() if name not in used}
    if chosen.get("title") == "":
        del chosen["title"]
    return flatten_fields(chosen)


def _parse(line: bytes, where: str, source: str) -> dict[str, object] | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(f"{where}: invalid JSON: {exc}", path=source) from exc
    if not isinstance(record, dict):
        raise IngestError(f"{where}: expected a JSON object, got {type(record).__name__}", path=source)
    return record


def _checked_id(
    record: Mapping[str, object], options: ReaderOptions, where: str, source: str, seen: Mapping[str, int]
) -> str | None:
    if not options.id_field:
        return None
    record_id = _record_id(record, options.id_field, where, source)
    if record_id in seen:
        raise IngestError(f"{where}: id {record_id!r} already used on line {seen[record_id]}", path=source)
    return record_id


def read_jsonl(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """A JSON Lines file as one unit per record (see the module docstring)."""
    if not options.text_fields:
        raise IngestError(f"no text field given for {source!r}", path=source)
    result = ReadResult([])
    seen: dict[str, int] = {}
    without_text = 0
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, line in enumerate(data.split(b"\n"), start=1):
        where = f"{source!r} line {number}"
        try:
            record = _parse(line, where, source)
            if record is None:
                continue
            record_id = _checked_id(record, options, where, source, seen)
            text = _text(record, options.text_fields)
            metadata = _metadata(record, options) if text else {}
        except IngestError as exc:
            result.errors.append(str(exc))
            continue
        except RecursionError:  # parsing, dumping or flattening a record nested thousands deep
            result.errors.append(f"{where}: JSON nested too deeply")
            continue
        if record_id is not None:
            seen[record_id] = number
        if not text:
            without_text += 1
            continue
        result.units.append(Unit(text, {**metadata, "source": source, "line": number}, 0, record_id))
    if without_text:
        names = ", ".join(repr(name) for name in options.text_fields)
        result.warnings.append(f"{without_text} records without text in {names} skipped")
    return result
