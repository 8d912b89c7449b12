"""The home's store records (`RAG_HOME/stores.json`): what each store was built with and searches with.

`rag ingest` writes a record when it creates a store; every other command reads it, so the embedder, the
chunking and the search settings follow the store without repeating options. pgvector stores are keyed by
their database URL with the password masked: the file never holds a secret.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rag.cli._search import SearchRecord
from rag.config import Settings
from rag.database_url import mask_url
from rag.errors import ConfigError, StoreNotFoundError

__all__ = [
    "StoreRecord",
    "database_url",
    "load_records",
    "pg_table_name",
    "record_from",
    "record_search",
    "records_path",
    "save_record",
    "store_key",
]


@dataclass
class StoreRecord:
    """What a store was built with, kept in `RAG_HOME/stores.json`."""

    embedder: str
    model: str
    dimensions: int
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    search: SearchRecord | None = None
    """The search settings in effect for the store (None: a home written before they were recorded)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in `stores.json`."""
        raw = asdict(self)
        raw["search"] = self.search.to_dict() if self.search is not None else None
        return {name: value for name, value in raw.items() if name != "search" or value is not None}


def record_from(raw: dict[str, Any]) -> StoreRecord:
    search = raw.get("search")
    fields = {name: value for name, value in raw.items() if name != "search"}
    try:
        return StoreRecord(**fields, search=SearchRecord.from_dict(search) if search is not None else None)
    except TypeError as exc:  # an unknown or missing field: a hand-edited or newer file
        raise ConfigError(f"cannot read store record {raw!r} in stores.json: {exc}") from exc


def pg_table_name(collection: str) -> str:
    """The pgvector table of a collection: its name with other characters as `_` (and a hash of the
    name when any were replaced, so `a-b` and `a_b` stay apart), at most 40 characters."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", collection)
    if name != collection or name[0].isdigit():
        return f"c_{name[:28]}_{zlib.crc32(collection.encode()):08x}"
    return name[:40] if len(name) <= 40 else f"{name[:29]}_{zlib.crc32(collection.encode()):08x}"


def database_url(settings: Settings) -> str:
    if not settings.database_url:
        raise ConfigError("--store pgvector needs a database: set RAG_DATABASE_URL or pass --database-url")
    return settings.database_url


def store_key(settings: Settings) -> str:
    where = f"@{settings.chroma_url}" if settings.store == "chroma" and settings.chroma_url else ""
    if settings.store == "pgvector":
        where = f"@{mask_url(database_url(settings))}"  # the records file never holds a password
    return f"{settings.store}{where}:{settings.collection}"


def records_path(settings: Settings) -> Path:
    return settings.home / "stores.json"


def load_records(settings: Settings) -> dict[str, Any]:
    path = records_path(settings)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read store records {str(path)!r}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def save_record(settings: Settings, record: StoreRecord) -> None:
    records = load_records(settings)
    records[store_key(settings)] = record.to_dict()
    path = records_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)  # atomic: readers never see half a file


def record_search(settings: Settings, search: SearchRecord) -> StoreRecord:
    """Record `search` as the store's search settings in the home (`rag eval --tune`).

    Raises:
        StoreNotFoundError: no store was built for these settings.
    """
    raw = load_records(settings).get(store_key(settings))
    if not isinstance(raw, dict):
        raise StoreNotFoundError(
            f"no {settings.store} collection {settings.collection!r} in {str(settings.home)!r}; "
            "run `rag ingest` first",
            path=str(settings.home),
        )
    record = replace(record_from(raw), search=search)
    save_record(settings, record)
    return record
