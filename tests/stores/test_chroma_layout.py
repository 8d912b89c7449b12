"""The Chroma record layout (stores.chroma.records): what a record holds, and records of older versions.

Records carry no vector keys any more (search no longer repairs HNSW's losses: `exact=True` scans);
those older versions wrote (`_rag_vec`, `_rag_zero`, `_rag_twin`) are dropped when a record is rewritten.

Older versions kept the text in Chroma's `documents` and listed the metadata keys in a `_rag_keys` list.
A collection holding such records must still read, filter and search exactly, and records rewritten
by this version must lose the old list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from stores import ChromaVectorStore
from stores.chroma.records import vector_digest

MODEL = HashingEmbedding(dimensions=64)


def _raw_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def _old_record(metadata: dict[str, Any], vector: np.ndarray) -> dict[str, Any]:
    """A record's metadata as versions before the key flags wrote it."""
    record: dict[str, Any] = {"_rag_meta": json.dumps(metadata, separators=(",", ":"))}
    record.update({k: float(v) if isinstance(v, int) else v for k, v in metadata.items()})
    if metadata:
        record["_rag_keys"] = [json.dumps(k) for k in metadata]
    record.update(vector_digest(vector))
    return record


OLD: dict[str, tuple[str, dict[str, Any]]] = {
    "a": ("alpha rivers and lakes", {"year": 2020, "title": "Alpha"}),
    "b": ("beta mountains", {"title": "Beta"}),
    "c": ("gamma sand dunes", {}),
}


@pytest.fixture
def old_store_path(tmp_path: Path) -> Path:
    """A folder whose collection 'old' holds three records in the older layout."""
    client = _raw_client(tmp_path)
    collection = client.create_collection(
        "old",
        embedding_function=None,
        metadata={"rag:embedding_model": MODEL.name, "rag:dimensions": MODEL.dimensions},
        configuration={"hnsw": {"space": "ip"}},
    )
    ids = list(OLD)
    vectors = MODEL.embed([OLD[i][0] for i in ids])
    collection.add(
        ids=ids,
        embeddings=vectors,
        metadatas=[_old_record(OLD[i][1], v) for i, v in zip(ids, vectors, strict=True)],
        documents=[OLD[i][0] for i in ids],
    )
    client.close()
    return tmp_path


def test_records_hold_text_and_key_flags_in_metadata() -> None:
    with ChromaVectorStore(MODEL) as store:
        store.add([Document("a", "first text\nwith a line", {"year": 2020, "tags": ["x"]})])
        raw = store.chroma_collection.get(include=["documents", "metadatas"])
    [record] = raw["metadatas"]
    assert raw["documents"] == [None]  # Chroma's full-text index is not fed
    assert json.loads(record["_rag_text"]) == "first text\nwith a line"
    assert record['_rag_key:"year"'] == 1 and record['_rag_key:"tags"'] == 1
    assert "_rag_keys" not in record
    assert set(record) == {
        "_rag_meta",
        "_rag_text",
        "year",
        '_rag_key:"year"',
        '_rag_key:"tags"',
        "_rag_items",
    }


def test_older_records_read_filter_and_search_exactly(old_store_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=old_store_path, collection="old") as store:
        assert {d.id: (d.text, d.metadata) for d in store.get()} == OLD
        assert [d.id for d in store.get(filter="year IS NULL")] == ["b", "c"]
        assert [d.id for d in store.get(filter="title IS NOT NULL")] == ["a", "b"]
        assert [d.id for d in store.get(filter="title < 'B'")] == ["a"]  # finished in Python
        assert store.similarity_search(SearchRequest("gamma sand dunes", top_k=1))[0].id == "c"
        assert store.similarity_search(SearchRequest("beta", top_k=1, mode="lexical"))[0].id == "b"


def test_rewritten_older_records_lose_the_key_list(old_store_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=old_store_path, collection="old") as store:
        store.add([Document("b", "beta rewritten", {"year": 1999}), Document("d", "delta", {"year": 2})])
        assert [d.id for d in store.get(filter="year IS NOT NULL")] == ["a", "b", "d"]
        assert [d.id for d in store.get(filter="title IS NULL")] == ["b", "c", "d"]
        [b] = store.get(["b"])
        assert (b.text, b.metadata) == ("beta rewritten", {"year": 1999})
        raw = store.chroma_collection.get(ids=["b"], include=["metadatas"])["metadatas"][0]
        assert "_rag_keys" not in raw and "title" not in raw and raw['_rag_key:"year"'] == 1
        assert "_rag_vec" not in raw


def test_an_empty_older_collection_moves_to_the_current_layout(tmp_path: Path) -> None:
    client = _raw_client(tmp_path)
    client.create_collection(
        "empty",
        embedding_function=None,
        metadata={"rag:embedding_model": MODEL.name, "rag:dimensions": MODEL.dimensions},
        configuration={"hnsw": {"space": "ip"}},
    )
    client.close()
    with ChromaVectorStore(MODEL, path=tmp_path, collection="empty") as store:
        assert store.chroma_collection.metadata.get("rag:layout") == 2
        store.add([Document("a", "alpha", {"k": 1})])
        assert store.count("k IS NOT NULL") == 1 and store.count("k IS NULL") == 0
