"""`ChromaVectorStore`: the `VectorStore` port on a Chroma collection (the package docstring maps it)."""

from __future__ import annotations

import functools
import re
import shutil
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter, as_filter
from rag.retrieval.ranking import ScoredHit, needs_ranking, rank_scored
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import AsyncStoreMixin, Capabilities
from stores.chroma.client import connect, open_collection
from stores.chroma.filters import ChromaFilter, Where, compile_filter
from stores.chroma.lexical import FOLDER, BesideIndex, Texts
from stores.chroma.records import LEGACY_META, decode, encode, needs_document
from stores.chroma.search import ChromaCandidates, Found, cosines, nearest
from stores.numpy.embed import document_vectors, embed_queries
from stores.query_vector import given_vector

__all__ = ["ChromaVectorStore"]

_LAYOUT_KEY = "rag:layout"
_LAYOUT = 3
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]$")
_EMBED_BATCH = 256
_indexes: dict[tuple[str, ...], BesideIndex] = {}
"""The BM25 index (and lock) of each collection open in this process, shared by its open stores."""
_indexes_lock = threading.Lock()
Row = tuple[str, dict[str, Any], Any]
"""A record as read: text, metadata, and the embedding (None unless asked for)."""


def _open_index(key: tuple[str, ...], folder: Path | None) -> BesideIndex:
    with _indexes_lock:
        index = _indexes.setdefault(key, BesideIndex(folder))
        index.users += 1
        return index


def _release_index(key: tuple[str, ...], index: BesideIndex) -> None:
    """Save the index; the last store of a collection to close forgets it (a later open loads it)."""
    index.save()
    with _indexes_lock:
        index.users -= 1
        if not index.users:
            del _indexes[key]


def _check_options(collection: object, batch_size: int | None, ef_search: int) -> None:
    if not isinstance(collection, str) or not _NAME.match(collection) or ".." in collection:
        raise InvalidRequestError(
            f"collection name must be 3-512 characters of letters, digits, '.', '_' or '-', starting and "
            f"ending with a letter or digit, got {collection!r}"
        )
    for name, value in (("batch_size", batch_size), ("ef_search", ef_search)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidRequestError(f"{name} must be an integer >= 1, got {value!r}")


def _decoded(collection: Any, ids: list[str], metadatas: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The text and metadata of each record (Chroma's document read only for the records keeping it)."""
    foreign = [doc_id for doc_id, record in zip(ids, metadatas, strict=True) if needs_document(record)]
    documents: dict[str, Any] = {}
    if foreign:
        page = collection.get(ids=foreign, include=["documents"])
        documents = dict(zip(page["ids"], page["documents"], strict=True))
    return [decode(documents.get(i), record) for i, record in zip(ids, metadatas, strict=True)]


def _pages(collection: Any, batch: int, include: list[str]) -> Iterator[Mapping[str, Any]]:
    """Every record, a `get` page at a time."""
    for start in range(0, int(collection.count()), batch):
        yield collection.get(limit=batch, offset=start, include=include)


def _texts(collection: Any, batch: int, errors: Any) -> Texts:
    """What the BM25 index is built from (bound to the collection: the index never keeps a store alive)."""

    def pages() -> Iterator[tuple[list[str], list[str], list[Mapping[str, Any]]]]:
        with errors(f"read the collection {collection.name!r}"):
            for page in _pages(collection, batch, ["metadatas"]):
                decoded = _decoded(collection, page["ids"], page["metadatas"])
                yield page["ids"], [text for text, _ in decoded], [meta for _, meta in decoded]

    return pages


def _replacing(old: Mapping[str, Any] | None, record: dict[str, Any]) -> dict[str, Any]:
    """`record` with the keys only `old` holds set to None: chromadb's upsert merges metadata."""
    return {**{name: None for name in old or {} if name not in record}, **record}


class ChromaVectorStore(GetMixin, AsyncStoreMixin):
    """Documents in a Chroma collection, searched by cosine on Chroma's (approximate) HNSW index.

    `path` opens an embedded store in that folder; `url` a Chroma server; `client` a chromadb client
    you made (not closed by the store); none of them, a private in-process store that lives until
    `close()`. `ef_search` (fixed when the collection is created) sets how widely HNSW searches.
    `index_path` is the folder for the BM25 index of a server or client store (default: in memory).
    Safe to share between threads; an embedded folder belongs to one process at a time.

    Example:
        >>> from rag import Document, HashingEmbedding, SearchRequest
        >>> store = ChromaVectorStore(HashingEmbedding(), collection="docs")
        >>> store.add([Document("a", "Chroma keeps vectors", {"lang": "en"})])
        >>> [d.id for d in store.similarity_search(SearchRequest("vectors", filter="lang == 'en'"))]
        ['a']
        >>> store.capabilities.exact
        False
        >>> store.close()
    """

    kind = "chroma"
    """The store's name in the CLI (`--store chroma`), in a home's records and in traces."""
    capabilities = Capabilities(exact=False, lexical=False)
    """HNSW search is approximate; BM25 runs on an index beside the collection, not in Chroma."""

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
        index_path: str | Path | None = None,
    ) -> None:
        _check_options(collection, batch_size, ef_search)
        self._embedding = embedding
        self._name = collection
        self._conn = connect(path, url, client)
        self._finalizer = weakref.finalize(self, self._conn.close)
        self._home = None if path is None else Path(path)
        folder = Path(index_path) if index_path is not None else self._home
        key = (*self._conn.key, collection)
        index = self._index = _open_index(key, None if folder is None else folder / FOLDER / collection)
        self._conn.cleanups.append(lambda: _release_index(key, index))
        self._lock = index.lock
        try:
            with self._conn.errors("read the maximum batch size"):
                limit = int(self._conn.client.get_max_batch_size())
            self._batch_size = min(batch_size or limit, limit)
            self._collection = open_collection(self._conn, collection, embedding, ef_search)
            index.texts = _texts(self._collection, self._batch_size, self._conn.errors)  # the latest store's
            self._upgrade()
        except BaseException:
            self.close()  # a refused store must not keep the folder's files open
            raise

    def _upgrade(self) -> None:
        """Rewrite the records of the previous layout (once), and drop the files it kept beside them."""
        marks = dict(self._collection.metadata or {})
        if marks.get(_LAYOUT_KEY) == _LAYOUT:
            return
        with self._lock.write(), self._conn.errors(f"upgrade the collection {self._name!r}"):
            for page in _pages(self._collection, self._batch_size, ["metadatas"]):
                pairs = zip(page["ids"], page["metadatas"], strict=True)
                old = {i: m for i, m in pairs if LEGACY_META in (m or {})}
                if old:
                    rows = _decoded(self._collection, list(old), list(old.values()))
                    records = [_replacing(m, encode(*row)) for m, row in zip(old.values(), rows, strict=True)]
                    self._collection.update(ids=list(old), metadatas=records)
            self._collection.modify(metadata={**marks, _LAYOUT_KEY: _LAYOUT})
            if self._home is not None:  # the folders the previous layout kept beside the collection
                for folder in ("rag-lexical", "rag-copy"):
                    shutil.rmtree(self._home / folder / self._name, ignore_errors=True)

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
        """Save the BM25 index of an embedded store now (`close()` and interpreter exit also do)."""
        with self._lock.read():
            self._index.save()

    def reindex(self) -> None:
        """Rebuild the BM25 index from the collection (after writes made without this toolkit)."""
        with self._lock.write():
            self._index.rebuild()

    def lexical_current(self) -> bool:
        """Whether the BM25 index holds exactly the collection's ids (False: run `reindex()`)."""
        with self._lock.read():
            return set(self._index.current().ids()) == set(self._all_ids())

    def close(self) -> None:
        """Save the BM25 index, release the client; an in-process store's data is dropped."""
        with self._lock.write():  # calls under way end first
            self._finalizer()

    def __enter__(self) -> ChromaVectorStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self._conn.location
        return f"ChromaVectorStore(collection={self._name!r}, location={where}, model={self._embedding!r})"

    def _all_ids(self) -> list[str]:
        with self._conn.errors(f"read the collection {self._name!r}"):
            return list(self._collection.get(include=[])["ids"])

    def _gets(self, ids: Sequence[str], include: list[str]) -> Iterator[Mapping[str, Any]]:
        """Chroma's `get` of these ids (those that exist), a batch at a time."""
        with self._conn.errors(f"read the collection {self._name!r}"):
            for start in range(0, len(ids), self._batch_size):
                yield self._collection.get(ids=list(ids[start : start + self._batch_size]), include=include)

    def _read(self, ids: Sequence[str], embeddings: bool = False) -> dict[str, Row]:
        """The records of these ids that exist."""
        rows: dict[str, Row] = {}
        for page in self._gets(ids, ["metadatas", "embeddings"] if embeddings else ["metadatas"]):
            vectors = np.asarray(page["embeddings"], np.float32) if embeddings else [None] * len(page["ids"])
            decoded = _decoded(self._collection, page["ids"], page["metadatas"])
            rows.update((i, (*row, v)) for i, row, v in zip(page["ids"], decoded, vectors, strict=True))
        return rows

    def _matching(
        self, condition: ChromaFilter, ids: Sequence[str] | None = None
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        """The records matching a filter, among `ids` (None: all): id -> (text, metadata)."""
        if condition.matches_nothing or ids == []:
            return {}
        with self._conn.errors(f"filter the collection {self._name!r}"):
            page = self._collection.get(ids=ids, where=condition.where, include=["metadatas"])
            decoded = _decoded(self._collection, page["ids"], page["metadatas"])
        return {i: row for i, row in zip(page["ids"], decoded, strict=True) if condition.accepts(row[1])}

    def _query(self, vector: npt.NDArray[np.float32], n: int, where: Where | None) -> list[Found]:
        with self._conn.errors(f"search the collection {self._name!r}"):
            found = self._collection.query(
                query_embeddings=vector[None, :], n_results=n, where=where, include=["metadatas", "distances"]
            )
            ids = found["ids"][0]
            decoded = _decoded(self._collection, ids, found["metadatas"][0])
        scores = cosines(found["distances"][0])
        return [(i, score, *row) for i, score, row in zip(ids, scores, decoded, strict=True)]

    def _embeddings(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        return {i: vector for i, (_, _, vector) in self._read(ids, embeddings=True).items()}

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id (the last of repeated ids wins); a bad batch writes nothing."""
        if isinstance(documents, Document | str):
            raise InvalidRequestError(f"add() takes an iterable of Documents, got {documents!r}")
        docs: dict[str, Document] = {}
        for doc in documents:
            if not isinstance(doc, Document):
                raise InvalidRequestError(f"add() takes Documents, got {doc!r}")
            docs[doc.id] = doc
        if not docs:
            return
        batch = list(docs.values())
        vectors = document_vectors(batch, self._embedding, _EMBED_BATCH)
        records = [encode(doc.text, doc.metadata) for doc in batch]
        with self._lock.write():
            index = self._index.prepare()
            with self._conn.errors(f"write documents to the collection {self._name!r}"):
                for start in range(0, len(batch), self._batch_size):
                    stop = start + self._batch_size
                    ids = [doc.id for doc in batch[start:stop]]
                    stale = self._collection.get(ids=ids, include=["metadatas"])
                    old = dict(zip(stale["ids"], stale["metadatas"], strict=True))
                    metadatas = [
                        _replacing(old.get(i), r) for i, r in zip(ids, records[start:stop], strict=True)
                    ]
                    self._collection.upsert(ids=ids, embeddings=vectors[start:stop], metadatas=metadatas)
            if index is not None:
                index.add(list(docs), [doc.text for doc in batch], [doc.metadata for doc in batch])

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes ids or filter=..., exactly one of them")
        unique = None if ids is None else unique_ids(ids)
        condition = compile_filter(as_filter(filter))
        with self._lock.write():
            if unique is None:
                targets = list(self._matching(condition))
            else:
                targets = [i for page in self._gets(unique, []) for i in page["ids"]]
            if not targets:
                return 0
            index = self._index.prepare()
            with self._conn.errors(f"delete documents from the collection {self._name!r}"):
                for start in range(0, len(targets), self._batch_size):
                    self._collection.delete(ids=targets[start : start + self._batch_size])
            if index is not None:
                index.delete(targets)
            return len(targets)

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        condition = compile_filter(as_filter(filter))
        with self._lock.read():
            if condition.normal is None:
                with self._conn.errors(f"count the collection {self._name!r}"):
                    return int(self._collection.count())
            return len(self._matching(condition))

    def _get_documents(self, request: GetRequest) -> list[Document]:
        condition = compile_filter(request.filter)
        embeddings = request.include_embeddings
        with self._lock.read():
            if request.ids is not None:
                rows = self._read(request.ids, embeddings)
                ids = [i for i in request.ids if i in rows and condition.accepts(rows[i][1])][: request.limit]
            elif condition.normal is None and request.limit is not None:
                ids = sorted(self._all_ids())[: request.limit]
                rows = self._read(ids, embeddings)
            else:
                matches = self._matching(condition)
                ids = sorted(matches)[: request.limit]
                rows = self._read(ids, True) if embeddings else {i: (*matches[i], None) for i in ids}
        return [Document(i, *rows[i][:2], embedding=rows[i][2]) for i in ids if i in rows]

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request (see `VectorStore`); vector top-k is approximate,
        and `exact=True` raises `InvalidRequestError` naming the exact stores."""
        if isinstance(request, str):
            request = SearchRequest(request)
        if request.exact:
            raise InvalidRequestError(
                "exact=True: ChromaVectorStore searches Chroma's approximate HNSW index; exact vector "
                "search needs an exact store: numpy (NumpyVectorStore) or pgvector (PgVectorStore)"
            )
        condition = compile_filter(request.filter)
        if request.top_k == 0 or condition.matches_nothing:
            return []

        @functools.cache
        def query_vector() -> npt.NDArray[np.float32]:
            given = given_vector(request, self._embedding)
            return given if given is not None else embed_queries(self._embedding, [request.query])[0]

        with self._lock.read():
            if not needs_ranking(request):
                hits = nearest(
                    self._query, query_vector(), request.top_k, condition, request.similarity_threshold
                )
                return [
                    Document._trusted(i, text, meta, score, scores={"cosine": score})
                    for i, score, text, meta in hits
                ]
            reads = (self._query, self._embeddings, self._matching, self._index.current)
            source = ChromaCandidates(request.query, condition, query_vector, *reads)
            ranked = rank_scored(request, source)
            return self._documents(ranked, source.found)

    def _documents(self, ranked: list[ScoredHit], found: dict[str, Found]) -> list[Document]:
        rows = self._read([hit.id for hit in ranked if hit.id not in found])
        rows.update((i, (text, meta, None)) for i, _, text, meta in found.values())
        return [  # a hit in the BM25 index but no longer in the collection is left out
            Document._trusted(hit.id, *rows[hit.id][:2], hit.score).with_scores(hit.scores)
            for hit in ranked
            if hit.id in rows
        ]
