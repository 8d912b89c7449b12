"""An exact copy of a Chroma collection's vectors and metadata in numpy, for exact search and fast filters.

Chroma answers `exact=True` only by handing back every vector (about 30-40 µs each), and evaluates a
`where` clause in SQLite at a cost that grows with the collection whatever the filter's selectivity.
`ChromaVectorStore` therefore keeps, once a request has needed it, a copy of the collection: the
vectors exactly as Chroma stores them (a float32 matrix), the ids, and the metadata as the numpy
store's columns (`stores.numpy.columns.MetadataColumns`), which evaluate a filter as a boolean mask.
The texts are kept as Chroma holds them and decoded only for the documents a search returns, so a
search answered by the copy makes no call to Chroma at all.

The copy is built by one full read of the collection, and it is dropped by any write made through a
store of this process (every store object over the same collection shares one copy, as it shares the
lock). Stores reached through a server or a client you made also compare the collection's state token
(`stores.chroma.lexical.STATE_KEY`), which every store's write changes, so writes by other processes
are seen too. Writes by raw chromadb calls are not seen until the store is opened again.

Threads: a copy never changes once built; building runs under a mutex, so two searches that find the
copy missing build it once.

Example:
    >>> copy = Mirror()
    >>> snapshot = copy.build(pages, stamp=None)  # doctest: +SKIP
    >>> snapshot.top(query, None, SearchRequest("q", top_k=3))  # doctest: +SKIP
    [(1, 0.93), (0, 0.71), (2, 0.42)]
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rag.documents import Document, MetadataValue, SearchRequest
from rag.filters import Filter
from stores.chroma.records import TEXT, decode_metadata, decode_text
from stores.chroma.search import Row
from stores.numpy.columns import MetadataColumns
from stores.numpy.search import rank_candidates, scan

__all__ = ["READ_SECONDS_PER_RECORD", "Mirror", "Snapshot", "read_snapshot", "shared_mirror", "snapshot_of"]

READ_SECONDS_PER_RECORD = 40e-6
"""About what building the copy costs per record (a full read from Chroma on 2 cores), until measured."""

IntArray = npt.NDArray[np.int64]

_registry: weakref.WeakValueDictionary[Hashable, Mirror] = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()


@dataclass(frozen=True)
class Snapshot:
    """The collection as one build read it: ids, vectors, metadata columns and texts, row by row."""

    ids: npt.NDArray[np.object_]
    matrix: npt.NDArray[np.float32]
    metadatas: npt.NDArray[np.object_]
    columns: MetadataColumns
    texts: list[tuple[str | None, str | None]]
    """Each row's Chroma document and `_rag_text` value, decoded only for the documents returned."""
    stamp: object
    """The state token the collection had when read (None where no token is kept)."""

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, tree: Filter | None) -> IntArray | None:
        """The rows matching `tree` (None: every row, no filter)."""
        if tree is None:
            return None
        return np.flatnonzero(self.columns.mask(tree, len(self), self.metadatas))

    def matching_ids(self, tree: Filter | None) -> list[str]:
        """The ids matching `tree`, in no particular order."""
        rows = self.rows(tree)
        chosen = self.ids if rows is None else self.ids[rows]
        return [str(doc_id) for doc_id in chosen.tolist()]

    def top(
        self, query: npt.NDArray[np.float32], rows: IntArray | None, req: SearchRequest
    ) -> list[tuple[int, float]]:
        """The exact best `req.top_k` (row, cosine) among `rows` passing the threshold, ties by id.

        The numpy store's own procedure: float32 scores pick the candidates, `exact_scores` ranks them.
        """
        if req.top_k == 0 or len(self) == 0 or (rows is not None and len(rows) == 0):
            return []
        [candidates] = scan(self.matrix, query[None, :], req.top_k, req.similarity_threshold, rows)
        return rank_candidates(self.matrix, candidates, query, req.top_k, self.ids, req.similarity_threshold)

    def document(self, row: int, score: float | None) -> Document:
        """The document held in `row`, with `score`."""
        document, text = self.texts[row]
        body = decode_text(document, None if text is None else {TEXT: text})
        return Document(str(self.ids[row]), body, self.metadatas[row], score=score)


def read_snapshot(pages: Iterable[list[Row]], stamp: object) -> Snapshot:
    """A copy of the records in `pages` (with embeddings, metadata and documents)."""
    ids: list[str] = []
    blocks: list[npt.NDArray[np.float32]] = []
    metadatas: list[dict[str, MetadataValue]] = []
    texts: list[tuple[str | None, str | None]] = []
    for page in pages:
        ids.extend(row.id for row in page)
        blocks.append(np.stack([np.asarray(row.embedding, np.float32) for row in page]))
        metadatas.extend(decode_metadata(row.record) for row in page)
        texts.extend((row.document, (row.record or {}).get(TEXT)) for row in page)
    matrix = np.concatenate(blocks) if blocks else np.zeros((0, 0), np.float32)
    return snapshot_of(ids, matrix, metadatas, texts, stamp)


def snapshot_of(
    ids: Sequence[str],
    matrix: npt.NDArray[np.float32],
    metadatas: Sequence[dict[str, MetadataValue]],
    texts: list[tuple[str | None, str | None]],
    stamp: object,
) -> Snapshot:
    """A copy of these rows, its filter columns computed."""
    columns = MetadataColumns()
    columns.write(np.arange(len(ids), dtype=np.int64), metadatas)
    return Snapshot(_objects(ids), np.ascontiguousarray(matrix), _objects(metadatas), columns, texts, stamp)


def _objects(values: Sequence[object]) -> npt.NDArray[np.object_]:
    held = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element by element: numpy would unpack lists and dicts
        held[i] = value
    return held


class Mirror:
    """The copy of one collection shared by this process's stores over it (see the module docstring)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._mutex = threading.Lock()
        self.generation = 0
        """How many writes this process's stores made to the collection (`drop` counts them)."""
        self.builds = 0
        """How many times the copy was read from the collection (for tests and benchmarks)."""
        self.rent = 0.0
        """Seconds Chroma spent evaluating filters since the copy was last built or dropped."""
        self._price: float | None = None  # what building costs: estimated from the size, then measured
        self.token: str | None = None
        """The collection's state token when the copy was made (None: not known)."""
        self.saved = False
        """Whether the copy is the one saved under `token` (`stores.chroma.mirror_files`)."""

    @contextmanager
    def renting(self) -> Iterator[None]:
        """Time a filter evaluated by Chroma (see `due`)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.rent += time.perf_counter() - started

    def due(self, size: Callable[[], int]) -> bool:
        """Whether filters evaluated by Chroma have cost as much as building the copy would.

        Rent or buy: the copy is built once the time spent without it reaches its price, so a process
        that filters a handful of times never pays for it, and one that filters often pays at most
        twice what knowing the future would have cost.
        """
        if self.rent <= (self._price or 0.0):
            return False
        if self._price is None:
            self._price = size() * READ_SECONDS_PER_RECORD
        return self.rent >= self._price

    def current(self, stamp: Callable[[], object]) -> Snapshot | None:
        """The copy if it is built and the collection's state is still `stamp()`, else None."""
        held = self._snapshot
        if held is None or held.stamp != stamp():
            return None
        return held

    def get(self, make: Callable[[object], tuple[Snapshot, bool]], stamp: Callable[[], object]) -> Snapshot:
        """The current copy, made by `make(stamp())` if needed: (the copy, whether Chroma was read)."""
        held = self.current(stamp)
        if held is not None:
            return held
        with self._mutex:
            held = self.current(stamp)  # another thread may have built it meanwhile
            if held is None:
                started = time.perf_counter()
                held, read = make(stamp())
                self._snapshot = held
                if read:
                    self.builds += 1
                    self._price = time.perf_counter() - started
                self.rent = 0.0
            return held

    def held(self) -> Snapshot | None:
        """The copy, current or not (for saving: only writes drop it on an embedded folder)."""
        return self._snapshot

    def drop(self) -> None:
        """Forget the copy (it is built again when next needed)."""
        self._snapshot = None

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Wrap a store's changes to the records: the copy is dropped and the write counted, even if it
        fails part way (how much reached Chroma is then unknown)."""
        try:
            yield
        finally:
            self._snapshot = None
            self.generation += 1
            self.rent = 0.0
            self.saved = False


def shared_mirror(key: Hashable | None) -> Mirror:
    """The `Mirror` of a collection for every store of this process over it (a private one for None)."""
    if key is None:
        return Mirror()
    with _registry_lock:
        found = _registry.get(key)
        if found is None:
            found = Mirror()
            _registry[key] = found
        return found
