"""`ChromaVectorStore`: the `VectorStore` protocol on Chroma, embedded, in-process or on a server.

Filters compile to Chroma `where` clauses (`stores.chroma.filters`), records use the layout of
`stores.chroma.records`. Vector search follows the contract of `stores.chroma.nearest`: filters are
exact always; the top-k is exact on small collections and with `SearchRequest(exact=True)`, and comes
from Chroma's HNSW graph (approximate, one query) otherwise. Lexical and hybrid modes and MMR rank
through `stores.ranking` over a BM25 index kept beside the collection (`stores.chroma.lexical`,
`stores.chroma.hybrid`).
chromadb is imported when the first store is constructed.

Two chromadb 1.5.9 behaviours shape the writes: `upsert` merges metadata into the stored record (keys
absent from the new metadata survive), so `add` sets every stale key to None, which removes it; and a
"cosine" collection returns vectors altered in the last bit, so collections use the "ip" space over
unit vectors (the same distance, 1 - cosine) and keep the exact vectors the numpy store scores.

Threads: every call holds a `stores.locking.ReadWriteLock` (searches, `get` and `count` for reading,
`add` and `delete` for writing), shared by every store object of the process over the same folder and
collection, server and collection, or client and collection. Chroma's records, the collection size
memo, the twin marks and the lexical index therefore change together and are read together: without
it a search could see a write half done (the lexical index ahead of the records, a BM25 norm array
shorter than its postings: `IndexError`) and two rebuilds of the lexical index could delete each
other's files (`FileNotFoundError`). Embedding and encoding happen before the lock is taken.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter
from rag.text import with_context
from rag.vectorstore import AsyncStoreMixin
from stores.chroma.client import connect, lock_key, open_collection, purger
from stores.chroma.filters import ChromaFilter, Where, compile_filter
from stores.chroma.hybrid import ChromaCandidates
from stores.chroma.lexical import ChromaLexical, CollectionAccess
from stores.chroma.nearest import Nearest
from stores.chroma.opaque import shared_opaque
from stores.chroma.records import (
    TEXT,
    decode_metadata,
    decode_text,
    encode_record,
    encode_text,
)
from stores.chroma.search import Row, rows_from_get
from stores.locking import shared_lock
from stores.numpy.embed import document_vectors, embed_queries
from stores.ranking import needs_ranking, rank

__all__ = ["ChromaVectorStore"]

_OPAQUE_KEYS = "rag:opaque_keys"
# Set on collections created empty by this version: every record flags its keys (no `KEYS` list).
_LAYOUT = "rag:layout"
_CURRENT_LAYOUT = 2
# Set on collections created empty since issue 17: every record holds order codes for its string values.
_ORDERED = "rag:ordered"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]$")
_EMBED_BATCH = 256


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidRequestError(f"{name} must be an integer >= 1, got {value!r}")


class ChromaVectorStore(AsyncStoreMixin):
    """Documents in a Chroma collection of unit vectors, searched by cosine, filtered exactly like numpy.

    `path` opens an embedded store in that folder; `url` a Chroma server (`chroma run --path DIR
    --port N`); `client` uses a chromadb client you made (the store does not close it); none of them, a
    private in-process store that lives until `close()`. `ef_search` sets how widely Chroma's HNSW graph
    is searched (fixed when the collection is created: more is slower and finds more true neighbours);
    collections of up to `ef_search` records are searched exactly. Beyond that, vector top-k is
    approximate unless a request says `exact=True` (docs/exactness.md gives measured recall).

    Safe to share between threads: searches run side by side, each write runs alone, and stores over
    the same collection in one process share the lock. Across processes: an embedded folder belongs to
    one process at a time (Chroma's rule for its persistent client); for several, run a Chroma server
    and give its `url` (writes by other processes are then seen through the collection's state token).

    Example:
        >>> from rag import Document, HashingEmbedding, SearchRequest
        >>> store = ChromaVectorStore(HashingEmbedding(), collection="docs")
        >>> store.add([Document("a", "Chroma keeps vectors", {"lang": "en"})])
        >>> [d.id for d in store.similarity_search(SearchRequest("vectors", filter="lang == 'en'"))]
        ['a']
        >>> store.close()
    """

    def __init__(
        self,
        embedding: EmbeddingModel,
        *,
        collection: str = "rag",
        path: str | Path | None = None,
        url: str | None = None,
        batch_size: int | None = None,
        ef_search: int = 400,
        client: Any = None,
    ) -> None:
        if not isinstance(collection, str) or not _NAME.match(collection) or ".." in collection:
            raise InvalidRequestError(
                f"collection name must be 3-512 characters of letters, digits, '.', '_' or '-', starting and "
                f"ending with a letter or digit, got {collection!r}"
            )
        _check_positive("batch_size", batch_size)
        _check_positive("ef_search", ef_search)
        self._embedding = embedding
        self._name = collection
        self._shared = path is not None or url is not None or client is not None
        key = lock_key(collection, path, url, client)
        self._lock = shared_lock(key)
        self._conn = connect(path, url, client)
        self._finalizer = weakref.finalize(self, self._conn.close)
        try:
            with self._conn.errors("read the maximum batch size"):
                limit = int(self._conn.client.get_max_batch_size())
            self._batch_size = min(batch_size or limit, limit)
            self._collection = open_collection(self._conn, collection, embedding, ef_search)
            if not self._shared:
                self._conn.cleanups.append(purger(self._collection, self._batch_size))
        except BaseException:
            self.close()  # a refused store must not keep the folder's files open
            raise
        # Embedded folders belong to this process: its stores share the set and never re-read it.
        self._local = url is None and client is None
        self._opaque = shared_opaque(key if path is not None else None)
        self._opaque.add(set(json.loads((self._collection.metadata or {}).get(_OPAQUE_KEYS, "[]"))))
        self._access = CollectionAccess(
            self._conn, self._collection, collection, self._batch_size, self._shared
        )
        self._lexical = ChromaLexical(self._access, Path(path) if path is not None else None, key)
        self._legacy = self._access.metadata().get(_LAYOUT) != _CURRENT_LAYOUT
        if self._legacy and self._access.count() == 0:
            self._access.update_metadata({_LAYOUT: _CURRENT_LAYOUT})
            self._legacy = False
        self._ordered = self._access.metadata().get(_ORDERED) is True
        if not self._ordered and self._access.count() == 0:
            self._access.update_metadata({_ORDERED: True})
            self._ordered = True
        self._nearest = Nearest(
            self._conn,
            self._collection,
            collection,
            ef_search,
            self._batch_size,
            lambda ids, fields: self._fetch(ids, None, include=fields),
            self._matching_ids,
        )
        # Runs before the client closes (cleanups run last-in first-out), also at interpreter exit.
        self._conn.cleanups.append(self._lexical.close)

    @property
    def embedding(self) -> EmbeddingModel:
        """The model that embeds documents and queries for this store."""
        return self._embedding

    @property
    def batch_size(self) -> int:
        """How many records one Chroma write or read carries (at most the client's maximum)."""
        return self._batch_size

    @property
    def collection_name(self) -> str:
        """The Chroma collection's name."""
        return self._name

    @property
    def chroma_client(self) -> Any:
        """The chromadb client (for raw access, e.g. a second store on the same in-process data)."""
        return self._conn.client

    @property
    def chroma_collection(self) -> Any:
        """The chromadb collection; its records use the layout of `stores.chroma.records`."""
        return self._collection

    def flush(self) -> None:
        """Save the lexical index of an embedded store now (`close()` and interpreter exit also do)."""
        with self._lock.read():
            self._lexical.save()

    def close(self) -> None:
        """Save the lexical index, release the client; an in-process store's data is dropped."""
        with self._lock.write():  # calls under way end first
            self._finalizer()

    def __enter__(self) -> ChromaVectorStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self._conn.location
        return f"ChromaVectorStore(collection={self._name!r}, location={where}, model={self._embedding!r})"

    # -- writing --------------------------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins); a bad batch writes nothing."""
        docs = list({doc.id: doc for doc in self._documents(documents)}.values())
        if not docs:
            return
        vectors = self._vectors(docs)
        metadatas: list[dict[str, Any]] = []
        opaque: set[str] = set()
        for doc in docs:
            record, unindexed = encode_record(doc.metadata)
            record[TEXT] = encode_text(doc.text)  # not in `documents`: see chroma_records
            opaque.update(unindexed)
            metadatas.append(record)
        with self._lock.write():
            self._write(docs, vectors, metadatas, opaque)

    def _write(
        self,
        docs: list[Document],
        vectors: npt.NDArray[np.float32],
        metadatas: list[dict[str, Any]],
        opaque: set[str],
    ) -> None:
        # Recorded before the records exist, so a filter never misses one of them.
        self._remember_opaque(opaque)
        with self._lexical.writing() as index:
            for start in range(0, len(docs), self._batch_size):
                stop = start + self._batch_size
                ids = [doc.id for doc in docs[start:stop]]
                batch = self._replacing(ids, metadatas[start:stop])
                with self._conn.errors(f"write documents to the collection {self._name!r}"):
                    self._collection.upsert(ids=ids, embeddings=vectors[start:stop], metadatas=batch)
            if index is not None:
                index.add([doc.id for doc in docs], [with_context(doc.text, doc.metadata) for doc in docs])

    def _replacing(self, ids: list[str], metadatas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Metadata that replaces the stored records': Chroma's upsert merges keys, None removes one."""
        stale = {row.id: row.record or {} for row in self._fetch(ids, None, include=["metadatas"])}
        return [
            {**{name: None for name in stale.get(doc_id, {}) if name not in record}, **record}
            for doc_id, record in zip(ids, metadatas, strict=True)
        ]

    @staticmethod
    def _documents(documents: Iterable[Document]) -> Iterable[Document]:
        if isinstance(documents, Document | str):
            raise InvalidRequestError(f"add() takes an iterable of Documents, got {documents!r}")
        for doc in documents:
            if not isinstance(doc, Document):
                raise InvalidRequestError(f"add() takes Documents, got {doc!r}")
            yield doc

    def _vectors(self, docs: Sequence[Document]) -> npt.NDArray[np.float32]:
        # The numpy store's own code, so both stores hold bit-identical vectors.
        return document_vectors(docs, self._embedding, _EMBED_BATCH)

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return embed_queries(self._embedding, texts)

    def _remember_opaque(self, keys: set[str]) -> None:
        """Record in the collection the keys holding values Chroma cannot index (see chroma_records)."""
        current = self._current_opaque()
        if keys <= current:
            return
        whole = self._opaque.add(keys)
        self._access.update_metadata({_OPAQUE_KEYS: json.dumps(sorted(whole))})

    def _current_opaque(self) -> frozenset[str]:
        if not self._local:
            # Another process may have written to the same collection since.
            self._opaque.add(set(json.loads(self._access.metadata().get(_OPAQUE_KEYS, "[]"))))
        return self._opaque.current

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes ids or filter=..., exactly one of them")
        unique = None if ids is None else self._unique(ids)
        tree = as_filter(filter)
        with self._lock.write():
            return self._delete(unique, tree)

    def _delete(self, ids: list[str] | None, tree: Filter | None) -> int:
        if ids is not None:
            targets = [row.id for row in self._fetch(ids, None, include=())]
        else:
            targets = self._matching_ids(self._compile(tree))
        if not targets:
            return 0
        with self._lexical.writing() as index:
            for start in range(0, len(targets), self._batch_size):
                with self._conn.errors(f"delete documents from the collection {self._name!r}"):
                    self._collection.delete(ids=targets[start : start + self._batch_size])
            if index is not None:
                index.delete(targets)
        self._nearest.forget_size()
        return len(targets)

    # -- reading --------------------------------------------------------------------------------------

    def _compile(self, filter: str | Filter | None) -> ChromaFilter:
        tree = as_filter(filter)
        if tree is None:
            return compile_filter(None)
        return compile_filter(tree, self._current_opaque(), legacy_keys=self._legacy, ordered=self._ordered)

    @staticmethod
    def _unique(ids: Iterable[str]) -> list[str]:
        if isinstance(ids, str):
            raise InvalidRequestError(f"ids must be a list of ids, not a single string: {ids!r}")
        unique = list(dict.fromkeys(ids))
        for item in unique:
            if not isinstance(item, str):
                raise InvalidRequestError(f"ids must be strings, got {item!r}")
        return unique

    def _fetch(self, ids: list[str], where: Where | None, *, include: Sequence[str]) -> list[Row]:
        rows: list[Row] = []
        for start in range(0, len(ids), self._batch_size):
            with self._conn.errors(f"read from the collection {self._name!r}"):
                result = self._collection.get(
                    ids=ids[start : start + self._batch_size], where=where, include=list(include)
                )
            rows.extend(rows_from_get(result))
        return rows

    def _matching_ids(self, compiled: ChromaFilter) -> list[str]:
        """Every id the filter matches, in no particular order."""
        if compiled.matches_nothing:
            return []
        include = [] if compiled.exact else ["metadatas"]
        with self._conn.errors(f"read from the collection {self._name!r}"):
            rows = rows_from_get(self._collection.get(where=compiled.where, include=include))
        return [row.id for row in rows if compiled.accepts(decode_metadata(row.record))]

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        """Documents by ids (in the order given) or all (ascending id), optionally filtered and limited."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidRequestError(f"limit must be an integer >= 0, got {limit!r}")
        wanted = None if ids is None else self._unique(ids)
        with self._lock.read():
            return self._get(wanted, as_filter(filter), limit, include_embeddings)

    def _get(
        self, ids: list[str] | None, filter: Filter | None, limit: int | None, include_embeddings: bool
    ) -> list[Document]:
        compiled = self._compile(filter)
        include = ["metadatas", "documents", *(["embeddings"] if include_embeddings else [])]
        if compiled.matches_nothing or limit == 0:
            return []
        if ids is not None:
            found = {row.id: row for row in self._fetch(ids, compiled.where, include=include)}
            rows = [
                found[i] for i in ids if i in found and compiled.accepts(decode_metadata(found[i].record))
            ]
            return [self._document(row, include_embeddings) for row in rows[:limit]]
        chosen = sorted(self._matching_ids(compiled))[:limit]
        found = {row.id: row for row in self._fetch(chosen, None, include=include)}
        return [self._document(found[i], include_embeddings) for i in chosen if i in found]

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        tree = as_filter(filter)
        with self._lock.read():
            compiled = self._compile(tree)
            if compiled.where is None and compiled.exact and not compiled.matches_nothing:
                with self._conn.errors(f"count the collection {self._name!r}"):
                    return int(self._collection.count())
            return len(self._matching_ids(compiled))

    @staticmethod
    def _document(row: Row, with_embedding: bool, score: float | None = None) -> Document:
        return Document(
            row.id,
            decode_text(row.document, row.record),
            decode_metadata(row.record),
            score=score,
            embedding=row.embedding if with_embedding else None,
        )

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set (ties by id).

        Exact for small collections and `exact=True`; from Chroma's HNSW graph otherwise (see the class).
        """
        req = request if isinstance(request, SearchRequest) else SearchRequest(request)
        if req.top_k == 0:
            return []
        query = self._embed([req.query])[0]
        with self._lock.read():  # the query was embedded outside: writers wait only for the search
            return self._search(req, query)

    def _search(self, req: SearchRequest, query: npt.NDArray[np.float32]) -> list[Document]:
        compiled = self._compile(req.filter)
        if compiled.matches_nothing:
            return []
        if not needs_ranking(req):
            return [
                self._document(row, False, score) for row, score in self._nearest.rows(query, compiled, req)
            ]
        source = ChromaCandidates(
            req,
            query,
            lambda plain: self._nearest.rows(query, compiled, plain, embeddings=True),
            lambda: None if compiled.where is None and compiled.exact else set(self._matching_ids(compiled)),
            lambda ids, fields: self._fetch(ids, None, include=fields),
            self._lexical.index,
        )
        ranked = rank(req, source)
        rows = source.rows([doc_id for doc_id, _ in ranked])
        return [self._document(row, False, score) for row, (_, score) in zip(rows, ranked, strict=True)]
