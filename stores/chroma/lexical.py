"""The BM25 index kept beside a Chroma collection: the one thing this store keeps outside Chroma.

Its contract (docs/stores.md): it reflects the writes made through this toolkit; `reindex()` rebuilds
it from the collection and `lexical_current()` says whether it holds exactly the collection's ids. An
embedded store saves it in `<folder>/rag-bm25/<collection>/` on `close()` or `flush()`; the first write
after a save leaves a `dirty` mark there until the next save, so after a crash, or when the save does
not load, the next open rebuilds the index from the collection. A server or in-process store without
`index_path` builds it in memory at its first lexical request.

Example:
    >>> index = BesideIndex(None, lambda: iter([(["a"], ["Tides flood the causeway."], [{}])]))
    >>> [doc_id for doc_id, _ in index.current().search("causeway", top_k=3)]
    ['a']
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag.errors import RagError
from stores.lexical import LexicalIndex

__all__ = ["FOLDER", "OLD_FOLDERS", "BesideIndex", "Texts"]

FOLDER = "rag-bm25"
OLD_FOLDERS = ("rag-lexical", "rag-copy")
"""Folders of earlier versions beside an embedded collection (its index and its exact copy)."""
_DIRTY = "dirty"
_SAVE = "index"

Texts = Callable[[], Iterator[tuple[list[str], list[str], list[Mapping[str, Any]]]]]
"""Every record of the collection, a page at a time: ids, texts and metadata."""


class BesideIndex:
    """A `LexicalIndex` of a collection's texts (with titles and headings), loaded, saved, rebuilt.

    Callers hold the store's lock: `prepare` and the update after the write under its write side;
    `current` may run in several readers at once and builds the index once.
    """

    def __init__(self, folder: Path | None, texts: Texts | None = None) -> None:
        self._folder = folder
        self.users = 0
        """How many open stores share this index."""
        self.texts = texts
        """Where a build reads the collection from (set by each store that opens the collection)."""
        self._index: LexicalIndex | None = None
        self._unsaved = False
        self._mutex = threading.Lock()

    def current(self) -> LexicalIndex:
        """The index, loaded from its save or built from the collection on first use."""
        with self._mutex:
            if self._index is None:
                loaded = self._load()
                self._index = loaded if loaded is not None else self._build()
            return self._index

    def _load(self) -> LexicalIndex | None:
        if self._folder is None or (self._folder / _DIRTY).exists():
            return None
        try:
            return LexicalIndex.load(self._folder / _SAVE)
        except RagError:
            return None  # missing, damaged or another tokenizer's: rebuilt, never answered from

    def _build(self) -> LexicalIndex:
        index = LexicalIndex()
        assert self.texts is not None, "a store sets `texts` before the index is used"
        for ids, texts, metadatas in self.texts():
            index.add(ids, list(texts), list(metadatas))
        self._changed()
        return index

    def _changed(self) -> None:
        if self._folder is not None and not self._unsaved:
            self._folder.mkdir(parents=True, exist_ok=True)
            (self._folder / _DIRTY).touch()
        self._unsaved = True

    def prepare(self) -> LexicalIndex | None:
        """Before a write to the collection: the index to update after it, loaded or built now (so the
        write is not read back and indexed twice), its save marked stale (so a crash during the write
        leaves the mark); None while an in-memory index is unbuilt (its build will see the write)."""
        if self._index is None and self._folder is None:
            return None
        index = self.current()
        self._changed()
        return index

    def rebuild(self) -> None:
        """Build the index afresh from the collection, and save it."""
        with self._mutex:
            self._index = self._build()
        self.save()

    def save(self) -> None:
        """Save an embedded store's index if it changed since its last save."""
        with self._mutex:
            if self._folder is None or self._index is None or not self._unsaved:
                return
            self._index.save(self._folder / _SAVE)
            (self._folder / _DIRTY).unlink(missing_ok=True)
            self._unsaved = False


def remove_old_files(home: Path, collection: str) -> None:
    """Delete what earlier versions kept beside an embedded collection (its index and exact copy)."""
    for name in OLD_FOLDERS:
        shutil.rmtree(home / name / collection, ignore_errors=True)
