"""`NumpyVectorStore`: exact cosine search in numpy, vectorised metadata filters, saved to a folder.

Vectors live in one C-contiguous float32 matrix holding only live rows (a delete moves the last rows
into the holes), grown geometrically. Metadata is mirrored in numpy columns (`stores.numpy.columns`) so
a filter is a boolean mask computed without a Python loop per document; a filtered search then scores
only the selected rows. Searches are in `stores.numpy.querying` (over the kernels of
`stores.numpy.search`); saving in `stores.numpy.persist`.
A BM25 index (`stores.lexical`) over the same texts is written by the same `add` and `delete` calls
and saved in the same atomic save; lexical and hybrid modes and MMR go through `stores.ranking`.

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
from rag.text import with_context
from rag.vectorstore import AsyncStoreMixin, Capabilities
from stores.lexical.index import LexicalIndex
from stores.locking import ReadWriteLock
from stores.numpy.columns import MetadataColumns
from stores.numpy.compaction import compaction
from stores.numpy.embed import document_vectors, embed_queries
from stores.numpy.querying import StoreSearch
from stores.numpy.records import PackedRecords
from stores.numpy.rowmap import RowMap

__all__ = ["NumpyVectorStore"]

IntArray = npt.NDArray[np.int64]
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
        self._columns = MetadataColumns()
        self._id_order: IntArray | None = None  # rows sorted by id, rebuilt after a change
        self._lexical = LexicalIndex()
        self._rows = RowMap(self._lexical)  # id -> row through the index's own id map
        self._lock = ReadWriteLock()
        self._save_lock = threading.Lock()  # one save at a time: each must see the last one's generation
        self._generations: dict[str, str] = {}  # folder (absolute) -> generation this copy holds
        if self._path is not None and numpy_persist.exists(self._path):
            self._restore(numpy_persist.read(self._path, embedding.name, self._dimensions))

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
        rows = self._rows.rows_of(ids)  # `ids` are distinct
        new = rows < 0
        fresh = int(np.count_nonzero(new))
        rows[new] = np.arange(self._size, self._size + fresh)
        self._lexical.add(ids, list(map(with_context, texts, metadatas)))  # titles and headings too
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
        return self._columns.mask(tree, self._size, self._records)

    def _rows_by_id(self) -> IntArray:
        if self._id_order is None:
            ids = _object_array(self._rows.all_ids())
            self._id_order = np.argsort(ids, kind="stable").astype(np.int64)
        return self._id_order

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
            size = self._size
            texts, metadatas = self._records.all()
            snapshot = numpy_persist.Snapshot(
                self._embedding.name,
                self._dimensions,
                self._matrix[:size],
                self._rows.all_ids(),
                texts,
                metadatas,
                self._lexical,
                columns=self._columns,
            )
            expected = self._generations.get(key)
            self._generations[key] = numpy_persist.write(
                target, snapshot, expected=expected, overwrite=overwrite
            )
        return target

    @classmethod
    def load(cls, path: PathLike, embedding: EmbeddingModel, *, batch_size: int = 256) -> NumpyVectorStore:
        """Open a store saved in `path`.

        Raises:
            StoreNotFoundError: nothing is saved there.
            EmbeddingModelMismatchError: it was saved with another embedding model.
        """
        snapshot = numpy_persist.read(path, embedding.name, int(embedding.dimensions))
        store = cls(embedding, batch_size=batch_size)
        store._path = Path(path)
        store._restore(snapshot)
        return store

    def _restore(self, snapshot: numpy_persist.Snapshot) -> None:
        if self._path is not None and snapshot.generation is not None:
            self._generations[os.path.abspath(self._path)] = snapshot.generation  # what save() expects
        self._matrix = np.ascontiguousarray(snapshot.vectors, dtype=np.float32)
        count = len(self._matrix)
        if len(set(snapshot.ids)) != count:
            raise StoreError(f"the saved store in {str(self._path)!r} repeats document ids")
        self._size = count
        every_row = np.arange(count, dtype=np.int64)
        self._records = PackedRecords()
        self._records.write_parts(every_row, snapshot.texts, snapshot.metadatas)
        # Columns saved with the folder load as they are; an older or damaged save encodes them again.
        columns = snapshot.columns
        if columns is None:
            columns = MetadataColumns()
            columns.write(every_row, snapshot.metadatas)
        self._columns = columns
        self._id_order = None
        # A save from before the lexical index (or of another tokenizer) gains one from its texts.
        self._lexical = snapshot.lexical or LexicalIndex()
        if snapshot.lexical is None:
            self._lexical.add(snapshot.ids, list(map(with_context, snapshot.texts, snapshot.metadatas)))
        self._rows = RowMap(self._lexical)
        self._rows.relink(snapshot.ids)
