"""`ChromaVectorStore`: the `VectorStore` protocol on Chroma, embedded, in-process or on a server.

Filters are decided by the filter columns beside the collection (`stores.chroma.columns`) or by
Chroma `where` clauses (`stores.chroma.reading` says which), records use the layout of
`stores.chroma.records`, and requests are answered as `stores.chroma.answering` says: filters exact
always; vector top-k exact on small collections and with `SearchRequest(exact=True)` (through the
exact copy of `stores.chroma.mirror`), from Chroma's HNSW graph otherwise; lexical and hybrid modes
and MMR rank through `stores.ranking` over a BM25 index beside the collection (`stores.chroma.lexical`),
which also holds the filter columns.
chromadb is imported when the first store is constructed.

Two chromadb 1.5.9 behaviours shape the writes: `upsert` merges metadata into the stored record (keys
absent from the new metadata survive), so `add` sets every stale key to None, which removes it; and a
"cosine" collection returns vectors altered in the last bit, so collections use the "ip" space over
unit vectors (the same distance, 1 - cosine) and keep the exact vectors the numpy store scores.

Threads: every call holds a `stores.locking.ReadWriteLock` (searches, `get` and `count` for reading,
`add` and `delete` for writing), shared by every store object of the process over the same folder and
collection, server and collection, or client and collection. Chroma's records, the collection size
memo, the exact copy and the lexical index therefore change together and are read together: without
it a search could see a write half done (the lexical index ahead of the records) and two rebuilds of
the lexical index could delete each other's files. Embedding and encoding happen before the lock.
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

from rag.documents import Document
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter
from rag.store_get import GetMixin, unique_ids
from rag.vectorstore import AsyncStoreMixin
from stores.chroma.answering import Answering
from stores.chroma.client import connect, lock_key, open_collection, purger
from stores.chroma.lexical import ChromaLexical, CollectionAccess
from stores.chroma.mirror import shared_mirror
from stores.chroma.mirror_files import FOLDER as COPY_FOLDER
from stores.chroma.mirror_files import CopySaver
from stores.chroma.nearest import Nearest
from stores.chroma.opaque import shared_opaque
from stores.chroma.reading import Reading
from stores.chroma.records import META, TEXT, encode_record, encode_text
from stores.locking import shared_lock
from stores.numpy.embed import document_vectors, embed_queries

__all__ = ["ChromaVectorStore"]

_OPAQUE_KEYS = "rag:opaque_keys"
# Set on collections created empty by this version: every record flags its keys (no `KEYS` list).
_LAYOUT = "rag:layout"
_CURRENT_LAYOUT = 2
# Set on collections created empty during issue 17: every record holds `order_code` for its strings.
_ORDERED = "rag:ordered"
# Set on collections created empty since: every record holds the two exact `order_codes` instead.
_EXACT_ORDER = "rag:exact_order"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]$")
_EMBED_BATCH = 256


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidRequestError(f"{name} must be an integer >= 1, got {value!r}")


def _check_options(collection: object, batch_size: int | None, ef_search: int, exact_copy: object) -> None:
    if not isinstance(collection, str) or not _NAME.match(collection) or ".." in collection:
        raise InvalidRequestError(
            f"collection name must be 3-512 characters of letters, digits, '.', '_' or '-', starting and "
            f"ending with a letter or digit, got {collection!r}"
        )
    _check_positive("batch_size", batch_size)
    _check_positive("ef_search", ef_search)
    if exact_copy is not None and not isinstance(exact_copy, bool):
        raise InvalidRequestError(f"exact_copy must be True, False or None, got {exact_copy!r}")


class ChromaVectorStore(Reading, GetMixin, Answering, AsyncStoreMixin):
    """Documents in a Chroma collection of unit vectors, searched by cosine, filtered exactly like numpy.

    `path` opens an embedded store in that folder; `url` a Chroma server (`chroma run --path DIR
    --port N`); `client` uses a chromadb client you made (the store does not close it); none of them, a
    private in-process store that lives until `close()`. `ef_search` sets how widely Chroma's HNSW graph
    is searched (fixed when the collection is created: more is slower and finds more true neighbours);
    collections of up to `ef_search` records are searched exactly. Beyond that, vector top-k is
    approximate unless a request says `exact=True` (docs/exactness.md gives measured recall).

    Filters are decided on numpy columns of every record's metadata kept beside the collection
    (`stores.chroma.columns`, in the same sidecar as the BM25 index): `count`, `get` and deletes by
    filter make no `where`, and a filtered search asks Chroma only among the matching ids. Embedded and
    in-process stores always use them; server and client stores when they are current, else `where`.

    `exact_copy` decides when the store keeps an exact copy of the vectors and metadata in memory
    (`stores.chroma.mirror`: about the vectors' size in RAM, one full read to build, dropped by writes),
    which answers exact requests and filters at numpy speed: None (the default) builds it for the first
    `exact=True` request, or (server and client stores) once Chroma's filtering has cost as much as the
    read; True at the first exact or filtered request; False never (exact requests then read every
    vector from Chroma).

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

    kind = "chroma"
    """The store's name in the CLI (`--store chroma`), in a home's records and in traces."""

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
        exact_copy: bool | None = None,
    ) -> None:
        _check_options(collection, batch_size, ef_search, exact_copy)
        self._keep_copy = exact_copy
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
        self._legacy, self._ordered, self._exact_order = self._layout()
        self._nearest = Nearest(
            self._conn,
            self._collection,
            collection,
            ef_search,
            self._batch_size,
            lambda ids, fields: self._fetch(ids, None, include=fields),
            self._matching_ids,
            self._selection,
            verify=not self._local,
        )
        self._nearest.forget = lambda: self._lexical.forget()
        self._mirror = shared_mirror(key)
        # Weak: neither the store nor the copy's memory is kept alive by the lexical index.
        mirror = weakref.ref(self._mirror)
        self._lexical = ChromaLexical(
            self._access,
            Path(path) if path is not None else None,
            key,
            (lambda: getattr(mirror(), "generation", -2)) if path is not None else None,
        )
        # Runs before the client closes (cleanups run last-in first-out), also at interpreter exit.
        self._conn.cleanups.append(self._lexical.close)
        self._copy_root = None if path is None else Path(path) / COPY_FOLDER / collection
        self._saver: CopySaver | None = None
        if self._copy_root is not None:
            self._saver = CopySaver(self._access, self._copy_root, self._mirror)
            self._conn.cleanups.append(self._saver)

    def _layout(self) -> tuple[bool, bool, bool]:
        """(records of older versions possible, single order codes, exact order codes): the record
        layout every record of the collection follows (see `stores.chroma.records`)."""
        marks = self._access.metadata()
        legacy, ordered = marks.get(_LAYOUT) != _CURRENT_LAYOUT, marks.get(_ORDERED) is True
        exact_order = marks.get(_EXACT_ORDER) is True
        if (legacy or not exact_order) and self._access.count() == 0:
            # An empty collection takes the current layout: no record can contradict it.
            self._access.update_metadata({_LAYOUT: _CURRENT_LAYOUT, _ORDERED: False, _EXACT_ORDER: True})
            return False, False, True
        return legacy, ordered, exact_order

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
        """Save the lexical index and the exact copy of an embedded store now (`close()` and interpreter
        exit also do)."""
        with self._lock.read():
            self._lexical.save()
            if self._saver is not None:
                self._saver()

    def close(self) -> None:
        """Save the lexical index, release the client; an in-process store's data is dropped."""
        with self._lock.write():  # calls under way end first
            self._finalizer()
            # The shared copy's memory goes with the last open store over the collection.
            self._mirror, self._saver = shared_mirror(None), None

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
            record, unindexed = encode_record(doc.metadata, exact_order=self._exact_order)
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
            with self._mirror.writing():
                for start in range(0, len(docs), self._batch_size):
                    stop = start + self._batch_size
                    ids = [doc.id for doc in docs[start:stop]]
                    batch = self._replacing(ids, metadatas[start:stop])
                    with self._conn.errors(f"write documents to the collection {self._name!r}"):
                        self._collection.upsert(ids=ids, embeddings=vectors[start:stop], metadatas=batch)
            if index is not None:
                texts = [doc.text for doc in docs]  # the index adds the context (`Sidecar.add`)
                encoded = [record[META] for record in metadatas]  # the columns keep the same JSON
                index.add([doc.id for doc in docs], texts, [doc.metadata for doc in docs], encoded)

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
        unique = None if ids is None else unique_ids(ids)
        tree = as_filter(filter)
        with self._lock.write():
            return self._delete(unique, tree)

    def _delete(self, ids: list[str] | None, tree: Filter | None) -> int:
        if ids is not None:
            targets = [row.id for row in self._fetch(ids, None, include=())]
        else:
            # The filter columns when they decide, else Chroma's `where`; never a copy the write drops.
            targets = self._matching_ids(self._compile(tree), build=False)
        if not targets:
            return 0
        with self._lexical.writing() as index:
            with self._mirror.writing():
                for start in range(0, len(targets), self._batch_size):
                    with self._conn.errors(f"delete documents from the collection {self._name!r}"):
                        self._collection.delete(ids=targets[start : start + self._batch_size])
            if index is not None:
                index.delete(targets)
        self._nearest.forget_size()
        return len(targets)
