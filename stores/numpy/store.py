"""`NumpyVectorStore`: exact cosine search in numpy, vectorised metadata filters, saved to a folder.

One float32 matrix of live rows, packed `records`, metadata `columns` and a BM25 index that keeps
the ids (`rowmap`); a save opens mapped (`persist`). One `ReadWriteLock` guards the state: reads
share it, `add` and `delete` hold it alone; embedding happens outside it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rag.documents import Document, MetadataValue, SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import InvalidRequestError, StoreError
from rag.filters import Filter, as_filter
from rag.retrieval.ranking import needs_ranking
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import AsyncStoreMixin, Capabilities
from stores.lexical.index import LexicalIndex
from stores.locking import ReadWriteLock
from stores.numpy import persist
from stores.numpy.columns import MetadataColumns
from stores.numpy.embed import document_vectors, embed_queries
from stores.numpy.files import SavedIds
from stores.numpy.records import PackedRecords
from stores.numpy.rowmap import RowMap
from stores.numpy.search import NumpyCandidates, top_rows
from stores.query_vector import given_vector

__all__ = ["NumpyVectorStore"]

IntArray = npt.NDArray[np.int64]
_log = logging.getLogger(__name__)
PathLike = str | os.PathLike[str]
Metadata = dict[str, MetadataValue]


class NumpyVectorStore(GetMixin, AsyncStoreMixin):
    """A vector store in process memory: exact search, upsert by id, filters, atomic save to a folder.

    Safe to share between threads. Across processes, many may load one folder; saves to it are
    serialised by a lock file, and a save from a copy older than the folder's current save raises
    `StoreError` instead of overwriting it (`save(overwrite=True)` forces).

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
    capabilities = Capabilities(exact=True, lexical=True)

    def __init__(
        self, embedding: EmbeddingModel, *, batch_size: int = 256, path: PathLike | None = None
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidRequestError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.embedding = embedding
        self._dimensions = int(embedding.dimensions)
        self._batch_size = batch_size
        self.path = Path(path) if path is not None else None
        self._size = 0
        self._matrix = np.zeros((0, self._dimensions), np.float32)  # live rows, then spare capacity
        self._records = PackedRecords()
        self._columns: MetadataColumns | None = MetadataColumns()  # None: in the save, not loaded yet
        self._id_order: IntArray | None = None  # rows sorted by id, rebuilt after a change
        self._lexical: LexicalIndex | None = LexicalIndex()  # None: in the save, not loaded yet
        self._rows: RowMap | SavedIds = RowMap(self._lexical)
        self._saved: persist.Saved | None = None  # the save this store reads from until its first write
        self._load_lock = threading.Lock()  # loads a part of the save once, whichever reader comes first
        self._lock = ReadWriteLock()
        self._save_lock = threading.Lock()  # one save at a time: each must see the last one's generation
        self._generations: dict[str, str] = {}  # folder (absolute) -> generation this copy holds
        if self.path is not None and persist.exists(self.path):
            self._open(self.path)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"NumpyVectorStore({self.embedding.name!r}, count={self._size})"

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins); nothing is written if any is bad."""
        latest: dict[str, Document] = {}
        for document in documents:
            if not isinstance(document, Document):
                raise InvalidRequestError(f"add() takes Document objects, got {document!r}")
            latest[document.id] = document
        if not latest:
            return
        batch = list(latest.values())
        vectors = document_vectors(batch, self.embedding, self._batch_size)
        with self._lock.write():
            self._materialise()
            self._write([d.id for d in batch], [d.text for d in batch], [d.metadata for d in batch], vectors)

    def _resize(self, capacity: int) -> None:
        # np.empty leaves the spare rows untouched, so they take no resident memory until written.
        matrix = np.empty((capacity, self._dimensions), np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        self._matrix = matrix

    def _write(
        self, ids: list[str], texts: list[str], metadatas: list[Metadata], vectors: npt.NDArray[np.float32]
    ) -> None:
        assert self._lexical is not None and self._columns is not None and isinstance(self._rows, RowMap)
        rows = self._rows.rows_of(ids)  # `ids` are distinct
        new = rows < 0
        fresh = int(np.count_nonzero(new))
        rows[new] = np.arange(self._size, self._size + fresh)
        self._lexical.add(ids, texts, metadatas)  # titles, headings, path and language too
        if self._size + fresh > len(self._matrix):  # grow by half: appends cost amortised O(1)
            self._resize(max(self._size + fresh, len(self._matrix) * 3 // 2, 64))
        replaced = rows[~new]
        self._columns.clear(
            replaced, [metadata for _, metadata in self._records.read_many(replaced.tolist())]
        )
        self._size += fresh
        self._matrix[rows] = vectors
        self._records.write(rows, texts, metadatas)
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
            if len(rows):
                self._remove(rows)
        return len(rows)

    def _remove(self, rows: IntArray) -> None:
        assert self._lexical is not None and self._columns is not None and isinstance(self._rows, RowMap)
        new_size = self._size - len(rows)
        dead = np.zeros(self._size, np.bool_)
        dead[rows] = True
        holes = np.flatnonzero(dead[:new_size])
        tails = new_size + np.flatnonzero(~dead[new_size:])
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

    def _mask(self, tree: Filter | None) -> npt.NDArray[np.bool_]:
        if tree is None:
            return np.ones(self._size, np.bool_)
        return self._loaded_columns().mask(tree, self._size, self._records.metadata)

    def _rows_by_id(self) -> IntArray:
        if self._id_order is None:
            if isinstance(self._rows, SavedIds):
                self._id_order = self._rows.order()
            else:
                ids = np.empty(self._size, dtype=object)
                ids[:] = self._rows.all_ids()
                self._id_order = np.argsort(ids, kind="stable").astype(np.int64)
        return self._id_order

    def _loaded_columns(self) -> MetadataColumns:
        if self._columns is None:
            with self._load_lock:
                if self._columns is None:
                    assert self._saved is not None
                    self._columns = self._saved.columns()
        return self._columns

    def _loaded_lexical(self) -> LexicalIndex:
        if self._lexical is None:
            with self._load_lock:
                if self._lexical is None:
                    assert self._saved is not None
                    index, ids = self._saved.lexical()
                    self._rows = RowMap(index, ids)  # the same ids by row, now through the index's id map
                    self._lexical = index
        return self._lexical

    def _materialise(self) -> None:
        if self._saved is not None:
            self._saved.check_all()
            self._loaded_lexical()
            self._loaded_columns()
            self._records.check_all()
            self._saved = None

    def _documents(
        self, rows: list[int], scores: list[float] | None = None, embeddings: bool = False
    ) -> list[Document]:
        if embeddings and self._saved is not None:
            self._saved.vectors.check_all()
        ids, records = self._rows.ids_of(rows), self._records.read_many(rows)
        return [
            Document._trusted(
                ids[i],
                text,
                metadata,
                None if scores is None else scores[i],
                self._matrix[row] if embeddings else None,
            )
            for i, (row, (text, metadata)) in enumerate(zip(rows, records, strict=True))
        ]

    def _get_documents(self, request: GetRequest) -> list[Document]:
        with self._lock.read():
            if request.ids is not None:
                rows = self._rows.rows_of(list(request.ids))  # distinct (`GetRequest`)
                rows = rows[rows >= 0]
            else:
                rows = self._rows_by_id()
            if request.filter is not None:
                rows = rows[self._mask(request.filter)[rows]]
            return self._documents(rows[: request.limit].tolist(), embeddings=request.include_embeddings)

    def count(self, filter: str | Filter | None = None) -> int:
        tree = as_filter(filter)
        with self._lock.read():
            return self._size if tree is None else int(np.count_nonzero(self._mask(tree)))

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, best first, with `score` set."""
        return self.similarity_search_batch([request])[0]

    def similarity_search_batch(self, requests: Sequence[SearchRequest | str]) -> list[list[Document]]:
        checked = [SearchRequest(r) if isinstance(r, str) else r for r in requests]
        for request in checked:
            if not isinstance(request, SearchRequest):
                raise InvalidRequestError(f"expected a SearchRequest or a query string, got {request!r}")
        results: list[list[Document]] = [[] for _ in checked]
        active = [i for i, r in enumerate(checked) if r.top_k > 0 and self._size > 0]
        if not active:
            return results
        queries = self._query_vectors([checked[i] for i in active])
        masks: dict[Filter | None, IntArray | None] = {}  # requests that share a filter share its rows
        with self._lock.read():  # queries were embedded outside: writers wait only for the scans
            if self._size and self._saved is not None:
                self._saved.vectors.check_all()
            for position, index in enumerate(active if self._size else ()):  # a delete may have emptied it
                results[index] = self._search(checked[index], queries[position], masks)
        return results

    def _query_vectors(self, requests: list[SearchRequest]) -> npt.NDArray[np.float32]:
        """A row per request: its `query_vector`, its query embedded, or zeros (a lexical request)."""
        queries = np.zeros((len(requests), self._dimensions), np.float32)
        embedded: list[int] = []
        for i, request in enumerate(requests):
            given = given_vector(request, self.embedding)
            if given is not None:
                queries[i] = given
            elif request.embeds_query:
                embedded.append(i)
        for start in range(0, len(embedded), self._batch_size):
            chosen = embedded[start : start + self._batch_size]
            queries[chosen] = embed_queries(self.embedding, [requests[i].query for i in chosen])
        return queries

    def _search(
        self,
        request: SearchRequest,
        query: npt.NDArray[np.float32],
        masks: dict[Filter | None, IntArray | None],
    ) -> list[Document]:
        tree = request.filter
        if tree not in masks:
            rows = None if tree is None else np.flatnonzero(self._mask(tree))
            masks[tree] = None if rows is not None and len(rows) == self._size else rows  # all: no filter
        rows = masks[tree]
        if rows is not None and not len(rows):
            return []
        matrix = self._matrix[: self._size]
        if needs_ranking(request):
            lexical = self._loaded_lexical()  # first: it moves the store's ids onto the index's id map
            assert isinstance(self._rows, RowMap)
            source = NumpyCandidates(matrix, query, request.query, rows, self._rows, lexical)
            found, scores, named = source.ranked(request)
        else:
            threshold = request.similarity_threshold
            kept, exact = top_rows(matrix, query, request.top_k, self._rows.ids_of, threshold, rows)
            found, scores = kept.tolist(), exact.tolist()
            named = [{"cosine": score} for score in scores]
        documents = self._documents(found, scores)
        return [doc.with_scores(names) for doc, names in zip(documents, named, strict=True)]

    def save(self, path: PathLike | None = None, *, overwrite: bool = False) -> Path:
        """Write the store to the folder `path` (default: the constructor's `path`) atomically.

        `StoreError` when a saved file is damaged, or when another writer saved there since this copy
        loaded or last saved (`overwrite=True` replaces it). Searches go on during a save."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise InvalidRequestError("save() needs a path: none was given here or to the constructor")
        key = os.path.abspath(target)
        with self._save_lock, self._lock.read():
            if self._saved is not None:
                self._saved.check_all()
            contents = persist.Contents(
                self.embedding.name,
                self._dimensions,
                self._matrix[: self._size],
                self._records,
                self._rows.all_ids(),
                self._rows_by_id(),
                self._loaded_lexical(),
                self._loaded_columns(),
            )
            expected = self._generations.get(key)
            self._generations[key] = persist.write(target, contents, expected=expected, overwrite=overwrite)
        return target

    @classmethod
    def load(cls, path: PathLike, embedding: EmbeddingModel, *, batch_size: int = 256) -> NumpyVectorStore:
        """Open a store saved in `path`: `StoreNotFoundError` if nothing is saved there,
        `EmbeddingModelMismatchError` if it was saved with another embedding model."""
        persist.read_manifest(Path(path))  # raises StoreNotFoundError naming the folder
        return cls(embedding, batch_size=batch_size, path=path)

    def _open(self, folder: Path) -> None:
        """Map the save in `folder`; one of the first format is read, then written anew if it can be."""
        manifest = persist.read_manifest(folder, self.embedding.name, self._dimensions)
        if manifest["version"] == 1:
            generation, vectors, documents = persist.read_legacy(folder, manifest, self._dimensions)
            self._generations[os.path.abspath(folder)] = generation
            ids, texts = [d.id for d in documents], [d.text for d in documents]
            self._write(ids, texts, [d.metadata for d in documents], np.ascontiguousarray(vectors))
            try:
                self.save(folder)
            except StoreError as exc:
                _log.warning(
                    "the store in %r keeps the first format until it can be saved: %s", str(folder), exc
                )
            return
        self._saved = saved = persist.open_save(folder, self.embedding.name, self._dimensions)
        self._generations[os.path.abspath(folder)] = saved.generation  # what save() expects
        self._matrix, self._records, self._rows = saved.vectors.array(), saved.records, saved.ids
        self._size, self._columns, self._lexical = len(self._matrix), None, None  # loaded at first use
