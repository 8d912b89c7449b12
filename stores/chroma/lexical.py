"""The BM25 index beside a Chroma collection, kept equal to it across writes, crashes and processes.

Chroma has no lexical search, so `ChromaVectorStore` keeps a `stores.lexical.LexicalIndex` of the
collection's texts, updated by the store's own `add` and `delete`. What ties the two together is a
*state token* in the collection's metadata (`STATE_KEY`), a random string that every write through a
store changes twice: once before touching any record, once after the index holds the write.

- Embedded (`path=`): the index is saved in `<path>/rag-lexical/<collection>/<token>/`, on `close()`,
  `flush()` and at interpreter exit. It is loaded only when its token is the collection's current one
  (and it holds as many documents as the collection); otherwise (no save yet, a collection written
  before the index existed or by raw chromadb calls, a crash between a write and the save, another
  tokenizer version) it is rebuilt from the documents Chroma stores, without embedding anything, and
  saved under the current token. A crash therefore costs a rebuild, never a wrong answer.
- Server (`url=`) or a given client: the index lives in memory, built from the collection's documents
  when a lexical or hybrid search first needs it. Before each lexical search and each write the store
  compares the token with its own, so writes made by other stores (in this or another process) are
  seen: the index is rebuilt. Writes by raw chromadb calls do not change the token; they are seen on
  the next open.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import RagError, StoreError
from rag.text import with_context
from stores.chroma.client import Connection
from stores.chroma.records import decode_metadata, decode_text
from stores.chroma.search import rows_from_get
from stores.lexical.index import LexicalIndex
from stores.lexical.text import TOKENIZER
from stores.locking import shared_mutex

__all__ = ["FOLDER", "STATE_KEY", "ChromaLexical", "CollectionAccess"]

STATE_KEY = "rag:lexical_state"
FOLDER = "rag-lexical"
_log = logging.getLogger(__name__)


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
        """The collection's metadata; read afresh when other stores may have changed it."""
        if not self.shared:
            return dict(self.collection.metadata or {})
        with self.conn.errors(f"read the collection {self.name!r}"):
            return dict(self.conn.client.get_collection(self.name).metadata or {})

    def update_metadata(self, changes: dict[str, Any]) -> None:
        """Set some metadata keys, keeping the others (chromadb's `modify` replaces the whole dict)."""
        metadata = {**self.metadata(), **changes}
        with self.conn.errors(f"update the collection {self.name!r}"):
            self.collection.modify(metadata=metadata)

    def count(self) -> int:
        """How many records the collection holds."""
        with self.conn.errors(f"count the collection {self.name!r}"):
            return int(self.collection.count())

    def texts(self) -> Iterator[tuple[list[str], list[str]]]:
        """Every record's (ids, indexed texts: `rag.text.with_context`), a page at a time."""
        offset = 0
        while True:
            with self.conn.errors(f"read from the collection {self.name!r}"):
                page = self.collection.get(
                    include=["documents", "metadatas"], limit=self.batch_size, offset=offset
                )
            rows = rows_from_get(page)
            if not rows:
                return
            texts = [decode_text(row.document, row.record) for row in rows]
            metadatas = [decode_metadata(row.record) for row in rows]
            yield [row.id for row in rows], list(map(with_context, texts, metadatas))
            offset += len(rows)


class ChromaLexical:
    """The lexical index of one collection, loaded, rebuilt and saved as the module docstring says.

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
        self._index: LexicalIndex | None = None
        self._token: str | None = None  # the collection state `_index` equals
        self._saved = True  # whether `_root / _token` holds `_index`
        self.rebuilds = 0  # how many times the index was built from the collection's documents
        # Shared with other stores over the same collection: they save into the same folder.
        self._mutex = shared_mutex(None if key is None else ("chroma-lexical", key))

    def _current(self) -> str | None:
        token = self._access.metadata().get(STATE_KEY) if self._access.shared else None
        return token if isinstance(token, str) else None

    def index(self) -> LexicalIndex:
        """The index, equal to the collection: kept, loaded from disk or rebuilt as needed."""
        current = self._kept()
        if current is not None:
            return current
        with self._mutex:
            current = self._kept()  # another thread may have rebuilt it meanwhile
            return current if current is not None else self._rebuild()

    def _kept(self) -> LexicalIndex | None:
        index, token, seen = self._index, self._token, self._seen
        if index is None:
            return None
        if self._generation is not None:
            # Only this process writes an embedded folder: counting its writes spares reading the token.
            return index if seen == self._generation() else None
        if not self._access.shared or self._current() == token:
            return index
        return None

    def _rebuild(self) -> LexicalIndex:
        token = self._current()
        if self._root is not None and token is None:
            token = _new_token()  # a collection written before the index existed gets a state
            self._access.update_metadata({STATE_KEY: token})
        loaded = self._load(token)
        saved = loaded is not None
        if loaded is None:
            loaded = LexicalIndex()
            for ids, texts in self._access.texts():
                loaded.add(ids, texts)
            self.rebuilds += 1
        # The token first: a reader that sees the new index with the old token only rebuilds again.
        self._token, self._saved, self._seen = token, saved, self._written()
        self._index = loaded
        self._save()  # a rebuilt index is saved at once, so the next open loads it
        return loaded

    def _load(self, token: str | None) -> LexicalIndex | None:
        if self._root is None or token is None or not (self._root / token).is_dir():
            return None
        folder = self._root / token
        try:
            settings = LexicalIndex.saved_settings(folder)
            if settings is None or settings.tokenizer != TOKENIZER:
                return None
            index = LexicalIndex.load(folder)
        except StoreError:
            return None  # derived data: a damaged save is rebuilt
        # Records added or deleted by raw chromadb calls leave the token alone but change the count.
        return index if len(index) == self._access.count() else None

    @contextmanager
    def writing(self) -> Iterator[LexicalIndex | None]:
        """Wrap one write to the collection; yields the index to update, or None (built later).

        The state changes before any record does, so a crash part way leaves every saved index stale,
        and again after the index holds the write, so other stores that read the collection during the
        write see that they must rebuild.
        """
        index = self.index() if self._index is not None or self._root is not None else None
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
        self._index.save(self._root / self._token)
        self._saved = True
        for entry in self._root.iterdir():
            if entry.name != self._token and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)

    def close(self) -> None:
        """Save before the client closes; at interpreter exit a failure is logged, not raised."""
        try:
            self.save()
        except RagError as exc:
            _log.warning("the lexical index of %r was not saved: %s", self._access.name, exc)
