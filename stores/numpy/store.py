"""`NumpyVectorStore`: exact cosine search in numpy, vectorised metadata filters, saved to a folder.

Vectors live in one C-contiguous float32 matrix holding only live rows (a delete moves the last rows
into the holes), grown geometrically. Metadata is mirrored in numpy columns (`stores.numpy.columns`) so
a filter is a boolean mask computed without a Python loop per document; a filtered search then scores
only the selected rows. Searches are in `stores.numpy.querying` (over the kernels of
`stores.numpy.search`); saving in `stores.numpy.persist`.
A BM25 index (`stores.lexical`) over the same texts is written by the same `add` and `delete` calls
and saved in the same atomic save; lexical and hybrid modes and MMR go through `stores.ranking`.

Opening a saved folder maps its files and decodes nothing (`stores.numpy.opening`): the matrix and
the records are views of the mapped files, ids are looked up in the save's own tables
(`stores.numpy.saved_ids`), and the filter columns and the BM25 index load at their first use. Every
read checks the saved blocks it touches. The first write checks the rest and loads every part; from
then on the store works as one built in memory (the mappings are copy-on-write: the files never change).

Memory: beside the vectors the store holds no Python object per document. Texts and metadata are
packed records (`stores.numpy.records`); ids live once, packed, in the BM25 index, whose id map the
store reads through `stores.numpy.rowmap` (which holds no array while both number rows alike). For
100k chunks of ~40 words that is about 1.31x the raw float32 bytes in all (resident; 1.28x by
tracemalloc), of which vectors and texts alone are 1.21x (`benchmarks/numpy_speed.py`;
docs/exactness.md has the breakdown).

Threads: one `stores.locking.ReadWriteLock` guards the matrix, the records, the row map and the BM25
index together. Searches, `get` and `count` hold it for reading (they run together), `add` and
`delete` for writing (alone), so every call sees the state between two writes, vectors, metadata and
lexical index of the same generation. Embedding happens before the lock is taken.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import stores.numpy.persist as numpy_persist
from rag.documents import Document, MetadataValue
from rag.embeddings import EmbeddingModel
from rag.errors import InvalidRequestError, StoreError
from rag.filters import Filter, as_filter
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import AsyncStoreMixin, Capabilities
from stores.lexical.index import LexicalIndex
from stores.locking import ReadWriteLock
from stores.numpy.columns import MetadataColumns
from stores.numpy.compaction import compaction
from stores.numpy.embed import document_vectors, embed_queries
from stores.numpy.legacy import read_legacy
from stores.numpy.opening import SaveParts
from stores.numpy.querying import StoreSearch
from stores.numpy.records import PackedRecords
from stores.numpy.rowmap import RowMap
from stores.numpy.saved_ids import SavedIds

__all__ = ["NumpyVectorStore"]

IntArray = npt.NDArray[np.int64]
_log = logging.getLogger(__name__)
PathLike = str | os.PathLike[str]


def _object_array(values: Sequence[Any]) -> npt.NDArray[np.object_]:
    array = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element by element: numpy would unpack nested lists
        array[i] = value
    return array


class NumpyVectorStore(StoreSearch, GetMixin, AsyncStoreMixin):
    """A vector store in process memory: exact search, upsert by id, filters, atomic save to a folder.

    Safe to share between threads: searches run side by side, each write runs alone, and every call
    sees the store as some serial order of the writes left it. Across processes, many may load one
    folder, saves to it are serialised by a lock file, and a save from a copy that is older than the
    folder's current save raises `StoreError` instead of overwriting it (`save(overwrite=True)` forces).

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("1", "numpy keeps vectors in memory", {"lang": "en"})])
        >>> [d.id for d in store.similarity_search("vectors in memory")]
        ['1']
        >>> store.count("lang == 'en'"), store.delete(["1"]), store.count()
        (1, 1, 0)

    Args:
        embedding: Embeds documents that arrive without an embedding, and queries.
        batch_size: How many texts go to `embedding.embed` at once.
        path: A folder to load from when it holds a saved store, and the default target of `save()`.
    """

    kind = "numpy"
    """The store's name in the CLI (`--store numpy`), in a home's records and in traces."""
    capabilities = Capabilities(exact=True, lexical=True)

    def __init__(
        self, embedding: EmbeddingModel, *, batch_size: int = 256, path: PathLike | None = None
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidRequestError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self._embedding = embedding
        self._dimensions = int(embedding.dimensions)
        self._batch_size = batch_size
        self._path = Path(path) if path is not None else None
        self._size = 0
        self._matrix = np.zeros((0, self._dimensions), np.float32)
        self._records = PackedRecords()  # texts and metadata, packed (stores.numpy.records)
        self._columns: MetadataColumns | None = MetadataColumns()  # None: in the save, not loaded yet
        self._id_order: IntArray | None = None  # rows sorted by id, rebuilt after a change
        self._lexical: LexicalIndex | None = LexicalIndex()  # None: in the save, not loaded yet
        self._rows: RowMap | SavedIds = RowMap(self._lexical)  # id <-> row (the index's id map)
        self._saved: SaveParts | None = None  # the save this store reads from until its first write
        self._load_lock = threading.Lock()  # loads a part of the save once, whichever reader comes first
        self._lock = ReadWriteLock()
        self._save_lock = threading.Lock()  # one save at a time: each must see the last one's generation
        self._generations: dict[str, str] = {}  # folder (absolute) -> generation this copy holds
        if self._path is not None and numpy_persist.exists(self._path):
            self._open(self._path)

    @property
    def embedding(self) -> EmbeddingModel:
        """The model that embeds documents and queries for this store."""
        return self._embedding

    @property
    def path(self) -> Path | None:
        """The folder `save()` writes to by default, if one was given."""
        return self._path

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"NumpyVectorStore({self._embedding.name!r}, count={self._size})"

    # -- writing ---------------------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins). Nothing is written if any is bad."""
        latest: dict[str, Document] = {}
        for document in documents:
            if not isinstance(document, Document):
                raise InvalidRequestError(f"add() takes Document objects, got {document!r}")
            latest[document.id] = document
        if not latest:
            return
        batch = list(latest.values())
        vectors = self._vectors_for(batch)
        metadatas = [d.metadata for d in batch]  # packed on write: later changes to them do not leak in
        with self._lock.write():
            self._materialise()
            self._write([d.id for d in batch], [d.text for d in batch], metadatas, vectors)

    def _vectors_for(self, documents: list[Document]) -> npt.NDArray[np.float32]:
        return document_vectors(documents, self._embedding, self._batch_size)

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return embed_queries(self._embedding, texts)

    def _reserve(self, size: int) -> None:
        """Room for `size` rows; capacity grows by half so appends cost amortised O(1)."""
        capacity = len(self._matrix)
        if size <= capacity:
            return
        self._resize(max(size, capacity * 3 // 2, 64))

    def _resize(self, capacity: int) -> None:
        live = self._size
        # np.empty leaves the spare rows untouched, so they take no resident memory until written.
        matrix = np.empty((capacity, self._dimensions), np.float32)
        matrix[:live] = self._matrix[:live]
        self._matrix = matrix

    def _write(
        self,
        ids: list[str],
        texts: list[str],
        metadatas: list[dict[str, MetadataValue]],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        assert self._lexical is not None and self._columns is not None and isinstance(self._rows, RowMap)
        rows = self._rows.rows_of(ids)  # `ids` are distinct
        new = rows < 0
        fresh = int(np.count_nonzero(new))
        rows[new] = np.arange(self._size, self._size + fresh)
        self._lexical.add(ids, texts, metadatas)  # titles, headings, path and language too
        self._reserve(self._size + fresh)
        replaced = rows[~new]
        self._columns.clear(replaced, [self._records.metadata(row) for row in replaced.tolist()])
        self._size += fresh
        self._matrix[rows] = vectors
        self._records.write_parts(rows, texts, metadatas)  # no tuple per record: see records.py
        self._columns.write(rows, metadatas)
        self._id_order = None
        self._rows.sync()  # the index may have renumbered its rows
        self._rows.link(rows, ids)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids (unknown ones ignored) or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes either ids or filter=..., not both and not neither")
        wanted = unique_ids(ids) if ids is not None else None
        tree = as_filter(filter)
        with self._lock.write():
            self._materialise()
            if wanted is not None:
                rows = np.unique(self._rows.rows_of(wanted))
                rows = rows[rows >= 0]
            else:
                rows = np.flatnonzero(self._mask(tree))
            self._remove(rows)
        return len(rows)

    def _remove(self, rows: IntArray) -> None:
        """Remove `rows`, moving the last live rows into the holes so every row stays live."""
        if not len(rows):
            return
        assert self._lexical is not None and self._columns is not None and isinstance(self._rows, RowMap)
        dead, holes, tails, new_size = compaction(self._size, rows)
        self._lexical.delete(self._rows.ids_of(rows.tolist()))
        self._matrix[holes] = self._matrix[tails]
        self._records.remove(rows, holes, tails, new_size)
        self._columns.remove(holes, tails, dead, new_size)
        self._size = new_size
        self._rows.sync()
        self._rows.move(holes, tails, new_size)
        self._id_order = None
        if len(self._matrix) > 2 * max(new_size, 1024):
            self._resize(max(new_size + new_size // 4, 64))  # give memory back after large deletes

    # -- reading ---------------------------------------------------------------------------------

    def _mask(self, tree: Filter | None) -> npt.NDArray[np.bool_]:
        if tree is None:
            return np.ones(self._size, np.bool_)
        return self._loaded_columns().mask(tree, self._size, self._records)

    def _rows_by_id(self) -> IntArray:
        if self._id_order is None:
            if isinstance(self._rows, SavedIds):
                self._id_order = self._rows.order()
            else:
                ids = _object_array(self._rows.all_ids())
                self._id_order = np.argsort(ids, kind="stable").astype(np.int64)
        return self._id_order

    # -- the parts of a save loaded on first use -------------------------------------------------

    def _loaded_columns(self) -> MetadataColumns:
        """The filter columns, loaded from the save at the first filtered request."""
        columns = self._columns
        if columns is None:
            with self._load_lock:
                if self._columns is None:
                    assert self._saved is not None
                    self._columns = self._saved.columns(self._records, self._size)
                columns = self._columns
        return columns

    def _loaded_lexical(self) -> LexicalIndex:
        """The BM25 index, loaded from the save at the first lexical or hybrid search (or write)."""
        lexical = self._lexical
        if lexical is None:
            with self._load_lock:
                if self._lexical is None:
                    assert self._saved is not None
                    ids = self._rows.all_ids()
                    index = self._saved.lexical(ids, self._records)
                    rows = RowMap(index)
                    rows.relink(ids)
                    self._rows = rows  # the same ids by row, now through the index's id map
                    self._lexical = index
                lexical = self._lexical
        return lexical

    def _check_vectors(self) -> None:
        """Check the saved vectors (once) before anything reads them."""
        saved = self._saved
        if saved is not None:
            saved.check_vectors()

    def _materialise(self) -> None:
        """Before the first write after opening a save: check all of it and load every part."""
        if self._saved is None:
            return
        self._saved.check_all()
        self._loaded_lexical()
        self._loaded_columns()
        self._records.check_all()
        self._saved = None

    def _documents(
        self,
        rows: Sequence[int],
        scores: Sequence[float] | None = None,
        with_embedding: bool = False,
        ids: Sequence[str] | None = None,
    ) -> list[Document]:
        """The documents of `rows` (ids, unless given, and records decoded in one pass each), with
        `scores` if given."""
        ids = self._rows.ids_of(rows) if ids is None else ids
        records = self._records.read_many(rows)
        matrix = self._matrix
        if with_embedding:
            self._check_vectors()
        # Records were checked when added and `read_many` decodes them fresh: no need to check again.
        return [
            Document._trusted(
                doc_id,
                text,
                metadata,
                None if scores is None else scores[i],
                matrix[row] if with_embedding else None,
            )
            for i, (row, doc_id, (text, metadata)) in enumerate(zip(rows, ids, records, strict=True))
        ]

    def _get_documents(self, request: GetRequest) -> list[Document]:
        wanted = None if request.ids is None else dict.fromkeys(request.ids)
        with self._lock.read():
            return self._get(wanted, request.filter, request.limit, request.include_embeddings)

    def _get(
        self, wanted: dict[str, None] | None, tree: Filter | None, limit: int | None, with_embedding: bool
    ) -> list[Document]:
        if wanted is not None:
            rows = self._rows.rows_of(list(wanted))
            rows = rows[rows >= 0]
        else:
            rows = self._rows_by_id()
        if tree is not None:
            rows = rows[self._mask(tree)[rows]]
        return self._documents(rows[:limit].tolist(), with_embedding=with_embedding)

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        tree = as_filter(filter)
        with self._lock.read():
            return self._size if tree is None else int(np.count_nonzero(self._mask(tree)))

    # -- persistence -----------------------------------------------------------------------------

    def save(self, path: PathLike | None = None, *, overwrite: bool = False) -> Path:
        """Write the store to the folder `path` (default: the constructor's `path`) atomically.

        A crash mid-save leaves the previous save loadable. Searches go on during a save; writes wait.
        A save copies nothing it has not checked: a damaged saved file raises `StoreError` instead.
        The folder must still hold the save this copy was loaded from or last wrote there (or none):
        if another process or store object saved there since, nothing is written and `StoreError`
        says so, because this copy lacks that save's changes. `overwrite=True` replaces it anyway.
        Returns the folder.
        """
        target = Path(path) if path is not None else self._path
        if target is None:
            raise InvalidRequestError("save() needs a path: none was given here or to the constructor")
        key = os.path.abspath(target)
        with self._save_lock, self._lock.read():
            if self._saved is not None:
                self._saved.check_all()  # a save never copies damage into a generation of its own
            contents = numpy_persist.Contents(
                self._embedding.name,
                self._dimensions,
                self._matrix[: self._size],
                self._records,
                self._rows.all_ids(),
                self._rows_by_id(),
                self._loaded_lexical(),
                self._loaded_columns(),
            )
            expected = self._generations.get(key)
            self._generations[key] = numpy_persist.write(
                target, contents, expected=expected, overwrite=overwrite
            )
        return target

    @classmethod
    def load(cls, path: PathLike, embedding: EmbeddingModel, *, batch_size: int = 256) -> NumpyVectorStore:
        """Open a store saved in `path`.

        Raises:
            StoreNotFoundError: nothing is saved there.
            EmbeddingModelMismatchError: it was saved with another embedding model.
        """
        folder = Path(path)
        if not numpy_persist.exists(folder):
            numpy_persist.read_manifest(folder)  # raises StoreNotFoundError naming the folder
        return cls(embedding, batch_size=batch_size, path=folder)

    def _open(self, folder: Path) -> None:
        """Read the save in `folder`: mapped in place, or, for the first format, read and saved anew."""
        if numpy_persist.is_legacy(folder):
            self._migrate(folder)
            return
        saved = SaveParts(numpy_persist.open_save(folder, self._embedding.name, self._dimensions))
        self._generations[os.path.abspath(folder)] = saved.generation  # what save() expects
        self._saved = saved
        self._matrix = saved.vectors()
        self._size = len(self._matrix)
        self._records = saved.records()
        self._rows = saved.ids()
        self._columns = None
        self._lexical = None

    def _migrate(self, folder: Path) -> None:
        """Read a save of the first format and write it again in the current one (when the folder
        can be written; otherwise the store works from memory and its next save converts it)."""
        old = read_legacy(folder, self._embedding.name, self._dimensions)
        self._generations[os.path.abspath(folder)] = old.generation
        with self._lock.write():
            self._write(old.ids, old.texts, old.metadatas, np.ascontiguousarray(old.vectors, np.float32))
        try:
            self.save(folder)
        except StoreError as exc:
            _log.warning("the store in %r keeps the first format until it can be saved: %s", str(folder), exc)
