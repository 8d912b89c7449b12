"""The sidecar beside a Chroma collection (BM25 index and filter columns), kept equal to it across
writes, crashes and processes.

Chroma has no lexical search, so `ChromaVectorStore` keeps a `stores.lexical.LexicalIndex` of the
collection's texts; and Chroma's `where` costs far more than numpy, so it keeps every record's metadata
as `stores.chroma.columns.FilterColumns` too. Both form the *sidecar* (`Sidecar`): one read of the
collection builds both, the store's own `add` and `delete` update both, and they are saved, loaded and
dropped together. Below, "the index" means the whole sidecar. What ties the two together is a
*state token* in the collection's metadata (`STATE_KEY`), a random string that every write through a
store changes twice: once before touching any record, once after the index holds the write.

- Embedded (`path=`): the index is saved in `<path>/rag-lexical/<collection>/<token>/`, on `close()`,
  `flush()` and at interpreter exit. It is loaded only when its token is the collection's current one
  (and both parts hold as many documents as the collection); otherwise (no save yet, a collection
  written before the index existed or by raw chromadb calls, a crash between a write and the save,
  another tokenizer version, a save of a version without filter columns or kept records) it is
  rebuilt from the documents and metadata Chroma stores, without embedding anything, and saved under
  the current token. A crash therefore costs a rebuild, never a wrong answer.
- Server (`url=`) or a given client: the index lives in memory, built from the collection's documents
  when a lexical or hybrid search first needs it. Before each lexical search and each write the store
  compares the token with its own, so writes made by other stores (in this or another process) are
  seen: the index is rebuilt. Writes by raw chromadb calls do not change the token; they are seen on
  the next open.
- Over HTTP (a server URL, or a given chromadb `HttpClient`) and in embedded folders the sidecar
  also keeps every record's text and metadata (`Sidecar.records`, `stores.chroma.kept.KeptRecords`),
  so the final page of a lexical or hybrid search (or of a broad filter the columns decide) needs
  no read from Chroma: a server's every `get`
  costs a round trip and about 2 ms, an embedded one about 1 ms of a 4 ms hybrid search. Memory:
  each record's text in UTF-8 and about 130 bytes more for four metadata keys (the values packed,
  8 bytes of offsets, 70 of id bookkeeping; see `stores.chroma.kept`), so about 1.13 KB for a 1 KB
  chunk. An embedded folder saves them with the rest (`stores.chroma.kept_file`: the texts once
  more, memory-mapped at load, and 13 bytes a record; the metadata is the filter columns'), and a
  load reads none of them (`SavedRecords`); writes since the load are kept in memory over them, so
  a write costs what it writes, and the next save writes the merged form. A folder saved without
  them, or with a damaged save of them, is rebuilt.
- Embedded loads come in two halves (`Sidecar.whole`): a filter (`count`, `get`, a filtered vector
  search) loads the filter columns alone; the BM25 index and the kept records, the *lexical half*,
  stay on disk until a lexical or hybrid search or a write needs them (each `rag query --filter` is
  a new process, which never pays for them). The lexical half is checked when it is loaded as a whole
  load checks it (the token still current, its tokenizer, as many documents as the columns, each
  kept record's checksum); if it fails, the whole sidecar is rebuilt. A folder without the index
  manifest (written last by a save) is not loaded at all, not even its columns.
- In-process private store: nobody else can write, so no token is kept; the index is built lazily.

Only one process should write to an embedded folder at a time (chroma's own rule for
`PersistentClient`); a Chroma server is the way for several.

Threads: the store holds its readers-writer lock around every call, so the index never changes while
a search reads it. Loading, rebuilding and saving the index happen under a mutex shared by every store
object of the process over the same collection (`stores.locking.shared_mutex`): two searches that find
the index stale rebuild it once, and two saves never remove each other's files.

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from stores import ChromaVectorStore
    >>> with ChromaVectorStore(HashingEmbedding(), collection="lexical-demo") as store:
    ...     store.add([Document("a", "reciprocal rank fusion"), Document("b", "vector search")])
    ...     [d.id for d in store.similarity_search(SearchRequest("fusion", mode="lexical"))]
    ['a']
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import RagError, StoreError
from stores.chroma.client import Connection
from stores.chroma.columns import FilterColumns
from stores.chroma.kept import KeptRecords, Page, page_of
from stores.chroma.kept_file import SavedRecords, save_records
from stores.chroma.search import rows_from_get
from stores.chroma.sidecar import Sidecar
from stores.lexical.index import LexicalIndex
from stores.lexical.text import TOKENIZER
from stores.locking import shared_mutex

__all__ = [
    "FOLDER",
    "STATE_KEY",
    "ChromaLexical",
    "CollectionAccess",
    "Sidecar",
    "one_state_read",
    "read_state_again",
]

STATE_KEY = "rag:lexical_state"
FOLDER = "rag-lexical"
_log = logging.getLogger(__name__)


# Collection metadata already read during the current request, by `id` of its `CollectionAccess`.
_STATE_READS: ContextVar[dict[int, dict[str, Any]] | None] = ContextVar("chroma_state_reads", default=None)


@contextmanager
def one_state_read() -> Iterator[None]:
    """Within this block (one search), a collection's metadata, and so its state token, is read from the
    server once: the BM25 index, the filter columns and the vector path check the same state, which
    one answer reflects. Worker threads started by `stores.chroma.client.background` share it."""
    token = _STATE_READS.set({})
    try:
        yield
    finally:
        _STATE_READS.reset(token)


def read_state_again() -> None:
    """Within `one_state_read`: the next check of a collection's state reads it from the server again
    (a search that found the collection changed under it ranks again from fresh reads)."""
    reads = _STATE_READS.get()
    if reads is not None:
        reads.clear()  # in place: worker threads hold the same dict


def _new_token() -> str:
    return uuid.uuid4().hex


@dataclass
class CollectionAccess:
    """What the lexical index needs from a collection (no reference to the store, so finalizers work)."""

    conn: Connection
    collection: Any
    name: str
    batch_size: int
    shared: bool

    def metadata(self) -> dict[str, Any]:
        """The collection's metadata; read afresh when other stores may have changed it (once per
        request inside `one_state_read`)."""
        if not self.shared:
            return dict(self.collection.metadata or {})
        reads = _STATE_READS.get()
        if reads is not None and id(self) in reads:
            return dict(reads[id(self)])
        with self.conn.errors(f"read the collection {self.name!r}"):
            found = dict(self.conn.client.get_collection(self.name).metadata or {})
        if reads is not None:
            reads[id(self)] = found
        return dict(found)

    def update_metadata(self, changes: dict[str, Any]) -> None:
        """Set some metadata keys, keeping the others (chromadb's `modify` replaces the whole dict)."""
        metadata = {**self.metadata(), **changes}
        reads = _STATE_READS.get()
        if reads is not None:
            reads.pop(id(self), None)  # this request changed it: read afresh
        with self.conn.errors(f"update the collection {self.name!r}"):
            self.collection.modify(metadata=metadata)

    def count(self) -> int:
        """How many records the collection holds."""
        with self.conn.errors(f"count the collection {self.name!r}"):
            return int(self.collection.count())

    def records(self) -> Iterator[Page]:
        """Every record, a page at a time (see `Page`)."""
        offset = 0
        while True:
            with self.conn.errors(f"read from the collection {self.name!r}"):
                page = self.collection.get(
                    include=["documents", "metadatas"], limit=self.batch_size, offset=offset
                )
            rows = rows_from_get(page)
            if not rows:
                return
            yield page_of(rows)
            offset += len(rows)


class ChromaLexical:
    """The sidecar of one collection, loaded, rebuilt and saved as the module docstring says.

    Example:
        >>> # store = ChromaVectorStore(...); store._lexical.index().search("fusion", top_k=5)
    """

    def __init__(
        self,
        access: CollectionAccess,
        folder: Path | None,
        key: object = None,
        generation: Callable[[], int] | None = None,
    ) -> None:
        self._access = access
        # Embedded folders: a count of this process's writes, which are the only ones (see `_kept`).
        self._generation = generation
        self._seen = -1  # the generation `_index` holds
        self._root = None if folder is None else folder / FOLDER / access.name
        # Over HTTP and in folders the sidecar keeps the records too (`KeptRecords`, saved with the
        # rest); an in-process private store has no sidecar on disk and its reads are cheap.
        self._keeps = folder is not None or access.conn.remote
        self._index: Sidecar | None = None
        self._token: str | None = None  # the collection state `_index` equals
        self._saved = True  # whether `_root / _token` holds `_index`
        self.rebuilds = 0  # how many times the index was built from the collection's documents
        # Shared with other stores over the same collection: they save into the same folder.
        self._mutex = shared_mutex(None if key is None else ("chroma-lexical", key))

    def _current(self) -> str | None:
        token = self._access.metadata().get(STATE_KEY) if self._access.shared else None
        return token if isinstance(token, str) else None

    def index(self) -> LexicalIndex:
        """The BM25 index, equal to the collection: kept, loaded from disk or rebuilt as needed."""
        return self.sidecar().index

    def columns(self) -> FilterColumns:
        """The filter columns, equal to the collection: kept, loaded from disk or rebuilt as needed (a
        load from disk leaves the BM25 index and the records on disk until `sidecar` needs them)."""
        return self._held(whole=False).columns

    def kept_columns(self) -> FilterColumns | None:
        """The filter columns if they are held and current (never builds; one token read on servers)."""
        if self._index is None:
            return None  # nothing held: spare the token's round trip
        kept = self._kept()
        return None if kept is None else kept.columns

    def records_of(self, columns: FilterColumns) -> KeptRecords | SavedRecords | None:
        """The records kept in the sidecar that holds `columns` (so of the same state), or None when
        that sidecar is no longer held, its lexical half is not loaded, or it keeps no records."""
        sidecar = self._index
        if sidecar is None or sidecar.columns is not columns or not sidecar.whole:
            return None
        return sidecar.records

    def forget(self) -> None:
        """Drop the sidecar held in memory: it is loaded or rebuilt when next needed."""
        self._index = None

    def sidecar(self) -> Sidecar:
        """The whole sidecar, equal to the collection (see `index`)."""
        return self._held(whole=True)

    def _held(self, whole: bool) -> Sidecar:
        """The sidecar, current; with its lexical half loaded when `whole`."""
        current = self._kept()
        if current is not None and (current.whole or not whole):
            return current
        with self._mutex:
            current = self._kept()  # another thread may have loaded or rebuilt it meanwhile
            if current is not None and whole and not current.whole and not self._complete(current):
                current = None  # the lexical half is missing or damaged: everything is rebuilt
            return current if current is not None else self._rebuild(whole)

    def _kept(self) -> Sidecar | None:
        # The state first, then the index: `_rebuild` writes them the other way round, so an index read
        # here is never older than the state read before it.
        token, seen = self._token, self._seen
        index = self._index
        if index is None:
            return None
        if self._generation is not None:
            # Only this process writes an embedded folder: counting its writes spares reading the token.
            return index if seen == self._generation() else None
        if not self._access.shared or self._current() == token:
            return index
        return None

    def _rebuild(self, whole: bool) -> Sidecar:
        token = self._current()
        if self._root is not None and token is None:
            token = _new_token()  # a collection written before the index existed gets a state
            self._access.update_metadata({STATE_KEY: token})
        loaded = self._load(token, whole)
        saved = loaded is not None
        if loaded is None:
            records = KeptRecords() if self._keeps else None
            loaded = Sidecar(FilterColumns(), LexicalIndex(), records)
            for page in self._access.records():
                loaded.add(*page)
            self.rebuilds += 1
        # The index first, then its state: a reader that sees the new index with the old state only
        # rebuilds again, and one that sees the new state also sees the new index (see `_kept`).
        self._index = loaded
        self._token, self._saved, self._seen = token, saved, self._written()
        self._save()  # a rebuilt index is saved at once, so the next open loads it
        return loaded

    def _load(self, token: str | None, whole: bool) -> Sidecar | None:
        """The sidecar saved under `token`, its lexical half too when `whole`, or None (rebuild)."""
        if self._root is None or token is None or not (self._root / token).is_dir():
            return None
        folder = self._root / token
        # The index manifest is written last (`_save`): without it, or of another tokenizer, the save
        # is incomplete or unusable, and the columns are not trusted either.
        try:
            settings = LexicalIndex.saved_settings(folder)
        except StoreError:
            return None  # derived data: a damaged save is rebuilt
        if settings is None or settings.tokenizer != TOKENIZER:
            return None
        # A save made before the columns existed has none: rebuilt, like a damaged one.
        columns = FilterColumns.load(folder)
        # Records added or deleted by raw chromadb calls leave the token alone but change the count.
        if columns is None or len(columns) != self._access.count():
            return None
        sidecar = Sidecar(columns, None, source=folder)
        if whole and not self._complete(sidecar):
            return None
        return sidecar

    def _complete(self, sidecar: Sidecar) -> bool:
        """Load the lexical half of `sidecar` from its folder, checked against its columns as a whole
        load checks it; False when it cannot be used (the caller rebuilds)."""
        folder = sidecar.source
        if folder is None:
            return False
        try:
            settings = LexicalIndex.saved_settings(folder)
            if settings is None or settings.tokenizer != TOKENIZER:
                return False
            index = LexicalIndex.load(folder)
        except StoreError:
            return False  # derived data: a damaged save is rebuilt
        if len(index) != len(sidecar.columns):
            return False
        records = SavedRecords.load(folder, sidecar.columns) if self._keeps else None
        if self._keeps and records is None:
            return False  # a save without records (older version) or a damaged one: rebuilt
        sidecar.complete(index, records)
        return True

    @contextmanager
    def writing(self) -> Iterator[Sidecar | None]:
        """Wrap one write to the collection; yields the sidecar to update, or None (built later).

        The state changes before any record does, so a crash part way leaves every saved index stale,
        and again after the index holds the write, so other stores that read the collection during the
        write see that they must rebuild.
        """
        index = self.sidecar() if self._index is not None or self._root is not None else None
        if self._access.shared:
            self._access.update_metadata({STATE_KEY: _new_token()})
        try:
            yield index
        except BaseException:
            self._index = None  # how much reached Chroma is unknown: rebuild when next needed
            raise
        if self._access.shared:
            token = _new_token()
            self._access.update_metadata({STATE_KEY: token})
            if index is not None:
                self._token, self._saved = token, False
        if index is not None:
            self._seen = self._written()

    def _written(self) -> int:
        return -1 if self._generation is None else self._generation()

    def save(self) -> None:
        """Save the index under the collection's current state (embedded stores; no-op if saved)."""
        with self._mutex:
            self._save()

    def _save(self) -> None:
        if self._root is None or self._index is None or self._saved or self._token is None:
            return
        if self._current() != self._token:
            return  # another store wrote since: that state is not the one this index holds
        folder = self._root / self._token
        # Columns first: a crash between the two leaves a folder without an index manifest, not loaded.
        sidecar = self._index
        sidecar.columns.save(folder)
        if sidecar.records is not None:
            save_records(sidecar.records, sidecar.columns, folder)
        sidecar.index.save(folder)
        self._saved = True
        if sidecar.records is not None:
            # The records just saved become the new base, so the writes held in memory do not pile up
            # over a long process (a reload of the save fails only if the folder was damaged since).
            rebased = SavedRecords.load(folder, sidecar.columns)
            sidecar.records = sidecar.records if rebased is None else rebased
        for entry in self._root.iterdir():
            if entry.name != self._token and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)

    def close(self) -> None:
        """Save before the client closes; at interpreter exit a failure is logged, not raised."""
        try:
            self.save()
        except RagError as exc:
            _log.warning("the lexical index of %r was not saved: %s", self._access.name, exc)
