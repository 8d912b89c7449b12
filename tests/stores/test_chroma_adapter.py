"""The Chroma adapter keeps nothing beside Chroma but its BM25 index: what that means for users.

Writes made with raw chromadb are seen at once by `count`, `get` and filtered search (Chroma answers
them); the BM25 index says it is behind (`lexical_current`) until `reindex()`. An index left unsaved
by a killed process, or damaged, is rebuilt, never answered from. Homes of the previous layout open.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from stores import ChromaVectorStore
from stores.chroma.lexical import FOLDER

MODEL = HashingEmbedding(dimensions=32)
DOCS = [
    Document("a", "tides flood the causeway", {"year": 2020, "tags": ["sea"]}),
    Document("b", "granite quarries and stone", {"year": 2021, "tags": ["rock"]}),
    Document("c", "harbour cranes at dawn", {"year": 2022, "tags": ["sea", "port"]}),
]


@pytest.fixture(params=["embedded", "server"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, object]]:
    if request.param == "embedded":
        yield {"path": tmp_path / "home"}
    else:
        url = request.getfixturevalue("chroma_server")
        # A server store keeps its BM25 index in a local folder of the caller's choosing.
        name = f"raw-{tmp_path.name[-20:].strip('_-') or 'x'}x"
        yield {"url": url, "collection": name, "index_path": tmp_path / "index"}


def _lexical(store: ChromaVectorStore, query: str) -> list[str]:
    return [d.id for d in store.similarity_search(SearchRequest(query, top_k=5, mode="lexical"))]


def test_raw_writes_that_keep_the_count_are_seen_after_reopening(opener: dict[str, object]) -> None:
    with ChromaVectorStore(MODEL, **opener) as store:  # type: ignore[arg-type]
        store.add(DOCS)
        raw = store.chroma_collection
        # Another tool adds one record and deletes another: the count stays 3.
        raw.add(ids=["d"], embeddings=MODEL.embed(["lighthouse keepers"]), metadatas=[{"year": 2023}],
                documents=["lighthouse keepers"])  # fmt: skip
        raw.delete(ids=["b"])
    with ChromaVectorStore(MODEL, **opener) as again:  # type: ignore[arg-type]
        assert again.count() == 3 and again.count("year >= 2021") == 2
        assert [d.id for d in again.get()] == ["a", "c", "d"]
        assert [d.text for d in again.get(["d", "b"])] == ["lighthouse keepers"]
        found = again.similarity_search(SearchRequest("granite lighthouse", top_k=5, filter="year >= 2021"))
        assert sorted(d.id for d in found) == ["c", "d"]
        # The raw record's text is Chroma's document, in searches and filtered reads alike.
        assert {d.id: d.text for d in found}["d"] == "lighthouse keepers"
        assert [d.text for d in again.get(filter="year == 2023")] == ["lighthouse keepers"]
        # The BM25 index reflects this toolkit's writes only, and says so until it is rebuilt.
        assert not again.lexical_current()
        assert _lexical(again, "lighthouse granite") == []  # "b" is gone from Chroma, "d" not indexed
        again.reindex()
        assert again.lexical_current() and _lexical(again, "lighthouse granite") == ["d"]
        if "collection" in opener:
            again.chroma_client.delete_collection(again.collection_name)


def test_an_index_a_killed_process_left_unsaved_is_rebuilt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ChromaVectorStore(MODEL, path=home) as store:
        store.add(DOCS[:1])
    code = (
        "import os, sys; from rag import Document; from rag.embeddings import HashingEmbedding;"
        "from stores import ChromaVectorStore;"
        f"s = ChromaVectorStore(HashingEmbedding(dimensions=32), path={str(home)!r});"
        "s.add([Document('k', 'quarries of granite')]); os._exit(0)"  # no close, no save: like kill -9
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with ChromaVectorStore(MODEL, path=home) as again:
        assert sorted(_lexical(again, "granite causeway")) == ["a", "k"]
        assert again.lexical_current()


def test_a_damaged_index_is_rebuilt_not_answered_from(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ChromaVectorStore(MODEL, path=home) as store:
        store.add(DOCS)
    saved = [p for p in (home / FOLDER).rglob("*") if p.is_file()]
    assert saved
    for path in saved:
        path.write_bytes(b"\0" * path.stat().st_size)  # zeroed, sizes kept
    with ChromaVectorStore(MODEL, path=home) as again:
        assert _lexical(again, "granite") == ["b"] and _lexical(again, "harbour tides") != []


def test_a_home_of_the_previous_layout_is_upgraded_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ChromaVectorStore(MODEL, path=home) as store:
        raw, client = store.chroma_collection, store.chroma_client
        # A record as the previous version wrote it: exact JSON copies, numbers as floats, flag keys.
        meta = {"year": 2020, "tags": ["sea"], "ratio": 0.1 + 0.2}
        raw.add(
            ids=["old"],
            embeddings=MODEL.embed(["tides flood the causeway"]),
            metadatas=[{"_rag_meta": json.dumps(meta), "_rag_text": json.dumps("tides flood the causeway"),
                        "year": 2020.0, '_rag_key:"year"': 1, "_rag_items": ['["tags","s","sea"]']}],
        )  # fmt: skip
        raw.modify(metadata={**(raw.metadata or {}), "rag:layout": 2})
        del raw, client
    for old in ("rag-lexical", "rag-copy"):
        (home / old / "rag" / "tok").mkdir(parents=True)
        (home / old / "rag" / "tok" / "records.json").write_text("[]")
    with ChromaVectorStore(MODEL, path=home) as store:
        [doc] = store.get()
        assert (doc.id, doc.text, doc.metadata) == ("old", "tides flood the causeway", meta)
        assert store.count("tags CONTAINS 'sea' AND year == 2020") == 1
        assert _lexical(store, "causeway") == ["old"]
        record = store.chroma_collection.get(ids=["old"], include=["metadatas"])["metadatas"][0]
        assert not any(name.startswith(("_rag_meta", "_rag_key", "_rag_items")) for name in record)
    assert not (home / "rag-lexical" / "rag").exists() and not (home / "rag-copy" / "rag").exists()
