"""The Chroma store's lexical index: saved beside the collection, rebuilt when stale, shared via a token."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.lexical import FOLDER, STATE_KEY
from stores.lexical.persist import MANIFEST

MODEL = HashingEmbedding(dimensions=64)
DOCS = [
    Document("a", "BM25 ranks by term statistics", {"lang": "en"}),
    Document("b", "dense vectors and sparse terms", {"lang": "en"}),
    Document("c", "terms terms terms", {"lang": "nl"}),
]
LEXICAL = SearchRequest("terms", top_k=5, mode="lexical")


def _ids(store: Any, request: SearchRequest = LEXICAL) -> list[str]:
    return [doc.id for doc in store.similarity_search(request)]


def _expected(docs: list[Document], request: SearchRequest = LEXICAL) -> list[tuple[str, float | None]]:
    reference = NumpyVectorStore(MODEL)
    reference.add(docs)
    return [(doc.id, doc.score) for doc in reference.similarity_search(request)]


def _hits(store: ChromaVectorStore, request: SearchRequest = LEXICAL) -> list[tuple[str, float | None]]:
    return [(doc.id, doc.score) for doc in store.similarity_search(request)]


def _saved_tokens(path: Path, collection: str) -> list[str]:
    root = path / FOLDER / collection
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file()) if root.is_dir() else []


def test_index_is_saved_under_the_collection_state_and_loaded_again(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        store.add(DOCS)
        token = store.chroma_collection.metadata[STATE_KEY]
    assert _saved_tokens(tmp_path, "docs") == [token]
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as again:
        assert _hits(again) == _expected(DOCS)
        assert again._lexical.rebuilds == 0  # loaded, not rebuilt
        again.delete(["c"])
        again.flush()
        assert _saved_tokens(tmp_path, "docs") == [again.chroma_collection.metadata[STATE_KEY]]
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as third:
        assert _hits(third) == _expected(DOCS[:2]) and third._lexical.rebuilds == 0


def _run(code: str, path: Path) -> None:
    script = textwrap.dedent(f"""
        import os
        from rag import Document
        from rag.embeddings import HashingEmbedding
        from stores import ChromaVectorStore
        store = ChromaVectorStore(HashingEmbedding(dimensions=64), collection="docs", path={str(path)!r})
    """) + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=120)


def test_index_survives_a_process_exit_without_close(tmp_path: Path) -> None:
    _run("store.add([Document('x', 'terms of use'), Document('y', 'nothing here')])\n", tmp_path)
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        assert _ids(store) == ["x"] and store._lexical.rebuilds == 0


def test_a_crash_between_write_and_save_is_detected_and_rebuilt(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        store.add(DOCS)
    # os._exit skips every finalizer: the records reach Chroma, the index save never happens.
    _run("store.add([Document('d', 'terms and terms')]); store.delete(['a']); os._exit(0)\n", tmp_path)
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as again:
        expected = _expected([*DOCS[1:], Document("d", "terms and terms")])
        assert _hits(again) == expected and again._lexical.rebuilds == 1
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as third:
        assert _hits(third) == expected and third._lexical.rebuilds == 0  # the rebuilt index was saved


def test_collection_written_by_raw_chromadb_gains_an_index_without_embedding(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client: Any = chromadb.PersistentClient(path=str(tmp_path), settings=Settings(anonymized_telemetry=False))
    metadata = {"rag:embedding_model": MODEL.name, "rag:dimensions": MODEL.dimensions}
    space = {"hnsw": {"space": "ip"}}
    raw = client.create_collection("docs", embedding_function=None, metadata=metadata, configuration=space)
    vectors = MODEL.embed([doc.text for doc in DOCS])
    raw.add(ids=[d.id for d in DOCS], embeddings=vectors, documents=[d.text for d in DOCS])
    with ChromaVectorStore(_NoEmbedding(), collection="docs", client=client) as store:
        assert _ids(store) == [i for i, _ in _expected(DOCS)]  # built in memory from the stored texts
    client.close()
    with ChromaVectorStore(_NoEmbedding(), collection="docs", path=tmp_path) as store:
        assert _ids(store) == [i for i, _ in _expected(DOCS)] and store._lexical.rebuilds == 1
    assert len(_saved_tokens(tmp_path, "docs")) == 1


class _NoEmbedding:
    """The test model's name and size, refusing to embed documents (queries are allowed)."""

    name = MODEL.name
    dimensions = MODEL.dimensions

    def embed(self, texts: Any) -> Any:
        assert texts == ["terms"], f"unexpected embedding of {texts!r}"
        return MODEL.embed(texts)


def test_deleted_index_folder_and_raw_deletes_are_rebuilt(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        store.add(DOCS)
    shutil.rmtree(tmp_path / FOLDER)
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        assert _hits(store) == _expected(DOCS) and store._lexical.rebuilds == 1
        store.chroma_collection.delete(ids=["c"])  # behind the store's back: the token stays
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        assert _hits(store) == _expected(DOCS[:2]) and store._lexical.rebuilds == 1  # the count differs


def test_index_of_another_tokenizer_is_rebuilt(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        store.add(DOCS)
    [token] = _saved_tokens(tmp_path, "docs")
    manifest = tmp_path / FOLDER / "docs" / token / MANIFEST
    saved = json.loads(manifest.read_text())
    saved["settings"]["tokenizer"] = "some-older-analysis"
    manifest.write_text(json.dumps(saved))
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        assert _hits(store) == _expected(DOCS) and store._lexical.rebuilds == 1


def test_a_failed_write_drops_the_index_until_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    with ChromaVectorStore(MODEL, collection="docs") as store:
        store.add(DOCS)
        assert _hits(store) == _expected(DOCS) and store._lexical.rebuilds == 1  # built on first need

        def fail(**_: Any) -> None:
            raise RuntimeError("disk full")

        monkeypatch.setattr(store.chroma_collection, "upsert", fail)
        with pytest.raises(Exception, match="disk full"):
            store.add([Document("d", "terms")])
        monkeypatch.undo()
        assert _hits(store) == _expected(DOCS) and store._lexical.rebuilds == 2


@pytest.mark.server
def test_server_stores_see_each_others_writes(chroma_server: str) -> None:
    with (
        ChromaVectorStore(MODEL, collection="shared-lexical", url=chroma_server) as first,
        ChromaVectorStore(MODEL, collection="shared-lexical", url=chroma_server) as second,
    ):
        try:
            first.add(DOCS)
            assert _hits(second) == _expected(DOCS)  # built from the collection on first need
            first.add([Document("d", "terms, terms and terms")])
            first.delete(["c"])
            expected = _expected([*DOCS[:2], Document("d", "terms, terms and terms")])
            assert _hits(second) == expected and second._lexical.rebuilds == 2  # the token moved on
            second.add([Document("e", "terms")])
            hybrid = SearchRequest("terms", top_k=5, mode="hybrid")
            everything = [*DOCS[:2], Document("d", "terms, terms and terms"), Document("e", "terms")]
            assert _hits(first, hybrid) == _expected(everything, hybrid)
        finally:
            first.chroma_client.delete_collection("shared-lexical")


def test_a_rebuilt_index_holds_titles_and_headings(tmp_path: Path) -> None:
    titled = Document("sec", "Declare the type.", {"title": "Guide", "headings": ["Validators"]})
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        store.add([*DOCS, titled])
    shutil.rmtree(tmp_path / FOLDER)  # as after an older version's index: rebuilt from Chroma's records
    with ChromaVectorStore(MODEL, collection="docs", path=tmp_path) as store:
        request = SearchRequest("validators guide", top_k=5, mode="lexical")
        assert _hits(store, request) == _expected([*DOCS, titled], request)
        assert _ids(store, request) == ["sec"] and store._lexical.rebuilds == 1
