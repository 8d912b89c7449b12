"""A shared concurrency check for vector stores: writers and readers in threads, then a serial replay.

Each writer thread owns its ids (`w<writer>-<n>`), so any interleaving of the writers' operations leaves
the same final state as running them one writer after another: a store that is safe to share must end
equal to that serial replay. Every document carries its own id and version in its text and metadata, so
a reader can check that each hit's text, metadata and score belong together (a row whose vector is
another document's scores differently from the cosine of its own text). Use: `run_threads(store,
writer_plans(seed, writers, steps), readers)`, then compare `state(store)` with `state(replay(...))`.
"""

from __future__ import annotations

import random
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from rag.documents import Document, MetadataValue, SearchRequest
from rag.filters import Filter, key
from rag.vectorstore import VectorStore
from stores.testing.cases import lexical_reference

__all__ = [
    "WORDS",
    "Operation",
    "Report",
    "apply",
    "check_hit",
    "fast_switching",
    "lexical_scores",
    "replay",
    "run_threads",
    "state",
    "writer_plans",
]

WORDS = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega vector search index".split()  # noqa: SIM905


@dataclass(frozen=True)
class Operation:
    """One write: `add` documents, `delete` ids, or `delete` by a filter."""

    kind: str  # "add", "delete_ids" or "delete_filter"
    documents: tuple[Document, ...] = ()
    ids: tuple[str, ...] = ()
    filter: Filter | None = None


@dataclass
class Report:
    """What the reader threads saw: failures (with tracebacks) and how many reads they made."""

    errors: list[str] = field(default_factory=list)
    reads: int = 0


def _document(writer: int, n: int, version: int, rng: random.Random) -> Document:
    doc_id = f"w{writer}-{n}"
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
    metadata: dict[str, MetadataValue] = {"writer": writer, "n": n, "version": version, "doc": doc_id}
    return Document(doc_id, f"{doc_id} version {version} {words}", metadata)


def writer_plans(seed: int, writers: int = 4, steps: int = 12) -> list[list[Operation]]:
    """Seeded random operations per writer: adds (8 new ids, 4 upserts), deletes by id and by filter."""
    rng, batch = random.Random(seed), 8
    plans: list[list[Operation]] = []
    for writer in range(writers):
        plan: list[Operation] = []
        made = 0
        for version in range(steps):
            roll = rng.random()
            if roll < 0.6 or made == 0:
                fresh = list(range(made, made + batch))
                again = rng.sample(range(made), min(made, batch // 2)) if made else []
                made += batch
                docs = tuple(_document(writer, n, version, rng) for n in [*fresh, *again])
                plan.append(Operation("add", documents=docs))
            elif roll < 0.8:
                ids = tuple(f"w{writer}-{n}" for n in rng.sample(range(made), min(made, 3)))
                plan.append(Operation("delete_ids", ids=(*ids, f"w{writer}-absent")))
            else:
                cut = rng.randrange(made)
                tree = (key("writer") == writer) & (key("n") < cut) & (key("version") < version)
                plan.append(Operation("delete_filter", filter=tree))
        plans.append(plan)
    return plans


def apply(store: VectorStore, operation: Operation) -> None:
    """Run one write on `store`."""
    if operation.kind == "add":
        store.add(list(operation.documents))
    elif operation.kind == "delete_ids":
        store.delete(list(operation.ids))
    else:
        store.delete(filter=operation.filter)


def replay(store: VectorStore, plans: Sequence[Sequence[Operation]]) -> VectorStore:
    """Run every writer's plan on `store`, one writer after another; returns the store."""
    for plan in plans:
        for operation in plan:
            apply(store, operation)
    return store


def state(store: VectorStore) -> list[tuple[str, str, tuple[tuple[str, object], ...], bytes]]:
    """Every document (id order) as comparable tuples: id, text, metadata, exact vector bytes."""
    return [
        (d.id, d.text, tuple(sorted(d.metadata.items())), np.asarray(d.embedding, np.float32).tobytes())
        for d in store.get(include_embeddings=True)
    ]


def lexical_scores(documents: Sequence[Document], query: str, top_k: int) -> list[tuple[str, float]]:
    """BM25 hits of a fresh index over `documents`: what a consistent lexical index answers."""
    return lexical_reference(documents).search(query, top_k)


def check_hit(store: VectorStore, document: Document, query: str | None = None) -> str | None:
    """Why `document` is not one consistent document (text, metadata, and for a vector hit its score)."""
    metadata = document.metadata
    expected = f"{document.id} version {metadata.get('version')} "
    if metadata.get("doc") != document.id or not document.text.startswith(expected):
        return f"mixed-up document: id {document.id!r}, text {document.text!r}, metadata {metadata!r}"
    if query is not None and document.score is not None:
        vectors = store.embedding.embed([query, document.text]).astype(np.float64)
        cosine = float(vectors[0] @ vectors[1])
        if abs(cosine - document.score) > 1e-5:
            return f"hit {document.id!r} scored {document.score} but its text's cosine is {cosine}"
    return None


def _read_once(store: VectorStore, rng: random.Random, writers: int) -> list[str]:
    query = " ".join(rng.sample(WORDS, 2))
    choice = rng.randrange(5)
    if choice == 4:  # two calls may see different states, so each count is only checked on its own
        counts = (store.count(), store.count(key("writer") == 1))
        return [f"count() answered {n!r}" for n in counts if not isinstance(n, int) or n < 0]
    found: list[tuple[Document, str | None]]
    if choice < 2:  # vector hits, unfiltered or filtered: their scores are checked too
        tree = key("writer") == rng.randrange(writers) if choice else None
        found = [(d, query) for d in store.similarity_search(SearchRequest(query, top_k=5, filter=tree))]
    elif choice == 2:
        requests = [SearchRequest(query, top_k=5, mode=mode) for mode in ("lexical", "hybrid")]
        found = [(d, None) for request in requests for d in store.similarity_search(request)]
    else:
        wanted = [f"w{rng.randrange(writers)}-{rng.randrange(40)}" for _ in range(5)]
        found = [(d, None) for d in [*store.get(wanted), *store.get(filter=key("writer") == 0, limit=10)]]
    return [p for d, text in found if (p := check_hit(store, d, text))]


def run_threads(
    store: VectorStore,
    plans: Sequence[Sequence[Operation]],
    readers: int = 2,
    seed: int = 0,
    writer: Callable[[VectorStore, Operation], None] = apply,
) -> Report:
    """One thread per plan writes while `readers` threads search, get and count until the writers end."""
    report = Report()
    done = threading.Event()
    lock = threading.Lock()
    start = threading.Barrier(len(plans) + readers)

    def guarded(body: Callable[[], None]) -> None:
        try:
            start.wait(timeout=60)
            body()
        except BaseException:
            with lock:
                report.errors.append(traceback.format_exc())

    def write(plan: Sequence[Operation]) -> None:
        for operation in plan:
            writer(store, operation)

    def read(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        while not done.is_set():
            problems = _read_once(store, rng, len(plans))
            with lock:
                report.reads += 1
                report.errors.extend(problems)

    writers = [threading.Thread(target=guarded, args=(lambda p=p: write(p),)) for p in plans]
    reading = [threading.Thread(target=guarded, args=(lambda n=n: read(n),)) for n in range(readers)]
    for thread in [*writers, *reading]:
        thread.start()
    for thread in writers:
        thread.join(timeout=240)
    done.set()
    for thread in reading:
        thread.join(timeout=60)
    return report


@contextmanager
def fast_switching() -> Iterator[None]:
    """Make the interpreter switch threads far more often, so races show within a short test."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)
