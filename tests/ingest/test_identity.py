"""Source identity: two folders never replace each other, one file is one source, pruning stays per
root, and a manifest written before roots existed is migrated when opened."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from ingest.chunking import chunk_id, make_chunks
from ingest.identity import RootResolver
from ingest.manifest import SCHEMA_VERSION, Manifest
from ingest.pipeline import IngestPipeline
from ingest.readers import ReaderOptions, read_file
from ingest.splitters import RecursiveSplitter
from rag import Document, HashingEmbedding
from rag.errors import StoreError
from stores import NumpyVectorStore

EMBEDDING = HashingEmbedding(64)
SPLITTER = RecursiveSplitter(40, 5)


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _pipeline(tmp: Path) -> IngestPipeline:
    store = NumpyVectorStore(EMBEDDING, path=tmp / "store")

    def flush() -> None:
        store.save()

    return IngestPipeline(store, SPLITTER, manifest=tmp / "manifest.sqlite", flush=flush)


def _by_id(pipeline: IngestPipeline) -> dict[str, set[str]]:
    """Source id -> the texts the store holds for it."""
    found: dict[str, set[str]] = {}
    for doc in pipeline.store.get():
        found.setdefault(f"{doc.metadata['root']}/{doc.metadata['source']}", set()).add(doc.text)
    return found


def test_two_folders_with_the_same_names_stay_two_sources(tmp_path: Path) -> None:
    english, spanish = tmp_path / "en", tmp_path / "es"
    _write(english, "README.md", "Read me first.")
    _write(spanish, "README.md", "Léame primero.")
    _write(english, "guide/install.md", "Install it.")
    _write(spanish, "guide/install.md", "Instálalo.")
    first = _pipeline(tmp_path).run([english])
    second = _pipeline(tmp_path).run([spanish])
    assert first.counts["new"] == second.counts["new"] == 2 and second.counts["deleted"] == 0
    pipeline = _pipeline(tmp_path)
    assert _by_id(pipeline) == {
        "en/README.md": {"Read me first."},
        "en/guide/install.md": {"Install it."},
        "es/README.md": {"Léame primero."},
        "es/guide/install.md": {"Instálalo."},
    }
    assert pipeline.manifest.roots() == {"en": os.path.realpath(english), "es": os.path.realpath(spanish)}
    # Re-running the first folder changes nothing, and deleting a file there prunes only that root.
    (english / "README.md").unlink()
    again = pipeline.run([english])
    assert again.counts["unchanged"] == 1 and [f.source_id for f in again.by_status("deleted")] == [
        "en/README.md"
    ]
    assert set(_by_id(pipeline)) == {"en/guide/install.md", "es/README.md", "es/guide/install.md"}


def test_folders_with_the_same_name_get_distinct_labels(tmp_path: Path) -> None:
    one, two = tmp_path / "a" / "docs", tmp_path / "b" / "docs"
    _write(one, "x.md", "One.")
    _write(two, "x.md", "Two.")
    pipeline = _pipeline(tmp_path)
    pipeline.run([one, two])
    assert _by_id(pipeline) == {"docs/x.md": {"One."}, "docs-2/x.md": {"Two."}}


def test_one_file_from_two_starting_paths_is_stored_once(tmp_path: Path) -> None:
    docs = tmp_path / "data" / "docs"
    install = _write(docs, "guide/install.md", "Mount the lamp.")
    _write(docs, "guide/upgrade.md", "Swap the bulb.")
    _write(docs, "tides.md", "Spring tides.")
    assert _pipeline(tmp_path).run([docs]).counts["new"] == 3
    direct = _pipeline(tmp_path).run([install])
    assert [(f.source_id, f.status) for f in direct.files] == [("docs/guide/install.md", "unchanged")]
    via_link = tmp_path / "shortcut"
    os.symlink(docs / "guide", via_link)  # the same folder under another name: the same root
    sub = _pipeline(tmp_path).run([via_link])
    assert {f.source_id for f in sub.files} == {"docs/guide/install.md", "docs/guide/upgrade.md"}
    assert sub.counts["unchanged"] == 2
    # Pruning from a subfolder stays inside it: tides.md, outside guide/, is kept.
    (docs / "guide" / "upgrade.md").unlink()
    pruned = _pipeline(tmp_path).run([docs / "guide"])
    assert [f.source_id for f in pruned.by_status("deleted")] == ["docs/guide/upgrade.md"]
    pipeline = _pipeline(tmp_path)
    assert set(_by_id(pipeline)) == {"docs/guide/install.md", "docs/tides.md"}
    assert pipeline.store.count() == 2 and list(pipeline.manifest.roots()) == ["docs"]


def test_a_folder_holding_an_earlier_root_keeps_that_roots_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _write(docs, "guide/install.md", "Mount the lamp.")
    _write(docs, "tides.md", "Spring tides.")
    _pipeline(tmp_path).run([docs / "guide"])
    report = _pipeline(tmp_path).run([docs])
    assert {(f.source_id, f.status) for f in report.files} == {
        ("guide/install.md", "unchanged"),
        ("docs/tides.md", "new"),
    }
    assert _pipeline(tmp_path).store.count() == 2


def test_resolver_innermost_root_wins(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    manifest = Manifest(":memory:")
    manifest.add_root(os.path.realpath(inner))
    manifest.add_root(os.path.realpath(outer))
    resolver = RootResolver(manifest)
    assert resolver.base(inner / "deep", folder=True).identify("a.md") == ("inner", "deep/a.md")
    base = resolver.base(outer, folder=True)
    assert base.identify("inner/a.md") == ("inner", "a.md") and base.identify("b.md") == ("outer", "b.md")
    assert base.scopes() == [("outer", ""), ("inner", "")]


_V1_SCHEMA = """
CREATE TABLE files (source TEXT PRIMARY KEY, root TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL, settings TEXT NOT NULL, chunk_ids TEXT NOT NULL,
    digests TEXT NOT NULL, pending TEXT);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _old_home(tmp: Path, docs: Path, settings_key: str, recorded: Path | None = None) -> None:
    """A store and manifest as the code before source ids wrote them: rows keyed by the relative path,
    the root's absolute path beside it, chunk ids hashed from the relative path, no `root` metadata."""
    store = NumpyVectorStore(EMBEDDING, path=tmp / "store")
    db = sqlite3.connect(tmp / "manifest.sqlite")
    db.executescript(_V1_SCHEMA)
    for path in sorted(docs.rglob("*.md")):
        rel = path.relative_to(docs).as_posix()
        units = read_file(path, root=docs, options=ReaderOptions()).units
        chunks = make_chunks(rel, units, SPLITTER)
        vectors = EMBEDDING.embed([c.text for c in chunks])
        store.add(
            [Document(c.id, c.text, c.metadata, embedding=v) for c, v in zip(chunks, vectors, strict=True)]
        )
        info = path.stat()
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        ids, digests = json.dumps([c.id for c in chunks]), json.dumps([c.digest for c in chunks])
        row = (rel, str(recorded or docs), info.st_size, info.st_mtime_ns, sha, settings_key, ids, digests)
        db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)", row)
    db.commit()
    db.close()
    store.save()


def test_an_old_manifest_is_migrated_and_its_store_stays_readable(tmp_path: Path) -> None:
    docs, other = tmp_path / "docs", tmp_path / "other"
    _write(docs, "README.md", "Old readme about the beacon.")
    _write(docs, "guide/install.md", "Old install notes.")
    _write(other, "README.md", "Another folder's readme.")
    settings_key = IngestPipeline(NumpyVectorStore(EMBEDDING), SPLITTER).legacy_settings_key
    _old_home(tmp_path, docs, settings_key)
    old_ids = {doc.id for doc in NumpyVectorStore(EMBEDDING, path=tmp_path / "store").get()}
    assert old_ids and all(len(i) == 32 for i in old_ids)

    pipeline = _pipeline(tmp_path)  # opening the manifest migrates it
    assert pipeline.manifest.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert pipeline.manifest.roots() == {"docs": str(docs)}
    assert sorted(pipeline.manifest.entries()) == ["docs/README.md", "docs/guide/install.md"]
    assert pipeline.manifest.find("README.md")[0].source == "docs/README.md"  # old chunks: no root
    report = pipeline.run([docs])
    assert report.counts["unchanged"] == 2 and report.chunks_embedded == 0
    assert {doc.id for doc in pipeline.store.get()} == old_ids  # nothing rewritten

    second = _pipeline(tmp_path).run([other])  # same relative name, another folder: kept apart
    assert second.counts["new"] == 1 and second.counts["deleted"] == 0
    texts = {doc.text for doc in _pipeline(tmp_path).store.get()}
    assert {"Old readme about the beacon.", "Another folder's readme."} <= texts

    _write(docs, "README.md", "New readme about the beacon.")  # a changed old file gets its new id
    changed = _pipeline(tmp_path)
    assert changed.run([docs]).counts["changed"] == 1
    readme = [d for d in changed.store.get() if d.metadata.get("root") == "docs"]
    assert [d.text for d in readme] == ["New readme about the beacon."]
    assert readme[0].id == chunk_id("docs/README.md", 0, readme[0].text, SPLITTER.settings_key)
    assert not old_ids & {d.id for d in readme}


def test_an_old_root_reached_through_a_link_is_the_same_root(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _write(docs, "a.md", "Alpha.")
    alias = tmp_path / "alias"
    os.symlink(docs, alias)  # the old code recorded the path as typed, links unresolved
    settings_key = IngestPipeline(NumpyVectorStore(EMBEDDING), SPLITTER).legacy_settings_key
    _old_home(tmp_path, docs, settings_key, recorded=alias)
    pipeline = _pipeline(tmp_path)
    assert pipeline.manifest.roots() == {"docs": os.path.realpath(docs)}
    report = pipeline.run([docs])
    assert report.counts["unchanged"] == 1 and report.counts["new"] == report.counts["deleted"] == 0


def test_a_manifest_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with Manifest(path) as manifest:
        manifest.set_meta("schema_version", "99")
        manifest.commit()
    with pytest.raises(StoreError, match=r"'.*m\.sqlite' has schema version 99; .* reads version 2"):
        Manifest(path)
