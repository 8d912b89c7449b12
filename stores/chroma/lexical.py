"""The BM25 index kept beside a Chroma collection: the one thing this store keeps outside Chroma.

It reflects the writes made through this toolkit (docs/stores.md). An embedded store saves it in
`<folder>/rag-bm25/<collection>/` on `close()` or `flush()`; the first write after a save leaves a
`dirty` mark there until the next save, so after a crash, or when the save does not load, the next
open rebuilds the index from the collection. Without a folder it is built in memory at first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag.errors import RagError
from stores.lexical import LexicalIndex
from stores.locking import ReadWriteLock

__all__ = ["FOLDER", "BesideIndex", "Texts"]

FOLDER = "rag-bm25"
_DIRTY = "dirty"
_SAVE = "index"

Texts = Callable[[], Iterator[tuple[list[str], list[str], list[Mapping[str, Any]]]]]
"""Every record of the collection, a page at a time: ids, texts and metadata."""


class BesideIndex:
    """A `LexicalIndex` of a collection's texts, loaded, saved, rebuilt, and the lock of its stores.

    Callers hold `lock`: `prepare` and the update after the write under its write side; `current`
    may run in several readers at once and builds the index once.

    Example:
        >>> index = BesideIndex(None, lambda: iter([(["a"], ["Tides flood the causeway."], [{}])]))
        >>> [doc_id for doc_id, _ in index.current().search("causeway", top_k=3)]
        ['a']
    """

    def __init__(self, folder: Path | None, texts: Texts | None = None) -> None:
        self._folder = folder
        self.texts = texts
        """Where a build reads the collection from (set by each store that opens the collection)."""
        self.users = 0
        """How many open stores share this index."""
        self.lock = ReadWriteLock()
        """The lock every store of this collection in this process holds while it reads or writes."""
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
            index.add(ids, texts, metadatas)
        self._changed()
        return index

    def _changed(self) -> None:
        if self._folder is not None and not self._unsaved:
            self._folder.mkdir(parents=True, exist_ok=True)
            (self._folder / _DIRTY).touch()
        self._unsaved = True

    def prepare(self) -> LexicalIndex | None:
        """Before a write: the index to update after it, loaded or built now and its save marked stale
        (a crash during the write leaves the mark); None while an in-memory index is unbuilt."""
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
