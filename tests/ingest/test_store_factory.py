"""One store factory (`ingest.store_factory`) and a home resolved once per command (`resolve_home`)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from ingest import open_home
from ingest.home import Home, resolve_home
from ingest.store_factory import StorePlace, build_store
from rag import Document, HashingEmbedding
from rag.config import Settings
from rag.errors import ConfigError, StoreNotFoundError
from stores import ChromaVectorStore, NumpyVectorStore

MODEL = HashingEmbedding()


def _settings(**changes: object) -> Settings:
    return Settings().replace(**changes)


def test_a_place_opens_its_kind_where_the_home_keeps_it(tmp_path: Path) -> None:
    numpy = StorePlace("numpy", tmp_path, "docs")
    store = build_store(numpy, MODEL)
    assert isinstance(store, NumpyVectorStore) and store.path == tmp_path / "numpy" / "docs"
    assert numpy.needs_save and numpy.location == str(tmp_path / "numpy" / "docs")
    chroma = StorePlace("chroma", tmp_path, "docs")
    with build_store(chroma, MODEL) as opened:  # type: ignore[attr-defined]
        assert isinstance(opened, ChromaVectorStore) and opened.count() == 0
    assert (tmp_path / "chroma").is_dir() and not chroma.needs_save
    assert StorePlace("chroma", tmp_path, "docs", url="http://127.0.0.1:9").location == "http://127.0.0.1:9"


def test_a_place_refuses_what_cannot_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown store kind 'redis'"):
        StorePlace("redis", tmp_path, "docs")
    with pytest.raises(ConfigError, match="--store pgvector needs a database"):
        StorePlace("pgvector", tmp_path, "docs")
    place = StorePlace("pgvector", tmp_path, "my-docs", url="postgresql://app:s3cret@db/rag")
    assert place.location.startswith("postgresql://app:***@db/rag table c_my_docs_") and "s3cret" not in repr(
        place.location
    )


def test_the_home_is_resolved_once_and_opened_from_what_was_read(tmp_path: Path) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home:
        home.store.add([Document("1", "the pump runs at night")])
        home.save()
    resolved = resolve_home(_settings(home=tmp_path))
    assert resolved.settings.store == "numpy" and resolved.record is not None
    assert resolved.record.embedder == "hashing" and resolved.record.dimensions == MODEL.dimensions
    # The records file is not read again: opening works from what was resolved even once it is gone.
    (tmp_path / "stores.json").unlink()
    with Home.open(resolved.settings, resolved=resolved) as home:
        assert home.kind == "numpy" and home.store.count() == 1
    # Settings that name another store are resolved afresh (and that home now holds none).
    with pytest.raises(StoreNotFoundError, match="no numpy collection 'other'"):
        Home.open(resolved.settings.replace(collection="other"), resolved=resolved)


def test_the_chat_memory_store_comes_from_the_same_factory(tmp_path: Path) -> None:
    from rag.cli.chat import chat_memory_store

    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home:
        memory, persist = chat_memory_store(home.settings, home)
        assert isinstance(memory, NumpyVectorStore)
        assert memory.path == tmp_path / "chat" / "numpy" / "memory-rag"
        memory.add([Document("t1", "a remembered turn")])
        persist()
    reopened = build_store(StorePlace("numpy", tmp_path / "chat", "memory-rag"), MODEL)
    assert [d.id for d in reopened.get()] == ["t1"]


@pytest.mark.parametrize("name", ["ingest.store_factory", "stores.query_vector", "rag.retrieval.follow_up"])
def test_the_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
