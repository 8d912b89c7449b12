"""`ChromaVectorStore`: the `VectorStore` port on a Chroma collection, embedded, in-process or on a server.

Chroma holds everything: vectors, texts and metadata (laid out by `stores.chroma.records`). Filters
compile to a `where` that selects a superset and are finished in Python (`stores.chroma.filters`), so
`get`, `count` and eligibility are exact. Vector search is Chroma's HNSW index: approximate
(`CAPABILITIES.exact` is False; `exact=True` is refused). Lexical, hybrid, threshold and MMR requests
rank through `stores.ranking` over `stores.chroma.search.ChromaCandidates`, whose lexical lists come
from the BM25 index kept beside the collection (`stores.chroma.lexical`, the only thing kept outside
Chroma). chromadb is imported when the first store is constructed.
"""

from __future__ import annotations

import re
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
from rag.store_get import GetMixin, GetRequest, unique_ids
from rag.vectorstore import AsyncStoreMixin, Capabilities
from stores.chroma.client import Connection, connect, lock_key, open_collection, purger
from stores.chroma.filters import ChromaFilter, compile_filter
from stores.chroma.lexical import FOLDER, BesideIndex, Texts, remove_old_files
from stores.chroma.records import LEGACY_META, decode, encode
from stores.chroma.search import ChromaCandidates, Found, nearest
from stores.locking import shared_lock
from stores.numpy.embed import document_vectors, embed_queries
from stores.query_vector import given_vector
from stores.ranking import ScoredHit, named_scores, needs_ranking, rank_scored

__all__ = ["ChromaVectorStore"]

_LAYOUT_KEY = "rag:layout"
_LAYOUT = 3
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]$")
_EMBED_BATCH = 256
_READ = ["documents", "metadatas"]
_indexes: dict[tuple[str, ...], BesideIndex] = {}
"""The BM25 index of each collection open in this process, shared by its open stores."""
_indexes_lock = threading.Lock()


def _open_index(key: tuple[str, ...] | None, folder: Path | None) -> BesideIndex:
    with _indexes_lock:
        index = _indexes.get(key) if key is not None else None
        if index is None:
            index = BesideIndex(folder)
            if key is not None:
                _indexes[key] = index
        index.users += 1
        return index


def _release_index(key: tuple[str, ...] | None, index: BesideIndex) -> None:
    """Save the index; the last store of a collection to close forgets it (a later open loads it)."""
    index.save()
    with _indexes_lock:
        index.users -= 1
        if index.users == 0 and key is not None and _indexes.get(key) is index:
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


def _every(
    collection: Any, batch: int, include: list[str]
) -> Iterator[tuple[list[str], list[tuple[Any, Any]]]]:
    """Every record, a page at a time: ids and (document, raw metadata) pairs (None unless included)."""
    for start in range(0, int(collection.count()), batch):
        page = collection.get(limit=batch, offset=start, include=include)
        yield page["ids"], _pairs(page)


def _texts(conn: Connection, collection: Any, batch: int) -> Texts:
    """What the BM25 index is built from: ids, texts and metadata of every record, a page at a time.

    Bound to the collection, not to a store, so an index shared by the stores of one collection
    never keeps a store alive."""

    def pages() -> Iterator[tuple[list[str], list[str], list[Mapping[str, Any]]]]:
        with conn.errors(f"read the collection {collection.name!r}"):
            for ids, pairs in _every(collection, batch, _READ):
                decoded = [decode(*pair) for pair in pairs]
                yield ids, [text for text, _ in decoded], [meta for _, meta in decoded]

    return pages


def _pairs(page: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(document, raw metadata) of each record of a `get` page (None where not included)."""
    none = [None] * len(page["ids"])
    return list(zip(page.get("documents") or none, page.get("metadatas") or none, strict=True))


class ChromaVectorStore(GetMixin, AsyncStoreMixin):
    """Documents in a Chroma collection, searched by cosine on Chroma's (approximate) HNSW index.

    `path` opens an embedded store in that folder; `url` a Chroma server (`chroma run --path DIR
    --port N`); `client` a chromadb client you made (the store does not close it); none of them, a
    private in-process store that lives until `close()`. `ef_search` sets how widely the HNSW graph
    is searched (fixed when the collection is created: more is slower and finds more true
    neighbours). `index_path` is the folder for the BM25 index of a server or client store (default:
    built in memory at first use); an embedded store keeps it in its own folder.

    Filters are exact on every call (a Chroma `where` narrows, Python decides); vector top-k is
    approximate: `SearchRequest(exact=True)` is refused (the exact stores are numpy and pgvector).
    Safe to share between threads (searches side by side, writes one at a time, one lock per
    collection in a process). An embedded folder belongs to one process at a time; for several, run
    a Chroma server.

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
        key = lock_key(collection, path, url, client)
        self._lock = shared_lock(key)
        self._conn = connect(path, url, client)
        self._finalizer = weakref.finalize(self, self._conn.close)
        try:
            with self._conn.errors("read the maximum batch size"):
                limit = int(self._conn.client.get_max_batch_size())
            self._batch_size = min(batch_size or limit, limit)
            self._collection = open_collection(self._conn, collection, embedding, ef_search)
            if path is None and url is None and client is None:
                self._conn.cleanups.append(purger(self._collection, self._batch_size))
            self._home = None if path is None else Path(path)
            folder = Path(index_path) if index_path is not None else self._home
            index = self._index = _open_index(key, None if folder is None else folder / FOLDER / collection)
            index.texts = _texts(self._conn, self._collection, self._batch_size)  # the latest store's
            self._conn.cleanups.append(lambda: _release_index(key, index))  # before the client closes
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
            for ids, pairs in self._raw_pages(_READ):
                old = [
                    (i, pair) for i, pair in zip(ids, pairs, strict=True) if LEGACY_META in (pair[1] or {})
                ]
                if old:
                    records = [self._replacing(pair[1], encode(*decode(*pair))) for _, pair in old]
                    self._collection.update(ids=[i for i, _ in old], metadatas=records)
            self._collection.modify(metadata={**marks, _LAYOUT_KEY: _LAYOUT})
            if self._home is not None:
                remove_old_files(self._home, self._name)

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
            held = set(self._index.current().ids())
            return held == {doc_id for ids, _ in self._raw_pages([]) for doc_id in ids}

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

    # -- reading Chroma -------------------------------------------------------------------------------

    def _raw_pages(self, include: list[str]) -> Iterator[tuple[list[str], list[tuple[Any, Any]]]]:
        return _every(self._collection, self._batch_size, include)

    def _fetch(self, ids: Sequence[str], include: list[str]) -> dict[str, tuple[Any, Any]]:
        """The records of these ids that exist: id -> (raw metadata, embedding or None)."""
        found: dict[str, tuple[Any, Any]] = {}
        with self._conn.errors(f"read the collection {self._name!r}"):
            for start in range(0, len(ids), self._batch_size):
                page = self._collection.get(ids=list(ids[start : start + self._batch_size]), include=include)
                vectors = page["embeddings"] if "embeddings" in include else [None] * len(page["ids"])
                found.update(zip(page["ids"], zip(_pairs(page), vectors, strict=True), strict=True))
        return found

    def _matching(self, condition: ChromaFilter) -> dict[str, tuple[str, dict[str, Any]]]:
        """The records matching a filter: id -> (text, metadata)."""
        if condition.matches_nothing:
            return {}
        with self._conn.errors(f"filter the collection {self._name!r}"):
            page = self._collection.get(where=condition.where, include=_READ)
        matches: dict[str, tuple[str, dict[str, Any]]] = {}
        for doc_id, pair in zip(page["ids"], _pairs(page), strict=True):
            text, metadata = decode(*pair)
            if condition.accepts(metadata):
                matches[doc_id] = (text, metadata)
        return matches

    def _query(
        self, vector: npt.NDArray[np.float32], n: int, where: dict[str, Any] | None
    ) -> tuple[list[str], npt.NDArray[np.float32], list[Any]]:
        with self._conn.errors(f"search the collection {self._name!r}"):
            found = self._collection.query(
                query_embeddings=vector[None, :], n_results=n, where=where, include=[*_READ, "embeddings"]
            )
        pairs = list(zip(found["documents"][0], found["metadatas"][0], strict=True))
        return found["ids"][0], np.asarray(found["embeddings"][0], np.float32), pairs

    def _embeddings(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        rows = self._fetch(ids, ["embeddings"])
        return {doc_id: np.asarray(vector, np.float32) for doc_id, (_, vector) in rows.items()}

    # -- the port -------------------------------------------------------------------------------------

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
            self._index.prepare()
            with self._conn.errors(f"write documents to the collection {self._name!r}"):
                for start in range(0, len(batch), self._batch_size):
                    stop = start + self._batch_size
                    ids = [doc.id for doc in batch[start:stop]]
                    # chromadb's upsert merges metadata: keys the new record lacks are set to None.
                    stale = self._fetch(ids, ["metadatas"])
                    metadatas = [
                        self._replacing(stale[i][0][1], record) if i in stale else record
                        for i, record in zip(ids, records[start:stop], strict=True)
                    ]
                    self._collection.upsert(ids=ids, embeddings=vectors[start:stop], metadatas=metadatas)
            self._index.add(list(docs), [doc.text for doc in batch], [doc.metadata for doc in batch])

    @staticmethod
    def _replacing(old: Mapping[str, Any] | None, record: dict[str, Any]) -> dict[str, Any]:
        return {**{name: None for name in old or {} if name not in record}, **record}

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids or by filter; returns how many documents were removed."""
        if (ids is None) == (filter is None):
            raise InvalidRequestError("delete() takes ids or filter=..., exactly one of them")
        unique = None if ids is None else unique_ids(ids)
        condition = compile_filter(as_filter(filter))
        with self._lock.write():
            targets = list(self._matching(condition) if unique is None else self._fetch(unique, []))
            if not targets:
                return 0
            self._index.prepare()
            with self._conn.errors(f"delete documents from the collection {self._name!r}"):
                for start in range(0, len(targets), self._batch_size):
                    self._collection.delete(ids=targets[start : start + self._batch_size])
            self._index.delete(targets)
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
        embeddings = ["embeddings"] if request.include_embeddings else []
        with self._lock.read():
            if request.ids is not None:
                rows = self._fetch(request.ids, [*_READ, *embeddings])
                chosen = [(i, *decode(*rows[i][0]), rows[i][1]) for i in request.ids if i in rows]
                chosen = [row for row in chosen if condition.accepts(row[2])][: request.limit]
            elif condition.normal is not None or request.limit is None:
                every = self._matching(condition)
                ids = sorted(every)[: request.limit]
                vectors = self._fetch(ids, embeddings) if embeddings else {}
                chosen = [(i, *every[i], vectors[i][1] if i in vectors else None) for i in ids]
            else:
                with self._conn.errors(f"read the collection {self._name!r}"):
                    ids = sorted(self._collection.get(include=[])["ids"])[: request.limit]
                rows = self._fetch(ids, [*_READ, *embeddings])
                chosen = [(i, *decode(*rows[i][0]), rows[i][1]) for i in ids if i in rows]
        return [
            Document(i, text, meta, embedding=None if vector is None else np.asarray(vector, np.float32))
            for i, text, meta, vector in chosen
        ]

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request (see `VectorStore`); vector top-k is approximate.

        Raises:
            InvalidRequestError: `exact=True` (Chroma's index is approximate; use numpy or pgvector).
        """
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
        vector: list[npt.NDArray[np.float32]] = []

        def query_vector() -> npt.NDArray[np.float32]:
            if not vector:
                given = given_vector(request, self._embedding)
                vector.append(
                    given if given is not None else embed_queries(self._embedding, [request.query])[0]
                )
            return vector[0]

        with self._lock.read():
            if not needs_ranking(request):
                hits = nearest(
                    self._query, query_vector(), request.top_k, condition, request.similarity_threshold
                )
                return [
                    Document._trusted(i, text, meta, score).with_scores(named_scores(request, score))
                    for i, score, text, meta in hits
                ]
            source = ChromaCandidates(
                request.query,
                condition,
                query_vector,
                self._query,
                self._embeddings,
                lambda c: set(self._matching(c)),
                self._index.current,
            )
            ranked = rank_scored(request, source)
            return self._documents(ranked, source.found)

    def _documents(self, ranked: list[ScoredHit], found: dict[str, Found]) -> list[Document]:
        missing = [hit.id for hit in ranked if hit.id not in found]
        rows = self._fetch(missing, _READ) if missing else {}
        documents = []
        for hit in ranked:
            if hit.id in found:
                text, metadata = found[hit.id][2], found[hit.id][3]
            elif hit.id in rows:
                text, metadata = decode(*rows[hit.id][0])
            else:
                continue  # in the BM25 index but no longer in the collection
            documents.append(Document._trusted(hit.id, text, metadata, hit.score).with_scores(hit.scores))
        return documents
