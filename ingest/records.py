"""The home's store records (`RAG_HOME/stores.json`): which stores a home holds and how they were built.

`rag ingest` (or `open_home(create=True)`) writes a record when it creates a store; everything else reads
it, so the store kind, the embedder, the chunking and the search settings follow the store without
repeating options. A record's key is `KIND[@SERVER]:COLLECTION` (`numpy:rag`, `chroma:rag`,
`chroma@http://127.0.0.1:8000:rag`, `pgvector@postgresql://app:***@db/rag:rag`): the kind a home holds is
read from it, so homes written before this module existed open as they are. pgvector stores are keyed by
their database URL with the password masked: the file never holds a secret.

Example:
    >>> store_key(Settings(store="numpy", collection="papers"))
    'numpy:papers'
    >>> parse_key("pgvector@postgresql://app:***@db/rag:papers")
    ('pgvector', 'postgresql://app:***@db/rag', 'papers')
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ingest.search_record import SearchRecord
from rag.config import DEFAULT_STORE, STORE_KINDS, Settings
from rag.database_url import mask_url
from rag.errors import ConfigError, StoreNotFoundError

__all__ = [
    "StoreRecord",
    "database_url",
    "load_records",
    "not_found",
    "parse_key",
    "pg_table_name",
    "record_from",
    "record_search",
    "recorded_stores",
    "records_path",
    "resolve_store",
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
    max_tokens: int | None = None
    """The model's input limit in its tokens, which sizes the chunks (None: no limit, or not recorded
    yet). Known, it spares loading a model to learn it when no file needs splitting."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in `stores.json`."""
        raw = asdict(self)
        raw["search"] = self.search.to_dict() if self.search is not None else None
        optional = ("search", "max_tokens")
        return {name: value for name, value in raw.items() if name not in optional or value is not None}


def record_from(raw: dict[str, Any]) -> StoreRecord:
    """A record from its JSON form.

    Raises:
        ConfigError: an unknown or missing field (a hand-edited or newer file), or a count such as
            `dimensions` or `max_tokens` that is not a whole number in its range.
    """
    search = raw.get("search")
    fields = {name: value for name, value in raw.items() if name != "search"}
    try:
        record = StoreRecord(**fields, search=SearchRecord.from_dict(search) if search is not None else None)
    except TypeError as exc:  # an unknown or missing field: a hand-edited or newer file
        raise ConfigError(f"cannot read store record {raw!r} in stores.json: {exc}") from exc
    for name, least in _COUNTS.items():
        value = getattr(record, name)
        if (value is not None or name == "dimensions") and (
            isinstance(value, bool) or not isinstance(value, int) or value < least
        ):
            raise ConfigError(f"store record {raw!r} in stores.json: {name} must be an integer >= {least}")
    return record


_COUNTS = {"dimensions": 1, "max_tokens": 1, "chunk_size": 1, "chunk_overlap": 0}
"""The record's whole-number fields and their least value (only `dimensions` may not be null)."""


def pg_table_name(collection: str) -> str:
    """The pgvector table of a collection: its name with other characters as `_` (and a hash of the
    name when any were replaced, so `a-b` and `a_b` stay apart), at most 40 characters."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", collection)
    if name != collection or name[0].isdigit():
        return f"c_{name[:28]}_{zlib.crc32(collection.encode()):08x}"
    return name[:40] if len(name) <= 40 else f"{name[:29]}_{zlib.crc32(collection.encode()):08x}"


def database_url(settings: Settings) -> str:
    """The settings' PostgreSQL URL, which a pgvector store needs.

    Raises:
        ConfigError: none is set.
    """
    if not settings.database_url:
        raise ConfigError("--store pgvector needs a database: set RAG_DATABASE_URL or pass --database-url")
    return settings.database_url


def store_key(settings: Settings) -> str:
    """The key of the settings' store in `stores.json` (the store kind must be decided)."""
    if settings.store is None:
        raise ConfigError("the store kind is not decided yet: call resolve_store(settings) first")
    where = f"@{settings.chroma_url}" if settings.store == "chroma" and settings.chroma_url else ""
    if settings.store == "pgvector":
        where = f"@{mask_url(database_url(settings))}"  # the records file never holds a password
    return f"{settings.store}{where}:{settings.collection}"


def parse_key(key: str) -> tuple[str, str | None, str]:
    """(kind, server or None, collection) of a `stores.json` key; collection names hold no `:`."""
    prefix, _, collection = key.rpartition(":")
    kind, at, where = prefix.partition("@")
    return kind, (where if at else None), collection


def records_path(settings: Settings) -> Path:
    """The home's records file."""
    return settings.home / "stores.json"


def load_records(settings: Settings) -> dict[str, Any]:
    """The home's records by key (empty when the home has none yet).

    Raises:
        ConfigError: the file cannot be read or is not JSON.
    """
    path = records_path(settings)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read store records {str(path)!r}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def save_record(settings: Settings, record: StoreRecord) -> None:
    """Write `record` as the settings' store's entry, atomically."""
    records = load_records(settings)
    records[store_key(settings)] = record.to_dict()
    path = records_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)  # atomic: readers never see half a file


def not_found(settings: Settings) -> StoreNotFoundError:
    """The error for a store the home does not hold, naming the stores it holds for the collection."""
    held = [key for key in recorded_stores(settings) if key != store_key(settings)]
    where = ", ".join(f"{key} (--store {parse_key(key)[0]})" for key in held)
    hint = f"; the home holds it as {where}" if held else ""
    return StoreNotFoundError(
        f"no {settings.store} collection {settings.collection!r} in {str(settings.home)!r}{hint}; "
        "run `rag ingest` first",
        path=str(settings.home),
    )


def record_search(settings: Settings, search: SearchRecord) -> StoreRecord:
    """Record `search` as the store's search settings in the home (`rag eval --tune`).

    Raises:
        StoreNotFoundError: no store was built for these settings.
    """
    raw = load_records(settings).get(store_key(settings))
    if not isinstance(raw, dict):
        raise not_found(settings)
    record = replace(record_from(raw), search=search)
    save_record(settings, record)
    return record


def recorded_stores(settings: Settings, records: dict[str, Any] | None = None) -> list[str]:
    """The keys of the stores the home holds for the settings' collection, sorted (from `records`, the
    home's records already read, or read now)."""
    return sorted(
        key
        for key in (load_records(settings) if records is None else records)
        if parse_key(key)[2] == settings.collection and parse_key(key)[0] in STORE_KINDS
    )


def resolve_store(settings: Settings, records: dict[str, Any] | None = None) -> Settings:
    """`settings` with the store kind decided: the one given, else the one the home holds the collection in.

    A Chroma server URL alone means `chroma`. A home that holds the collection in one store gives its kind,
    and its server: the Chroma URL, or the database URL with the password left out (libpq then reads it
    from `~/.pgpass` or `PGPASSWORD`; a given `RAG_DATABASE_URL` wins). An empty home gets the default
    kind, `chroma`.

    `records` are the home's records when already read (`load_records`); else they are read here.

    Raises:
        ConfigError: the home holds the collection in several stores and none was chosen.
    """
    if settings.store is not None:
        return settings
    if settings.chroma_url:
        return settings.replace(store="chroma")
    keys = recorded_stores(settings, records)
    if not keys:
        return settings.replace(store=DEFAULT_STORE)
    if len(keys) > 1:
        raise ConfigError(
            f"home {str(settings.home)!r} holds collection {settings.collection!r} in {len(keys)} stores "
            f"({', '.join(keys)}); choose one with --store (or RAG_STORE)"
        )
    kind, where, _ = parse_key(keys[0])
    if kind == "chroma" and where:
        return settings.replace(store=kind, chroma_url=where)
    if kind == "pgvector" and where and not settings.database_url:
        return settings.replace(store=kind, database_url=_without_password(where))
    return settings.replace(store=kind)


def _without_password(masked: str) -> str:
    """A recorded (masked) database URL with an empty password instead of `***`.

    libpq treats an empty password as none given and looks it up (`~/.pgpass`, and `PGPASSWORD` for the
    URL forms), and the URL masks to the recorded one again, so it finds its record.
    """
    if "://" in masked:
        return re.sub(r"([?&]password=)\*\*\*", r"\1", re.sub(r":\*\*\*@", ":@", masked, count=1))
    return re.sub(r"(password\s*=\s*)\*\*\*", r"\1''", masked)
